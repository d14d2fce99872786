#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include <fmt/format.h>

#include "tune/measure.hpp"

namespace tune {

StopRule StopRule::search() { return {"search", 10, 100000, 0.02, 0.0, 0.1}; }
StopRule StopRule::screen() { return {"screen", 5, 100000, 0.05, 0.0, 0.02}; }
StopRule StopRule::strict() { return {"strict", 10, 1000000, 0.005, 0.5, 2.0}; }

namespace {

double mean_of(const std::vector<double>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

double stddev_of(const std::vector<double>& v, double mean) {
  if (v.size() < 2) return 0;
  double s = 0;
  for (double x : v) s += (x - mean) * (x - mean);
  return std::sqrt(s / static_cast<double>(v.size() - 1));
}

// Quantile of sorted values with linear interpolation (numpy's default).
double quantile(const std::vector<double>& sorted, double q) {
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const auto hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
}

// 1.4826 * MAD / median (1.4826 makes the MAD a consistent estimate of a normal stddev).
double robust_noise_of(std::vector<double> v) {
  if (v.size() < 2) return 0;
  std::sort(v.begin(), v.end());
  const double med = quantile(v, 0.5);
  for (double& x : v) x = std::abs(x - med);
  std::sort(v.begin(), v.end());
  return med > 0 ? 1.4826 * quantile(v, 0.5) / med : 0;
}

}  // namespace

std::string SampleSet::stop_reason(const StopRule& rule, double wall_seconds) const {
  const auto n = static_cast<int>(samples_.size());
  if (n >= rule.max_samples) return fmt::format("max_samples ({})", rule.max_samples);
  // The noise is re-tested as the set grows by about 3 % (every sample up to 64): sorting on
  // every sample would make a strict 3 s measurement quadratic.
  if (n >= rule.min_samples && (n < 64 || n % (n / 32) == 0)) {
    const double noise = robust_noise_of(samples_);
    if (noise <= rule.max_noise) return fmt::format("robust noise {:.2f} % <= {:.2f} %", noise * 100, rule.max_noise * 100);
  }
  const double gpu_s = sum_ * 1e-6;
  if (n >= rule.min_samples && rule.min_gpu_seconds > 0 && gpu_s >= rule.min_gpu_seconds)
    return fmt::format("gpu_time {:.3f} s >= {:.3f} s", gpu_s, rule.min_gpu_seconds);
  if (wall_seconds >= rule.wall_cap_seconds) {
    return n >= rule.min_samples ? fmt::format("wall_cap {:.2f} s", rule.wall_cap_seconds)
                                 : fmt::format("wall_cap {:.2f} s before min_samples", rule.wall_cap_seconds);
  }
  return {};
}

void SampleSet::summarize(TimingRecord& out) const {
  out.samples = static_cast<int>(samples_.size());
  if (samples_.empty()) return;
  std::vector<double> sorted = samples_;
  std::sort(sorted.begin(), sorted.end());
  out.min_us = sorted.front();
  out.max_us = sorted.back();
  out.q1_us = quantile(sorted, 0.25);
  out.median_us = quantile(sorted, 0.5);
  out.q3_us = quantile(sorted, 0.75);
  out.mean_us = mean_of(sorted);
  out.stddev_us = stddev_of(sorted, out.mean_us);
  out.noise = out.mean_us > 0 ? out.stddev_us / out.mean_us : 0;
  out.robust_noise = robust_noise_of(sorted);
  out.gpu_seconds = out.mean_us * static_cast<double>(sorted.size()) * 1e-6;
}

namespace {

// A comparison's record before any element is read: its tolerance, the elements both sides have,
// and each element one side lacks a mismatch.
ParityRecord parity_of_sizes(std::size_t out, std::size_t ref, double atol, double rtol) {
  ParityRecord p;
  p.atol = atol;
  p.rtol = rtol;
  p.elements = static_cast<std::int64_t>(std::min(out, ref));
  if (out != ref) p.mismatches = static_cast<std::int64_t>(std::max(out, ref) - p.elements);
  return p;
}

}  // namespace

ParityRecord compare_output(const std::vector<double>& out, const std::vector<double>& ref, double atol, double rtol) {
  ParityRecord p = parity_of_sizes(out.size(), ref.size(), atol, rtol);
  // The worst element: the furthest beyond its allowance, and of those equally far (every mismatch
  // of an exact comparison is infinitely far), the one of the largest error, so that it is where
  // max_abs_error is; a non-finite value is the worst of all.
  double worst_excess = -1, worst_err = -1;
  for (std::int64_t i = 0; i < p.elements; ++i) {
    const double o = out[static_cast<std::size_t>(i)];
    const double r = ref[static_cast<std::size_t>(i)];
    const double allowed = atol + rtol * std::abs(r);
    double excess, err = INFINITY;
    if (!std::isfinite(o)) {
      ++p.non_finite;
      ++p.mismatches;
      excess = INFINITY;
    } else if (!std::isfinite(r)) {
      // No finite value is within any tolerance of a NaN or Inf (the determinism check of a
      // non-deterministic problem compares against a launch's own output, which may hold one).
      ++p.mismatches;
      excess = INFINITY;
    } else {
      err = std::abs(o - r);
      p.max_abs_error = std::max(p.max_abs_error, err);
      if (r != 0) p.max_rel_error = std::max(p.max_rel_error, err / std::abs(r));
      if (err > allowed) ++p.mismatches;
      // Exact (atol = rtol = 0, integers and bool): no division by a zero allowance.
      excess = allowed > 0 ? err / allowed : (err > 0 ? INFINITY : 0);
    }
    if (excess > worst_excess || (excess == worst_excess && err > worst_err)) {
      worst_excess = excess;
      worst_err = err;
      p.worst_index = i;
      p.worst_value = std::isfinite(o) ? std::optional<double>(o) : std::nullopt;
      p.worst_reference = r;
    }
  }
  p.tolerance_passed = p.mismatches == 0 && p.elements > 0;
  return p;
}

ParityRecord compare_output_int64(std::span<const std::int64_t> out, std::span<const std::int64_t> ref, double atol,
                                  double rtol) {
  ParityRecord p = parity_of_sizes(out.size(), ref.size(), atol, rtol);
  double worst_excess = -1, worst_err = -1;
  for (std::int64_t i = 0; i < p.elements; ++i) {
    const std::int64_t o = out[static_cast<std::size_t>(i)], r = ref[static_cast<std::size_t>(i)];
    // Unsigned: the distance of two int64 values may not fit in an int64, and always fits in 64 bits.
    const std::uint64_t diff = o >= r ? static_cast<std::uint64_t>(o) - static_cast<std::uint64_t>(r)
                                      : static_cast<std::uint64_t>(r) - static_cast<std::uint64_t>(o);
    const double err = static_cast<double>(diff);
    const double ref_abs = std::abs(static_cast<double>(r));
    const double allowed = atol + rtol * ref_abs;
    p.max_abs_error = std::max(p.max_abs_error, err);
    if (r != 0) p.max_rel_error = std::max(p.max_rel_error, err / ref_abs);
    // Exact (atol = rtol = 0): any difference is a mismatch, however far past 2^53 the values are.
    const bool outside = allowed > 0 ? err > allowed : diff != 0;
    if (outside) ++p.mismatches;
    const double excess = allowed > 0 ? err / allowed : (diff != 0 ? INFINITY : 0);
    if (excess > worst_excess || (excess == worst_excess && err > worst_err)) {
      worst_excess = excess;
      worst_err = err;
      p.worst_index = i;
      p.worst_value = static_cast<double>(o);
      p.worst_reference = static_cast<double>(r);
      p.worst_value_exact = o;
      p.worst_reference_exact = r;
    }
  }
  p.tolerance_passed = p.mismatches == 0 && p.elements > 0;
  return p;
}

ParityRecord compare_output(const OutputValues& out, const OutputValues& ref, double atol, double rtol) {
  if (out.dtype() != ref.dtype())
    throw std::logic_error(
        fmt::format("compare_output: a {} output against a {} reference", dtype_name(out.dtype()), dtype_name(ref.dtype())));
  const bool exact = ref.dtype() == DType::kInt64 && !out.ints().empty() && !ref.ints().empty();
  ParityRecord p = exact ? compare_output_int64(out.ints(), ref.ints(), atol, rtol)
                         : compare_output(out.values(), ref.values(), atol, rtol);
  // An integer output's worst element exactly (a NaN or 2.5 made from doubles has no integer).
  const auto integral = [](const OutputValues& v, std::size_t k) {
    return k < v.size() && std::isfinite(v.values()[k]) && v.values()[k] == std::trunc(v.values()[k]);
  };
  if (!is_floating(ref.dtype()) && p.worst_index >= 0 && integral(out, static_cast<std::size_t>(p.worst_index)) &&
      integral(ref, static_cast<std::size_t>(p.worst_index))) {
    const auto k = static_cast<std::size_t>(p.worst_index);
    p.worst_value_exact = out.integer(k);
    p.worst_reference_exact = ref.integer(k);
  }
  return p;
}

std::optional<double> module_error(const std::vector<double>& module, const std::vector<double>& ref) {
  if (module.empty() || module.size() != ref.size()) return std::nullopt;
  double worst = 0;
  for (std::size_t i = 0; i < module.size(); ++i) {
    const double e = std::abs(module[i] - ref[i]);
    if (!std::isfinite(e)) return std::nullopt;  // a module that overflows its dtype sets no bound
    worst = std::max(worst, e);
  }
  return worst;
}

ParityRecord judge_output(const OutputValues& out, const OutputValues& ref, const Tolerance& tol,
                          std::optional<double> module_max_abs_error) {
  ParityRecord p = compare_output(out, ref, tol.atol, tol.rtol);
  p.dtype = std::string(dtype_name(tol.dtype));
  p.rule = tol.rule;
  p.module_k = tol.module_k;
  p.module_atol = tol.module_atol;
  if (is_low_precision(tol.dtype) && module_max_abs_error) {
    p.module_max_abs_error = module_max_abs_error;
    // A NaN/Inf, or a size that differs, fails this rule too (max_abs_error skips non-finite values).
    const bool complete = p.non_finite == 0 && p.elements > 0 && out.size() == ref.size();
    p.module_passed = complete && p.max_abs_error <= tol.module_k * *module_max_abs_error + tol.module_atol;
  }
  return p;
}

}  // namespace tune

namespace tune {

std::string parity_failure(const ParityRecord& p) {
  std::string elementwise = fmt::format("{} of {} outputs outside atol={:g} rtol={:g} ({} not finite); max abs error {:.3g}",
                                        p.mismatches, p.elements, p.atol, p.rtol, p.non_finite, p.max_abs_error);
  if (!p.module_passed || p.rule == "tolerance") return elementwise;
  const std::string module =
      fmt::format("{} max abs error {:.3g} {} {:g} x the module's error in {} ({:.3g}) + {:g}",
                  p.non_finite > 0 ? "not finite;" : "module rule:", p.max_abs_error, *p.module_passed ? "<=" : ">",
                  p.module_k, p.dtype, p.module_max_abs_error.value_or(0), p.module_atol);
  if (p.rule == "module") return module;
  return p.tolerance_passed ? module : (*p.module_passed ? elementwise : elementwise + "; " + module);
}

}  // namespace tune

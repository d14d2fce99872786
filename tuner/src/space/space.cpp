#include "tune/space.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <mutex>
#include <optional>
#include <random>
#include <set>

#include <fmt/format.h>

#include "core/expr.hpp"
#include "core/json_file.hpp"
#include "problem/dtype_vars.hpp"
#include "problem/json_check.hpp"
#include "space/kernel_scan.hpp"
#include "space/sources.hpp"
#include "space/space_impl.hpp"
#include "tune/errors.hpp"
#include "tune/hash.hpp"

namespace tune {

DeviceLimits DeviceLimits::for_arch(int compute_capability) {
  DeviceLimits l;
  l.compute_capability = compute_capability;
  if (compute_capability >= 90) {
    l.max_smem_per_block = 227 * 1024;
    l.sm_count = 132;
  } else if (compute_capability >= 80) {
    l.max_smem_per_block = 163 * 1024;
    l.sm_count = 108;
  } else {
    l.max_smem_per_block = 64 * 1024;
    l.sm_count = 80;
  }
  return l;
}

using space_file::Derived;
using space_file::Json;
using space_file::kMaxScratchElements;
using space_file::Launch;
using space_file::Scratch;
using space_file::ShapeRule;

Space::Space(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Space::Space(Space&&) noexcept = default;
Space& Space::operator=(Space&&) noexcept = default;
Space::~Space() = default;

const std::string& Space::problem() const { return impl_->problem; }
const std::string& Space::template_name() const { return impl_->template_name; }
const std::string& Space::source_name() const { return impl_->source_name; }
const std::vector<Parameter>& Space::parameters() const { return impl_->parameters; }
const std::map<std::string, std::int64_t>& Space::default_dims() const { return impl_->defaults; }
const Config& Space::baseline() const { return impl_->baseline; }
std::shared_ptr<const KernelSources> Space::sources() const { return impl_->sources; }
const std::string& Space::source_hash() const { return impl_->source_hash; }

std::vector<std::pair<std::string, std::vector<std::string>>> Space::launch_args() const {
  std::vector<std::pair<std::string, std::vector<std::string>>> out;
  for (const auto& l : impl_->launches) out.emplace_back(l.kernel, l.args);
  return out;
}

std::vector<std::string> Space::scratch_names() const {
  std::vector<std::string> out;
  for (const auto& b : impl_->scratch) out.push_back(b.name);
  return out;
}

void Space::check_shape(const Shape& shape) const {
  std::lock_guard lock(impl_->mutex);
  const Impl& s = *impl_;
  for (std::size_t d = 0; d < s.dims.size(); ++d) s.table.set(s.dim_slots[d], static_cast<double>(shape.at(s.dims[d])));
  dtype_vars::bind(s.dtype_vars, s.dtype_slots, shape, s.table);
  for (const ShapeRule& r : s.shape_rules) {
    const double v = r.expr.eval();
    if (!(v != 0) || std::isnan(v))
      throw ShapeError(fmt::format("shape {} is not supported: {}", shape.describe(), r.message));
  }
}

std::string describe_count(std::uint64_t count) {
  const auto approx = static_cast<double>(count);
  if (count == std::numeric_limits<std::uint64_t>::max()) return fmt::format("at least {:.2g}", approx);
  return count >= 10'000'000 ? fmt::format("{} ({:.2g})", count, approx) : std::to_string(count);
}

std::uint64_t Space::size() const {
  std::uint64_t product = 1;
  for (const Parameter& p : impl_->parameters) {
    const std::uint64_t n = p.values.size();
    if (n != 0 && product > std::numeric_limits<std::uint64_t>::max() / n) return std::numeric_limits<std::uint64_t>::max();
    product *= n;
  }
  return product;
}

namespace {

// The configurations a pass over the space keeps (those `holding` holds), and the first failing
// constraint of the others (in the order the constraints were first seen failing).
class Tally {
 public:
  Tally(Enumeration& out, const SpaceProgressFn& progress, std::uint64_t of, const Holding& holding = {})
      : out_(out), progress_(progress), of_(of), holding_(holding), rng_(holding.seed ^ 0x9e3779b97f4a7c15ULL) {}
  void add(const Config& c, const std::string& violated) {
    if (violated.empty())
      hold(c);
    else if (rejected_[violated]++ == 0)
      order_.push_back(violated);
    if (progress_ && (++checked_ & 0xffff) == 0) progress_({checked_, of_, static_cast<std::size_t>(out_.valid)});
  }
  ~Tally() {
    for (const auto& w : order_) out_.rejected_by.emplace_back(w, rejected_[w]);
    if (!sampled_) return;
    // The sample's places are in no order: enumeration order again, as an unsampled pass gives.
    out_.configs.insert(out_.configs.end(), pinned_.begin(), pinned_.end());
    std::sort(out_.configs.begin(), out_.configs.end());
  }
  Tally(const Tally&) = delete;
  Tally& operator=(const Tally&) = delete;

 private:
  // Algorithm R: the i-th valid one (from 0) takes one of the `most` places at random with chance
  // most / (i + 1), so every valid one is held with the same chance, whatever the count.
  void hold(const Config& c) {
    const std::uint64_t i = out_.valid++;
    if (out_.configs.size() < holding_.most) {
      out_.configs.push_back(c);
      return;
    }
    sampled_ = true;
    const std::uint64_t j = rng_() % (i + 1);
    if (j >= holding_.most) return left_out(c);
    left_out(out_.configs[j]);
    out_.configs[j] = c;
  }
  void left_out(const Config& c) {
    if (holding_.pin && holding_.pin(c)) pinned_.push_back(c);
  }

  Enumeration& out_;
  const SpaceProgressFn& progress_;
  std::uint64_t of_, checked_ = 0;
  const Holding holding_;  // a copy: the default argument is a temporary
  std::mt19937_64 rng_;
  bool sampled_ = false;
  std::vector<Config> pinned_;
  std::map<std::string, std::size_t> rejected_;
  std::vector<std::string> order_;
};

}  // namespace

Enumeration Space::enumerate(const Shape& shape, const DeviceLimits& limits, std::uint64_t max_configurations,
                             const SpaceProgressFn& progress, const Holding& holding) const {
  const std::uint64_t count = size();
  // size() saturates past 2^64: such a space is never enumerated, whatever the most allowed.
  if (count > max_configurations || count == std::numeric_limits<std::uint64_t>::max())
    throw InputError(
        fmt::format("{}: the space has {} configurations (the product of its parameters' values), more than "
                    "--max-space {} allows to enumerate; restrict the parameters' values, sample it with "
                    "--budget N, or raise --max-space",
                    impl_->source_name, describe_count(count), max_configurations));
  std::lock_guard lock(impl_->mutex);
  const Impl& s = *impl_;
  Enumeration out;
  out.total = count;
  {
    Tally tally(out, progress, count, holding);
    Config c;
    c.choice.assign(s.parameters.size(), 0);
    for (std::uint64_t k = 0; k < count; ++k) {
      tally.add(c, s.first_violation(c, shape, limits));
      // Odometer: the last parameter varies fastest.
      for (std::size_t p = s.parameters.size(); p-- > 0;) {
        if (++c.choice[p] < s.parameters[p].values.size()) break;
        c.choice[p] = 0;
      }
    }
  }
  return out;
}

Enumeration Space::sample(const Shape& shape, const DeviceLimits& limits, std::size_t count, std::uint64_t seed,
                          std::uint64_t max_draws, const SpaceProgressFn& progress) const {
  std::lock_guard lock(impl_->mutex);
  const Impl& s = *impl_;
  Enumeration out;
  out.total = size();
  std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15ULL);  // its own stream, not the inputs'
  // Only the valid draws are remembered (a repeat of one is skipped): memory grows with the sample,
  // not with the draws; a rejected draw is tallied each time it is drawn.
  std::set<Config> kept;
  {
    Tally tally(out, progress, max_draws);
    Config c;
    c.choice.assign(s.parameters.size(), 0);
    while (out.configs.size() < count && out.draws < max_draws) {
      for (std::size_t p = 0; p < s.parameters.size(); ++p) c.choice[p] = rng() % s.parameters[p].values.size();
      ++out.draws;
      if (kept.count(c)) continue;
      const std::string violated = s.first_violation(c, shape, limits);
      if (violated.empty()) kept.insert(c);
      tally.add(c, violated);
    }
  }
  std::sort(out.configs.begin(), out.configs.end());
  return out;
}

std::string Space::violated_constraint(const Config& config, const Shape& shape, const DeviceLimits& limits) const {
  std::lock_guard lock(impl_->mutex);
  return impl_->first_violation(config, shape, limits);
}

Lowered Space::lower(const Config& config, const Shape& shape, const DeviceLimits& limits) const {
  std::lock_guard lock(impl_->mutex);
  const std::string config_name = name(config);
  try {
    return impl_->lower(config, shape, limits, config_name);
  } catch (const ConfigError& e) {
    // A grid, a scratch size or a template argument that one configuration gets wrong: the line says
    // which, or the user has only the expression to go on.
    const std::string what = e.what();
    if (what.find("configuration " + config_name) != std::string::npos) throw;
    throw ConfigError(fmt::format("{} (configuration {} at {})", what, config_name, shape.describe()));
  }
}

Lowered Space::Impl::lower(const Config& config, const Shape& shape, const DeviceLimits& limits,
                           const std::string& config_name) const {
  const Impl& s = *this;
  s.bind(config, shape, limits);
  Lowered out;
  out.template_name = s.sources ? s.sources->main_name : s.template_name;
  out.sources = s.sources;
  // A `when` holds as a constraint does: neither zero nor NaN.
  auto holds = [](const space::Expression& e) {
    const double v = e.eval();
    return v != 0 && !std::isnan(v);
  };
  for (const Launch& l : s.launches) {
    if (!holds(l.when)) continue;
    KernelLaunch k;
    k.kernel = l.kernel;
    std::vector<std::string> values;
    for (const auto& a : l.template_args) values.push_back(s.template_arg(l.kernel, a, shape));
    k.name_expression = fmt::format("{}<{}>", l.kernel, fmt::join(values, ","));
    for (std::size_t i = 0; i < l.grid.size(); ++i)
      k.grid[i] = s.geometry(l.grid[i], fmt::format("launch '{}' grid[{}]", l.kernel, i), i == 0 ? 2147483647 : 65535);
    for (std::size_t i = 0; i < l.block.size(); ++i)
      k.block[i] = s.geometry(l.block[i], fmt::format("launch '{}' block[{}]", l.kernel, i), 1024);
    const std::int64_t smem = s.integer(l.dynamic_smem, "launch '" + l.kernel + "' dynamic_smem");
    if (smem > 2147483647) s.fail(fmt::format("launch '{}' dynamic_smem gives {} bytes", l.kernel, smem));
    k.dynamic_smem = static_cast<unsigned>(smem);
    k.args = l.args;
    out.launches.push_back(std::move(k));
  }
  for (const Scratch& b : s.scratch) {
    if (!holds(b.when)) continue;
    const std::int64_t n = s.integer(b.elements, "scratch '" + b.name + "' elements");
    if (n > kMaxScratchElements)
      s.fail(
          fmt::format("scratch '{}' elements '{}' gives {}, more than 2^40 (4 TiB of float32); constrain the shape or "
                      "the parameters",
                      b.name, b.elements.text(), n));
    out.scratch.push_back({b.name, {n}});
  }
  if (out.launches.empty()) s.fail("no launch applies to configuration " + config_name);
  // A launch that passes a scratch buffer absent from this configuration (its `when` false) would
  // launch with no buffer there.
  for (const KernelLaunch& k : out.launches)
    for (const auto& a : k.args)
      for (const Scratch& b : s.scratch)
        if (b.name == a &&
            std::none_of(out.scratch.begin(), out.scratch.end(), [&](const TensorSpec& t) { return t.name == a; }))
          s.fail(
              fmt::format("launch '{}' takes scratch buffer '{}', whose when '{}' does not hold for configuration {}; "
                          "give the launch a when that implies it, or the scratch buffer one that holds wherever "
                          "the launch runs",
                          k.kernel, a, b.when.text(), config_name));
  return out;
}

SpaceExpressions Space::expressions() const {
  const Impl& s = *impl_;
  SpaceExpressions e;
  e.dims = s.dims;
  for (const Derived& d : s.derived) e.derived.push_back({d.name, d.expr.text()});
  for (const ShapeRule& r : s.shape_rules) e.shape_rules.push_back({r.message, r.expr.text()});
  for (const auto& c : s.constraints) e.constraints.push_back(c.text());
  for (const Launch& l : s.launches) {
    SpaceExpressions::LaunchText t{l.kernel, l.when.text(), l.template_args, {}, {}, l.dynamic_smem.text(), l.args};
    for (const auto& g : l.grid) t.grid.push_back(g.text());
    for (const auto& b : l.block) t.block.push_back(b.text());
    t.grid.resize(3, "1");  // as lower() leaves the dimensions a launch does not name
    t.block.resize(3, "1");
    e.launches.push_back(std::move(t));
  }
  for (const Scratch& b : s.scratch) e.scratch.push_back({b.name, b.elements.text(), b.when.text()});
  e.constants = s.table.constants();
  return e;
}

nlohmann::ordered_json Space::to_json(const Config& config) const {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (std::size_t p = 0; p < impl_->parameters.size(); ++p)
    j[impl_->parameters[p].name] = impl_->parameters[p].values.at(config.choice.at(p));
  return j;
}

Config Space::from_json(const nlohmann::ordered_json& params) const {
  if (!params.is_object()) throw InputError("a configuration must be a JSON object of parameter values");
  Config c;
  for (const Parameter& p : impl_->parameters) {
    if (!params.contains(p.name) && !p.absent) throw InputError("parameter '" + p.name + "' is missing");
    const auto& v = params.contains(p.name) ? params.at(p.name) : *p.absent;
    auto it = std::find(p.values.begin(), p.values.end(), v);
    if (it == p.values.end()) throw InputError(fmt::format("parameter '{}' has no value {}", p.name, v.dump()));
    c.choice.push_back(static_cast<std::size_t>(it - p.values.begin()));
  }
  for (const auto& [k, v] : params.items()) {
    const auto& ps = impl_->parameters;
    if (std::none_of(ps.begin(), ps.end(), [&](const Parameter& p) { return p.name == k; }))
      throw InputError("unknown parameter '" + k + "'");
  }
  return c;
}

Config Space::from_record(const nlohmann::ordered_json& params, const std::string& where, const std::string& variant) const {
  try {
    return from_json(params);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: variant {} does not fit {}: {}; re-tune the shape (its space has changed since)",
                                 where, variant, source_name(), e.what()));
  }
}

std::string Space::name(const Config& config) const {
  std::string out;
  for (std::size_t p = 0; p < impl_->parameters.size(); ++p) {
    const auto& v = impl_->parameters[p].values.at(config.choice.at(p));
    out += fmt::format("{}{}={}", p ? "," : "", impl_->parameters[p].name, v.is_string() ? v.get<std::string>() : v.dump());
  }
  return out;
}

std::int64_t Space::numeric(const Config& config, const std::string& parameter) const {
  for (std::size_t p = 0; p < impl_->parameters.size(); ++p)
    if (impl_->parameters[p].name == parameter) return static_cast<std::int64_t>(impl_->value_of(p, config.choice.at(p)));
  throw InputError("unknown parameter '" + parameter + "'");
}

}  // namespace tune

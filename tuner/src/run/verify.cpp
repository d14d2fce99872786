#include "tune/verify.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>
#include <optional>

#include <fmt/format.h>

#include "tune/compile.hpp"
#include "tune/compile_pool.hpp"
#include "tune/device.hpp"
#include "tune/errors.hpp"
#include "tune/gate.hpp"
#include "tune/io.hpp"
#include "tune/measure.hpp"
#include "tune/space.hpp"
#include "tune/tune.hpp"
#include "tune/worker_protocol.hpp"

namespace tune {
namespace {

// The CPU reference must reproduce the float64 golden output to rounding (~1e-12).
constexpr double kReferenceTolerance = 1e-9;

struct Named {
  std::string why;  // "baseline", "winner", "variant"
  Config config;
};

using Log = std::function<void(const std::string&)>;

// A float output's CPU reference against the golden's float64 values, to rounding.
bool float_reference_matches(const std::string& file, const OutputValues& ref, const OutputValues& golden, const Log& log) {
  double max_abs = 0, max_rel = 0;
  bool ok = ref.size() == golden.size();
  for (std::size_t i = 0; ok && i < ref.size(); ++i) {
    const double r = ref.values()[i], g = golden.values()[i];
    const double err = std::abs(r - g);
    max_abs = std::max(max_abs, err);
    if (g != 0) max_rel = std::max(max_rel, err / std::abs(g));
    if (!(err <= kReferenceTolerance * (1 + std::abs(g)))) ok = false;
  }
  log(fmt::format("{}: CPU reference vs golden: max abs error {:.3g}, max rel error {:.3g}: {}", file, max_abs, max_rel,
                  ok ? "ok" : "MISMATCH"));
  return ok;
}

// An integer or bool output's CPU reference against the golden's integers, exactly: a relative
// allowance would pass an int32 of 2^31 off by 2, an int64 of 2^60 off by a billion. Where an older
// golden holds an int64 output as doubles past 2^53, there the reference must round to its double.
bool integer_reference_matches(const std::string& file, const GoldenCase& g, const OutputValues& ref, const Log& log) {
  const OutputValues& golden = g.output;
  const auto same = [&](std::size_t i) {
    if (g.output_rounded_from && std::abs(golden.values()[i]) > 0x1p53)
      return static_cast<double>(ref.integer(i)) == golden.values()[i];
    return ref.integer(i) == golden.integer(i);
  };
  std::size_t differ = 0;
  std::optional<std::size_t> first;
  for (std::size_t i = 0; ref.size() == golden.size() && i < ref.size(); ++i)
    if (!same(i)) {
      if (!first) first = i;
      ++differ;
    }
  const bool ok = ref.size() == golden.size() && differ == 0;
  const std::string what = ref.size() != golden.size() ? fmt::format("{} values, the golden {}", ref.size(), golden.size())
                           : first ? fmt::format("{} of {} differ (first at element {}: reference {}, golden {})", differ,
                                                 ref.size(), *first, ref.element(*first), golden.element(*first))
                                   : fmt::format("all {} equal", ref.size());
  log(fmt::format("{}: CPU reference vs golden ({}, exact{}): {}: {}", file, dtype_name(golden.dtype()),
                  g.output_rounded_from ? "; to the golden's doubles past 2^53" : "", what, ok ? "ok" : "MISMATCH"));
  if (g.output_rounded_from)
    log(
        fmt::format("{}: the golden holds the int64 output as doubles past 2^53 (from element {}), which there are only "
                    "the nearest integer: checked to that double; remake it with scripts/make_goldens.py to check it "
                    "exactly",
                    file, *g.output_rounded_from));
  return ok;
}

// The CPU reference against the golden's output, by the output's dtype. *reference: the CPU
// reference's output.
bool reference_matches(const std::string& file, const GoldenCase& g, const Problem& problem, const Log& log,
                       OutputValues* reference) {
  *reference = problem.reference(g.shape, g.data, reference_backend_from_env());
  return is_floating(g.output.dtype()) ? float_reference_matches(file, *reference, g.output, log)
                                       : integer_reference_matches(file, g, *reference, log);
}

// The GPU check of one golden file: its variants compiled on the pool (through the compile cache,
// as a tune's), their golden parity on the device, then the gate on those that passed.
class GoldenCheck {
 public:
  // `expected`: what the variants' outputs are held to (the golden's, or the CPU reference's integers
  // where the golden holds an int64 output only to its doubles).
  GoldenCheck(const VerifyOptions& o, const Log& log, const std::string& file, const GoldenCase& g,
              const OutputValues& expected, const DeviceInfo& device, const CompilePool& compiler, bool fake)
      : o_(o), log_(log), file_(file), g_(g), expected_(expected), device_(device), compiler_(compiler), fake_(fake) {}

  // Whether every check passed (a shape the space does not take is skipped, and passes).
  bool run(const std::string& problem_spec, const Problem& problem) {
    // <shape>.json, or the .json.gz a results file of record is kept as.
    const auto plain = o_.results_dir / device_.slug() / g_.problem / (g_.shape.tag() + ".json");
    const auto found = find_result_file(plain);
    const std::filesystem::path results = found.value_or(plain);
    const std::optional<RunRecord> record = found ? std::optional(read_result(results)) : std::nullopt;
    // The space the results were tuned in (their variants are its configurations), else the problem's.
    const Space space = record ? load_run_space(*record) : load_space(problem_spec, std::nullopt);
    try {
      space.check_shape(g_.shape);
    } catch (const ShapeError& e) {
      log_(fmt::format("{}: GPU check skipped: {}", file_, e.what()));
      return true;
    }
    compile(space, to_check(space, record, results));
    if (valid_.empty())
      log_(fmt::format("{}: no variant to check is valid at this shape on {}: only the CPU reference is checked{}", file_,
                       device_.name, o_.all ? "" : " (--all checks every valid configuration)"));
    std::vector<GateVariant> passed = golden_parity(space, problem);
    std::vector<GateVariant> gated = to_gate(std::move(passed));
    if (!gated.empty()) gate(gated, problem_spec);
    return ok_;
  }

  // The variants this golden checked on the device (compiled, valid at its shape).
  [[nodiscard]] std::size_t checked_on_device() const { return valid_.size(); }

 private:
  // The results file's baseline and winner (every variant with --all), else the space's baseline
  // (every valid configuration with --all).
  std::vector<Named> to_check(const Space& space, const std::optional<RunRecord>& record,
                              const std::filesystem::path& results) const {
    std::vector<Named> configs;
    if (record) {
      for (const auto& v : record->variants) {
        const bool is_winner = record->winner && *record->winner == v.name;
        if (!o_.all && !v.baseline && !is_winner) continue;
        const char* role = v.baseline ? "baseline" : is_winner ? "winner" : "variant";
        configs.push_back({role, space.from_record(v.params, results.string(), v.name)});
      }
      log_(fmt::format("{}: checking {} variant(s) of {}", file_, configs.size(), results.string()));
      return configs;
    }
    if (o_.all) {
      if (space.size() > o_.max_space)
        throw InputError(
            fmt::format("{}: tune verify --all: the space of {} has {} configurations, more than "
                        "--max-space {}; tune the shape first (its results file's variants are checked), "
                        "or raise --max-space",
                        file_, space.source_name(), describe_count(space.size()), o_.max_space));
      const Enumeration all = space.enumerate(g_.shape, device_.limits(), o_.max_space);
      if (all.configs.size() > o_.max_variants)
        throw InputError(
            fmt::format("{}: tune verify --all: {} configurations of {} are valid at this shape, more than "
                        "--max-variants {}; tune the shape first (its results file's variants are "
                        "checked), or raise --max-variants",
                        file_, all.configs.size(), space.source_name(), o_.max_variants));
      for (const Config& c : all.configs) configs.push_back({c == space.baseline() ? "baseline" : "variant", c});
    } else {
      configs.push_back({"baseline", space.baseline()});
    }
    log_(fmt::format("{}: no results file {} for this shape: checking {}", file_, results.string(),
                     o_.all ? "every valid configuration" : "the baseline"));
    return configs;
  }

  // Every valid variant compiled at once, on all the pool's threads; the cache serves a second run.
  void compile(const Space& space, std::vector<Named> configs) {
    const DeviceLimits limits = device_.limits();
    std::vector<CompileRequest> requests;
    for (auto& named : configs) {
      const std::string violated = space.violated_constraint(named.config, g_.shape, limits);
      if (!violated.empty()) {
        log_(fmt::format("  {} {}: not valid at this shape ({}), skipped", named.why, space.name(named.config), violated));
        continue;
      }
      lowered_.push_back(space.lower(named.config, g_.shape, limits));
      requests.push_back(compile_request(lowered_.back(), default_options(device_.compute_capability())));
      valid_.push_back(std::move(named));
    }
    const auto t_compile = std::chrono::steady_clock::now();
    std::vector<char> cached;
    compiled_ = compiler_.compile_all(requests, &cached);
    log_(fmt::format("{}: compiled {} variant(s) in {:.1f} s on {} thread(s), {} from the compile cache ({})", file_,
                     requests.size(), std::chrono::duration<double>(std::chrono::steady_clock::now() - t_compile).count(),
                     compiler_.jobs(), std::count(cached.begin(), cached.end(), 1), compiler_.cache_description()));
  }

  // Golden parity of each compiled variant on the device (not run with TUNE_WORKER_FAKE: the gate's
  // fake worker takes it from there). Those that passed, for the gate, with the CUBINs compiled here.
  // The variants whose parity passed that the gate takes: all with --gate-all, else the baseline
  // and the winner (the gate costs minutes a variant; parity, seconds).
  std::vector<GateVariant> to_gate(std::vector<GateVariant> passed) const {
    if (o_.gate_all) return passed;
    std::vector<GateVariant> gated;
    for (std::size_t i = 0; i < passed.size(); ++i)
      if (passed_why_[i] != "variant") gated.push_back(std::move(passed[i]));
    if (gated.size() < passed.size())
      log_(
          fmt::format("{}: the gate runs on the baseline and the winner ({} of {} variants whose parity passed); "
                      "--gate-all gates every one",
                      file_, gated.size(), passed.size()));
    return gated;
  }

  std::vector<GateVariant> golden_parity(const Space& space, const Problem& problem) {
    std::optional<DeviceRunner> runner;
    if (!fake_) runner.emplace(device_, problem, g_.shape, g_.data, g_.data, expected_, 0);
    std::vector<GateVariant> passed;
    for (std::size_t i = 0; i < valid_.size(); ++i) {
      const auto& [why, config] = valid_[i];
      const std::string name = space.name(config);
      if (!compiled_[i].ok) {
        log_(fmt::format("  {} {}: compile failed", why, name));
        ok_ = false;
        continue;
      }
      try {
        ParityRecord p;
        if (runner)
          p = runner->check(compiled_[i], lowered_[i], g_.data, expected_, 0);
        else
          p.elements = static_cast<std::int64_t>(expected_.size());
        const bool pass = parity_passed(p);
        if (!runner)
          log_(fmt::format("  {} {}: golden parity not run (TUNE_WORKER_FAKE)", why, name));
        else
          log_(fmt::format("  {} {}: max abs error {:.3g}, max rel error {:.3g}: {}", why, name, p.max_abs_error,
                           p.max_rel_error,
                           pass ? "ok"
                                : fmt::format("MISMATCH ({} of {} outside atol={:g} rtol={:g})", p.mismatches, p.elements,
                                              p.atol, p.rtol)));
        ok_ = ok_ && pass;
        if (pass) {
          passed.push_back({std::move(compiled_[i]), std::move(lowered_[i]), passed_record(space, name, config)});
          passed_why_.push_back(why);
        }
      } catch (const std::exception& e) {
        log_(fmt::format("  {} {}: failed to run: {}", why, name, e.what()));
        ok_ = false;
      }
    }
    return passed;
  }

  static VariantRecord passed_record(const Space& space, const std::string& name, const Config& config) {
    VariantRecord r;
    r.name = name;
    r.params = space.to_json(config);
    r.status = Status::kPassed;
    return r;
  }

  // The same gate a tune runs on its finalists, at the golden's shape (seeded inputs of --seed 42).
  void gate(std::vector<GateVariant>& passed, const std::string& problem_spec) {
    RunContext::Gate ctx;
    GateSettings settings;
    settings.mode = o_.sanitize;
    settings.log = log_;
    settings.problem = problem_spec;
    settings.shape = g_.shape;
    settings.seed = 42;
    settings.device = o_.device;
    settings.fake = fake_;
    settings.verdict_cache = verdict_cache_for(o_.no_cache, o_.cache_dir);
    gate_variants(passed, settings, ctx);
    for (const auto& v : passed) {
      log_(fmt::format("  gate {} {}: {}", to_string(v.record.gate->verdict), v.record.name, v.record.gate->reason));
      for (const auto& f : v.record.gate->findings)
        for (const auto& line : f.report) log_("      " + line);
      ok_ = ok_ && v.record.gate->verdict == GateVerdict::kSafe;
    }
  }

  const VerifyOptions& o_;
  const Log& log_;
  const std::string& file_;
  const GoldenCase& g_;
  const OutputValues& expected_;
  const DeviceInfo& device_;
  const CompilePool& compiler_;
  bool fake_;
  std::vector<Named> valid_;
  std::vector<std::string> passed_why_;  // golden_parity's passed variants: baseline, winner or variant
  std::vector<Lowered> lowered_;
  std::vector<CompileResult> compiled_;
  bool ok_ = true;
};

}  // namespace

bool run_verify(const VerifyOptions& o) {
  const Log log = [&](const std::string& s) {
    if (o.log) o.log(s);
  };
  bool all_ok = true;
  std::string why_no_device;
  const bool fake = worker_fake_mode();
  const auto device = fake ? std::optional(fake_device(o.arch, o.device)) : query_device(o.device, &why_no_device);
  if (fake) log("TUNE_WORKER_FAKE: a synthetic device; the variants are compiled, their golden parity is not run");
  if (!device) log(fmt::format("no CUDA device ({}): checking the CPU reference only", why_no_device));
  // The variants of every file compile as a tune's do: on the pool, through the compile cache.
  std::optional<CompilePool> compiler;
  if (device) compiler.emplace(compile_cache_for(o.no_cache, o.cache_dir), o.jobs, log);
  // What was checked on the device, for the last line: "all checks passed" over nothing read as a pass.
  std::size_t on_device = 0;
  std::vector<std::string> none_on_device;
  for (const auto& file : o.golden) {
    const GoldenCase g = read_golden(file);
    const std::string problem_spec = golden_problem(file, g.problem);
    const Problem& problem = find_problem(problem_spec);
    OutputValues reference;
    const bool ok = reference_matches(file, g, problem, log, &reference);
    all_ok = all_ok && ok;
    if (!device) continue;
    // A golden that holds an int64 output as doubles past 2^53 says no exact integer there: where
    // the CPU reference rounds to it, the variants are held to the reference's integers.
    const OutputValues& expected = g.output_rounded_from && ok ? reference : g.output;
    GoldenCheck check(o, log, file, g, expected, *device, *compiler, fake);
    const bool gpu_ok = check.run(problem_spec, problem);
    all_ok = all_ok && gpu_ok;
    on_device += check.checked_on_device();
    if (check.checked_on_device() == 0) none_on_device.push_back(std::filesystem::path(file).filename().string());
  }
  const std::string what =
      !device ? fmt::format("{} golden file(s), the CPU reference only", o.golden.size())
              : fmt::format("{} golden file(s), {} variant(s) on {}{}", o.golden.size(), on_device, device->name,
                            none_on_device.empty()
                                ? ""
                                : fmt::format("; none on the device for {}", fmt::join(none_on_device, ", ")));
  log(fmt::format("verify: {} ({})", all_ok ? "all checks passed" : "MISMATCHES found", what));
  return all_ok;
}

}  // namespace tune

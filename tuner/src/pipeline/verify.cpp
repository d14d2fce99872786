#include "tune/verify.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
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
#include "tune/worker.hpp"

namespace tune {
namespace {

// The CPU reference must reproduce the float64 golden output to rounding (PROBLEMS.md: ~1e-12).
constexpr double kReferenceTolerance = 1e-9;

struct Named {
  std::string why;  // "baseline", "winner", "variant"
  Config config;
};

}  // namespace

bool run_verify(const VerifyOptions& o) {
  auto log = [&](const std::string& s) {
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
  for (const auto& file : o.golden) {
    const GoldenCase g = read_golden(file);
    const std::string problem_spec = golden_problem(file, g.problem);
    const Problem& problem = find_problem(problem_spec);
    const std::vector<double> ref = problem.reference(g.shape, g.data, reference_backend_from_env());
    double max_abs = 0, max_rel = 0;
    bool ok = ref.size() == g.output.size();
    for (std::size_t i = 0; ok && i < ref.size(); ++i) {
      const double err = std::abs(ref[i] - g.output[i]);
      max_abs = std::max(max_abs, err);
      if (g.output[i] != 0) max_rel = std::max(max_rel, err / std::abs(g.output[i]));
      if (!(err <= kReferenceTolerance * (1 + std::abs(g.output[i])))) ok = false;
    }
    log(fmt::format("{}: CPU reference vs golden: max abs error {:.3g}, max rel error {:.3g}: {}", file, max_abs, max_rel,
                    ok ? "ok" : "MISMATCH"));
    all_ok = all_ok && ok;
    if (!device) continue;

    // <shape>.json, or the .json.gz a results file of record is kept as.
    const auto plain = o.results_dir / device->slug() / g.problem / (g.shape.tag() + ".json");
    const auto found = find_result_file(plain);
    const std::filesystem::path results = found.value_or(plain);
    const std::optional<RunRecord> run = found ? std::optional(read_result(results)) : std::nullopt;
    // The space the results were tuned in (their variants are its configurations), else the problem's.
    const Space space = run ? load_run_space(*run) : load_space(problem_spec, std::nullopt);
    try {
      space.check_shape(g.shape);
    } catch (const ShapeError& e) {
      log(fmt::format("{}: GPU check skipped: {}", file, e.what()));
      continue;
    }
    const DeviceLimits limits = device->limits();
    std::vector<Named> configs;
    if (run) {
      for (const auto& v : run->variants) {
        const bool is_winner = run->winner && *run->winner == v.name;
        if (o.all || v.baseline || is_winner)
          configs.push_back({v.baseline ? "baseline" : is_winner ? "winner" : "variant", space.from_json(v.params)});
      }
      log(fmt::format("{}: checking {} variant(s) of {}", file, configs.size(), results.string()));
    } else {
      if (o.all) {
        if (space.size() > o.max_space)
          throw InputError(fmt::format("{}: tune verify --all: the space of {} has {} configurations, more than "
                                       "--max-space {}; tune the shape first (its results file's variants are checked), "
                                       "or raise --max-space", file, space.source_name(), describe_count(space.size()),
                                       o.max_space));
        const Enumeration all = space.enumerate(g.shape, limits, o.max_space);
        if (all.configs.size() > o.max_variants)
          throw InputError(fmt::format("{}: tune verify --all: {} configurations of {} are valid at this shape, more than "
                                       "--max-variants {}; tune the shape first (its results file's variants are "
                                       "checked), or raise --max-variants",
                                       file, all.configs.size(), space.source_name(), o.max_variants));
        for (const Config& c : all.configs) configs.push_back({c == space.baseline() ? "baseline" : "variant", c});
      } else {
        configs.push_back({"baseline", space.baseline()});
      }
      log(fmt::format("{}: no results file {} for this shape: checking {}", file, results.string(),
                      o.all ? "every valid configuration" : "the baseline"));
    }
    // Every valid variant compiled at once, on all the pool's threads; the cache serves a second run.
    std::vector<Named> valid;
    std::vector<Lowered> lowered;
    std::vector<CompileRequest> requests;
    for (auto& named : configs) {
      const std::string violated = space.violated_constraint(named.config, g.shape, limits);
      if (!violated.empty()) {
        log(fmt::format("  {} {}: not valid at this shape ({}), skipped", named.why, space.name(named.config), violated));
        continue;
      }
      lowered.push_back(space.lower(named.config, g.shape));
      requests.push_back(compile_request(lowered.back(), default_options(device->compute_capability())));
      valid.push_back(std::move(named));
    }
    const auto t_compile = std::chrono::steady_clock::now();
    std::vector<char> cached;
    std::vector<CompileResult> compiled = compiler->compile_all(requests, &cached);
    log(fmt::format("{}: compiled {} variant(s) in {:.1f} s on {} thread(s), {} from the compile cache ({})", file,
                    requests.size(), std::chrono::duration<double>(std::chrono::steady_clock::now() - t_compile).count(),
                    compiler->jobs(), std::count(cached.begin(), cached.end(), 1), compiler->cache_description()));
    std::optional<DeviceRunner> runner;
    if (!fake) runner.emplace(*device, problem, g.shape, g.data, g.data, g.output, 0);
    auto golden_parity = [&](std::size_t i) {
      if (runner) return runner->check(compiled[i], lowered[i], g.data, g.output, 0);
      ParityRecord p;  // TUNE_WORKER_FAKE: nothing ran; the gate's fake worker takes it from here
      p.elements = static_cast<std::int64_t>(g.output.size());
      return p;
    };
    std::vector<GateVariant> passed;  // gated below, with the CUBINs compiled here
    for (std::size_t i = 0; i < valid.size(); ++i) {
      const auto& [why, config] = valid[i];
      const std::string name = space.name(config);
      if (!compiled[i].ok) {
        log(fmt::format("  {} {}: compile failed", why, name));
        all_ok = false;
        continue;
      }
      try {
        const ParityRecord p = golden_parity(i);
        const bool pass = parity_passed(p);
        if (!runner)
          log(fmt::format("  {} {}: golden parity not run (TUNE_WORKER_FAKE)", why, name));
        else
          log(fmt::format("  {} {}: max abs error {:.3g}, max rel error {:.3g}: {}", why, name, p.max_abs_error,
                          p.max_rel_error,
                          pass ? "ok"
                               : fmt::format("MISMATCH ({} of {} outside atol={:g} rtol={:g})", p.mismatches, p.elements,
                                             p.atol, p.rtol)));
        all_ok = all_ok && pass;
        if (pass) {
          VariantRecord r;
          r.name = name;
          r.params = space.to_json(config);
          r.status = Status::kPassed;
          passed.push_back({std::move(compiled[i]), std::move(lowered[i]), std::move(r)});
        }
      } catch (const std::exception& e) {
        log(fmt::format("  {} {}: failed to run: {}", why, name, e.what()));
        all_ok = false;
      }
    }
    if (passed.empty()) continue;
    // The same gate a tune runs on its finalists, at the golden's shape (seeded inputs of --seed 42).
    RunContext::Gate ctx;
    GateSettings settings;
    settings.mode = sanitize_mode_from_string(o.sanitize);
    settings.log = log;
    settings.problem = problem_spec;
    settings.shape = g.shape;
    settings.seed = 42;
    settings.device = o.device;
    settings.fake = fake;
    gate_variants(passed, settings, ctx);
    for (const auto& v : passed) {
      log(fmt::format("  gate {} {}: {}", v.record.gate->verdict, v.record.name, v.record.gate->reason));
      for (const auto& f : v.record.gate->findings)
        for (const auto& line : f.report) log("      " + line);
      all_ok = all_ok && v.record.gate->verdict == "safe";
    }
  }
  log(all_ok ? "verify: all checks passed" : "verify: MISMATCHES found");
  return all_ok;
}

}  // namespace tune

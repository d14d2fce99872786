#include "tune/verify.hpp"

#include <cmath>

#include <fmt/format.h>

#include "tune/compile.hpp"
#include "tune/device.hpp"
#include "tune/errors.hpp"
#include "tune/gate.hpp"
#include "tune/io.hpp"
#include "tune/measure.hpp"
#include "tune/space.hpp"
#include "tune/tune.hpp"

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
  const auto device = query_device(o.device, &why_no_device);
  if (!device) log(fmt::format("no CUDA device ({}): checking the CPU reference only", why_no_device));
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

    const Space space = load_space(problem_spec, std::nullopt);
    try {
      space.check_shape(g.shape);
    } catch (const ShapeError& e) {
      log(fmt::format("{}: GPU check skipped: {}", file, e.what()));
      continue;
    }
    const DeviceLimits limits = device->limits();
    std::vector<Named> configs;
    const auto results = o.results_dir / device->slug() / g.problem / (g.shape.tag() + ".json");
    if (std::filesystem::exists(results)) {
      const RunRecord run = read_result(results);
      for (const auto& v : run.variants) {
        const bool is_winner = run.winner && *run.winner == v.name;
        if (o.all || v.baseline || is_winner)
          configs.push_back({v.baseline ? "baseline" : is_winner ? "winner" : "variant", space.from_json(v.params)});
      }
      log(fmt::format("{}: checking {} variant(s) of {}", file, configs.size(), results.string()));
    } else {
      if (o.all) {
        for (const Config& c : space.enumerate(g.shape, limits).configs)
          configs.push_back({c == space.baseline() ? "baseline" : "variant", c});
      } else {
        configs.push_back({"baseline", space.baseline()});
      }
      log(fmt::format("{}: no results file {} for this shape: checking {}", file, results.string(),
                      o.all ? "every valid configuration" : "the baseline"));
    }
    DeviceRunner runner(*device, problem, g.shape, g.data, g.data, g.output, 0);
    std::vector<GateVariant> passed;  // gated below, with the CUBINs compiled here
    for (const auto& [why, config] : configs) {
      const std::string name = space.name(config);
      const std::string violated = space.violated_constraint(config, g.shape, limits);
      if (!violated.empty()) {
        log(fmt::format("  {} {}: not valid at this shape ({}), skipped", why, name, violated));
        continue;
      }
      Lowered lowered = space.lower(config, g.shape);
      CompileResult compiled = compile(compile_request(lowered, default_options(device->compute_capability())));
      if (!compiled.ok) {
        log(fmt::format("  {} {}: compile failed", why, name));
        all_ok = false;
        continue;
      }
      try {
        const ParityRecord p = runner.check(compiled, lowered, g.data, g.output, 0);
        const bool pass = parity_passed(p);
        log(fmt::format("  {} {}: max abs error {:.3g}, max rel error {:.3g}: {}", why, name, p.max_abs_error,
                        p.max_rel_error, pass ? "ok" : fmt::format("MISMATCH ({} of {} outside atol={:g} rtol={:g})", p.mismatches,
                                                                   p.elements, p.atol, p.rtol)));
        all_ok = all_ok && pass;
        if (pass) {
          VariantRecord r;
          r.name = name;
          r.params = space.to_json(config);
          r.status = Status::kPassed;
          passed.push_back({std::move(compiled), std::move(lowered), std::move(r)});
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

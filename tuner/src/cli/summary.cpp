#include "cli/summary.hpp"

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tune/gate.hpp"
#include "tune/torch_compare.hpp"

namespace tune::cli {

namespace {

// "3 passed, 1 crashed": how many variants of the run ended in each status, by status name.
std::string status_counts(const RunRecord& run) {
  std::map<std::string, int> by_status;
  for (const auto& v : run.variants) ++by_status[to_string(v.status)];
  std::string counts;
  for (const auto& [k, n] : by_status) counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", n, k);
  return counts;
}

// The fastest variants (at most 8), one line each, under a header line; nothing when none was timed.
void print_ranking(const RunRecord& run) {
  std::vector<const VariantRecord*> ranked;
  for (const auto& v : run.variants)
    if (has_usable_timing(v)) ranked.push_back(&v);
  if (ranked.empty()) return;
  std::sort(ranked.begin(), ranked.end(), [](auto a, auto b) { return a->timing->median_us < b->timing->median_us; });
  fmt::print("\n{:>4}  {:>11}  {:>9}  {:>9}  {:>7}  {:>5}  {}\n", "rank", "cold med us", "batch us", "graph us", "noise",
             "regs", "config");
  for (std::size_t i = 0; i < std::min<std::size_t>(ranked.size(), 8); ++i) {
    const auto* v = ranked[i];
    fmt::print("{:>4}  {:>11.3f}  {:>9.3f}  {:>9.3f}  {:>6.2f}%  {:>5}  {}{}{}\n", i + 1, v->timing->median_us,
               v->timing->batch_mean_us, v->timing->graph_mean_us, v->timing->noise * 100, v->max_registers(), v->name,
               v->baseline ? "  [baseline]" : "",
               !run.winner || *run.winner != v->name ? ""
               : run.context.interrupted             ? "  [best so far]"
                                                     : "  [winner]");
  }
}

void print_baseline(const RunRecord& run) {
  const auto* b = run.baseline ? run.find(*run.baseline) : nullptr;
  if (b && b->timing) fmt::print("\nbaseline {:.3f} us\n", b->timing->median_us);
}

// The last line: the winner against the baseline config (cold median against cold median) and
// against the problem's PyTorch module (graph against graph, issue 36); an interrupted run's best so far.
void print_winner(const RunRecord& run) {
  const VariantRecord* w = run.winner ? run.find(*run.winner) : nullptr;
  if (!w || !w->timing) return;
  std::vector<std::string> over;
  if (run.speedup) over.push_back(fmt::format("{:.2f}x over the baseline config", *run.speedup));
  if (const std::string torch = torch_comparison(run); !torch.empty()) over.push_back(torch);
  // An interrupted run names the best it had timed: neither gated nor re-measured, no winner.
  if (run.context.interrupted)
    fmt::print("best so far {:.3f} us (interrupted: not gated; the same command with --resume finishes the run){}{}\n",
               w->timing->median_us, over.empty() ? "" : ": ", fmt::join(over, ", "));
  else
    fmt::print("winner {:.3f} us{}{}\n", w->timing->median_us, over.empty() ? "" : ": ", fmt::join(over, ", "));
}

// "; block=32 failed to compile: kernel.cuh(38): error: ...": the first error NVRTC gave a variant
// that failed to compile, so a run whose every variant failed says why without its JSON; else why
// the first that would not launch did not; "" when none failed either way.
std::string first_compile_error(const RunRecord& run) {
  for (const auto& v : run.variants) {
    if (v.status != Status::kCompileFailed) continue;
    std::string error = v.reason;
    std::istringstream log(v.log_excerpt);
    for (std::string line; std::getline(log, line);)
      if (line.find("error") != std::string::npos) {
        error = line;
        break;
      }
    // NVRTC looks the kernels up by their launches' name expressions; an error there is no line of
    // the template's but the launch's template_args, which name no instance of the template.
    if (error.rfind("__nv_name_map", 0) == 0)
      error +=
          " (the launch's template_args do not instantiate the kernel template: check their number and order "
          "against its template parameters)";
    return fmt::format("; {} failed to compile: {}", v.name, error);
  }
  // A compile-only run's variants that compiled but that the target's card would not launch.
  for (const auto& v : run.variants)
    if (v.status == Status::kLaunchFailed) return fmt::format("; {} would not launch: {}", v.name, v.reason);
  return "";
}

// A compile-only run in which no variant compiled: one line with the first error; true then.
bool say_nothing_compiled(const RunRecord& run, const std::filesystem::path& json_path) {
  const bool compiled =
      std::any_of(run.variants.begin(), run.variants.end(), [](const auto& v) { return v.status == Status::kCompiled; });
  if (compiled || run.variants.empty() || run.context.interrupted) return false;
  fmt::print(stderr, "tune: no variant of {} {} compiled ({}); every variant's log is in {}{}{}\n", run.problem,
             run.shape.describe(), status_counts(run), json_path.string(),
             run.context.shard ? " (a --shard part exits 0: tune merge exits 5 if the merged run compiled none)" : "",
             first_compile_error(run));
  return true;
}

}  // namespace

int interrupted_exit_code() {
  const int signal = interrupt_signal();
  return 128 + (signal > 0 ? signal : SIGINT);
}

bool say_nothing_passed(const RunRecord& run, const std::filesystem::path& json_path) {
  if (!run.timed) return say_nothing_compiled(run, json_path);
  if (run.winner || run.context.interrupted) return false;
  if (const auto& gate = run.context.gate; !gate.could_not_run.empty() && !gate.allow_unchecked) {
    fmt::print(stderr,
               "tune: the gate of {} {} could not run ({}): {} finalist(s) unchecked, no winner, no header; the "
               "results are in {}; fix that, or pass --allow-unchecked to let an unchecked finalist win\n",
               run.problem, run.shape.describe(), gate.could_not_run, gate.unchecked, json_path.string());
    return true;
  }
  fmt::print(stderr, "tune: no variant of {} {} passed ({}): no winner, no header; the results are in {}{}{}\n", run.problem,
             run.shape.describe(), status_counts(run), json_path.string(),
             run.context.shard ? " (a --shard part exits 0: tune merge exits 5 if the merged run has no winner)" : "",
             first_compile_error(run));
  return true;
}

int print_summary(const TuneOutcome& out) {
  const auto& run = out.run;
  fmt::print("\n{} {}: {} variants ({})\n", run.problem, run.shape.describe(), run.variants.size(), status_counts(run));
  fmt::print("compile wall {:.1f} s, measure {:.1f} s, total {:.1f} s\n", run.wall.compile_wall_s, run.wall.measure_wall_s,
             run.wall.total_wall_s);
  print_ranking(run);
  print_baseline(run);
  if (const std::string gate = describe_gate(run.context.gate); !gate.empty()) fmt::print("{}\n", gate);
  fmt::print("results: {}\n", out.json_path.string());
  if (out.header_path) fmt::print("header:  {}\n", out.header_path->string());
  if (run.winner && run.find(*run.winner)->gate && run.find(*run.winner)->gate->verdict == GateVerdict::kUnchecked)
    fmt::print("winner {} is unchecked: {} (--allow-unchecked)\n", *run.winner, run.context.gate.could_not_run);
  print_winner(run);
  std::fflush(stdout);
  const bool no_winner = say_nothing_passed(run, out.json_path);
  if (out.gate_exit_code != 0) return out.gate_exit_code;
  return no_winner && !run.context.shard ? kNothingPassed : 0;
}

}  // namespace tune::cli

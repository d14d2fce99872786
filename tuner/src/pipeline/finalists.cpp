// The finalists of a run (PassRun): the second round, the strict re-measure and the gate's rounds.
#include "pipeline/pass_run.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <ranges>
#include <climits>
#include <cmath>
#include <csignal>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <ctime>
#include <cstring>
#include <deque>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <mutex>
#include <random>
#include <thread>

#include <cuda.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tune/compile.hpp"
#include "tune/compile_cache.hpp"
#include "tune/compile_pool.hpp"
#include "tune/device.hpp"
#include "tune/errors.hpp"
#include "tune/gate.hpp"
#include "tune/io.hpp"
#include "tune/journal.hpp"
#include "tune/measure.hpp"
#include "tune/problem.hpp"
#include "tune/space.hpp"
#include "tune/sweep.hpp"
#include "tune/worker_client.hpp"
#include "tune/worker_protocol.hpp"
#include "core/enum_names.hpp"
#include "pipeline/progress_log.hpp"
#include "pipeline/run_common.hpp"
#include "pipeline/search/strategy.hpp"
#include "tune/run_plan.hpp"

namespace tune {

// The `keep` fastest passed variants (by their current cold median), fastest first.
std::vector<std::size_t> PassRun::fastest_passed(std::size_t keep) const {
  std::vector<std::size_t> passed_idx;
  std::vector<double> medians;
  for (std::size_t i = 0; i < n; ++i)
    if (run.variants[i].status == Status::kPassed) {
      passed_idx.push_back(i);
      medians.push_back(run.variants[i].timing->median_us);
    }
  std::vector<std::size_t> out;
  for (const std::size_t k : best_by_median(medians, keep)) out.push_back(passed_idx[k]);
  return out;
}

// A stop asked for after the search's last variant: the passes that follow are not started.
bool PassRun::stop_asked() {
  if (stop_requested() && !ctx.interrupted) {
    ctx.interrupted = true;
    log(fmt::format("interrupted by {}: every variant searched; the passes that follow are left to --resume",
                    signal_name(interrupt_signal())));
  }
  return ctx.interrupted;
}

// The strategy's second round (successive halving): the best of the screened variants timed again
// with the search profile (parity already passed); the others keep their screening time.
void PassRun::second_round() {
  const auto screened = static_cast<std::size_t>(
      std::count_if(run.variants.begin(), run.variants.end(), [](const auto& v) { return v.status == Status::kPassed; }));
  const std::size_t keep = strategy.second_round(screened);
  if (keep == 0 || stop_asked()) return;
  const auto promoted = fastest_passed(keep);
  log(fmt::format("{}: timing the best {} of {} screened variants again with the search profile", strategy.name(),
                  promoted.size(), screened));
  DeviceRunner::Options second_round;
  second_round.check_parity = false;
  const auto t = Clock::now();
  for (const std::size_t i : promoted) {
    if (halved[i]) continue;  // done before the run was resumed
    ensure_compiled(i);
    gpu->evaluate(feed.results[i], lowered[i], run.variants[i], second_round);
    journal->append(kSecondRoundStage, run.variants[i]);
  }
  tally.measure_busy += seconds_since(t);
  save();
}

std::vector<WorkerItem> PassRun::items_of(const std::vector<std::size_t>& idx) {
  std::vector<WorkerItem> items;
  for (const std::size_t i : idx) {
    ensure_compiled(i);
    items.push_back({&feed.results[i], &lowered[i], &run.variants[i]});
  }
  return items;
}

void PassRun::remeasure_strictly(const std::vector<std::size_t>& idx) {
  const auto items = items_of(idx);
  const auto t = Clock::now();
  DeviceRunner::Options strict;
  strict.rule = StopRule::strict();
  gpu->remeasure(items, strict);
  tally.measure_busy += seconds_since(t);
}

// The top few (and the baseline), re-measured strictly in rounds, before a winner is named. The
// finalists, for the gate.
std::vector<std::size_t> PassRun::strict_remeasure() {
  std::vector<std::size_t> order = fastest_passed(static_cast<std::size_t>(o.top_k));
  const std::size_t top = order.size();
  if (baseline_index && run.variants[*baseline_index].status == Status::kPassed &&
      std::find(order.begin(), order.end(), *baseline_index) == order.end())
    order.push_back(*baseline_index);
  if (!order.empty() && !stop_asked()) {
    log(fmt::format("re-measuring the top {}{} strictly, in rounds", top, order.size() > top ? " and the baseline" : ""));
    remeasure_strictly(order);
  }
  name_winner(run);
  return order;
}

// The correctness gate (tune/gate.hpp): the finalists' outputs on more inputs and over many
// launches, then the sanitizers; a finalist that fails never wins, and when every gated one has
// failed the next few are re-measured strictly and gated in turn.
void PassRun::gate_finalists(const std::vector<std::size_t>& finalists) {
  const auto t_gate = Clock::now();
  GateSettings settings;
  settings.mode = sanitize_mode_from_string(o.sanitize);
  settings.problem = problem.file().string();
  settings.shape = shape;
  settings.seed = o.seed;
  settings.device = o.device;
  settings.fake = fake;
  settings.allow_unchecked = o.allow_unchecked;
  settings.verdict_cache = verdict_cache_for(o.no_cache, o.cache_dir);
  settings.fresh = o.fresh_verdicts;
  settings.log = log;
  ctx.gate.baseline_rule = kGateBaselineRule;
  Gate gate(settings, ctx.gate);
  std::vector<char> out_checked(n, 0), sanitized(n, 0);
  std::vector<std::size_t> batch = finalists;
  for (int round = 1;; ++round) {
    ctx.gate.rounds = round;
    gate_round(gate, settings.rounds, batch, out_checked, sanitized);
    if (gate_stopped(gate) || !run.winner || out_checked[index_of(*run.winner)] || stop_asked()) break;
    // Every gated finalist failed and an unchecked variant is now the fastest: the next ones,
    // twice as many each round (a defect shared by a whole family of variants takes a few
    // rounds, not one per --top variants), at most 64.
    const std::size_t want =
        std::min<std::size_t>(64, std::max<std::size_t>(1, static_cast<std::size_t>(o.top_k)) << std::min(round, 6));
    std::vector<std::size_t> upcoming;
    for (const std::size_t i : fastest_passed(n))
      if (!out_checked[i] && upcoming.size() < want) upcoming.push_back(i);
    log(fmt::format("gate: round {}: no gated finalist may win; re-measuring the next {} strictly and gating them",
                    round + 1, upcoming.size()));
    remeasure_strictly(upcoming);
    batch = upcoming;
  }
  ctx.gate.wall_s = seconds_since(t_gate);
  for (const auto& v : run.variants) count_gated(v, ctx.gate);
  settle_unchecked(gate);
}

// Without --allow-unchecked no variant the gate could not check wins: the results keep what was
// measured (the finalists `unchecked`), name no winner and get no header, and the run exits 2 or 3.
void PassRun::settle_unchecked(const Gate& gate) {
  name_winner(run);
  const VariantRecord* w = run.winner ? run.find(*run.winner) : nullptr;
  if (w && w->gate && w->gate->verdict == GateVerdict::kUnchecked)
    log(fmt::format("gate: {} wins unchecked ({}), as --allow-unchecked allows", w->name, w->gate->reason));
  if (!gate_stopped(gate) || (w && w->gate && w->gate->verdict == GateVerdict::kSafe)) return;
  gate_exit_code = gate.could_not_run_exit_code();
  run.winner.reset();
  run.speedup.reset();
}

std::size_t PassRun::index_of(const std::string& name) const {
  return static_cast<std::size_t>(run.find(name) - run.variants.data());
}

void PassRun::say(const std::vector<std::size_t>& idx) const {
  for (const std::size_t i : idx)
    if (const auto& v = run.variants[i]; v.gate) log(fmt::format("gate: {} {}: {}", to_string(v.gate->verdict), v.name, v.gate->reason));
}

// The output checks; with --sanitize winner, the sanitizers on the would-be winner among them start
// beside them (issue 37), kept only where the serial order would sanitize it next.
void PassRun::check_outputs_with_winner(Gate& gate, const std::vector<std::size_t>& outputs,
                                        std::vector<char>& sanitized) {
  name_winner(run);
  const std::optional<std::size_t> w = run.winner ? std::optional(index_of(*run.winner)) : std::nullopt;
  if (!gate.sanitizing() || gate.mode() != SanitizeMode::kWinner || !w || sanitized[*w] ||
      std::find(outputs.begin(), outputs.end(), *w) == outputs.end())
    return gate.check_outputs(items_of(outputs));
  log(fmt::format("gate: the would-be winner {} under compute-sanitizer, beside the output checks",
                  run.variants[*w].name));
  sanitized[*w] = gate.check_outputs_while_sanitizing(items_of(outputs), items_of({*w}), [&] {
    name_winner(run);
    return !gate_stopped(gate) && run.winner && index_of(*run.winner) == *w;
  });
}

// One round of the gate over `batch`: the output checks of those not yet checked, the sanitizers
// on them (--sanitize finalists), then with --sanitize winner the would-be winner alone, and the
// next one when it fails.
void PassRun::gate_round(Gate& gate, int launches, const std::vector<std::size_t>& batch, std::vector<char>& out_checked,
                std::vector<char>& sanitized) {
  std::vector<std::size_t> outputs, sanitize;
  for (const std::size_t i : batch)
    if (!out_checked[i] && run.variants[i].status == Status::kPassed) {
      out_checked[i] = 1;
      outputs.push_back(i);
    }
  log(fmt::format("gate: checking the outputs of {} finalist(s) (more inputs, {} launches each)", outputs.size(),
                  launches + 1));
  check_outputs_with_winner(gate, outputs, sanitized);
  if (gate_stopped(gate)) return say(outputs);
  if (gate.sanitizing() && gate.mode() == SanitizeMode::kFinalists) {
    // Those that failed the output checks too: a sanitizer report says why. Not the baseline while
    // it cannot win (kBaselineRule): it is sanitized when it becomes the would-be winner below.
    const auto top = fastest_passed(static_cast<std::size_t>(std::max(1, o.top_k)));
    for (const std::size_t i : outputs) {
      if (baseline_index && i == *baseline_index && std::find(top.begin(), top.end(), i) == top.end()) continue;
      sanitized[i] = 1;
      sanitize.push_back(i);
    }
    if (!sanitize.empty()) {
      log(fmt::format("gate: {} finalist(s) under compute-sanitizer ({})", sanitize.size(),
                      fmt::join(kSanitizerTools, ", ")));
      gate.sanitize(items_of(sanitize));
    }
  }
  say(outputs);
  for (name_winner(run); run.winner && gate.sanitizing(); name_winner(run)) {
    const std::size_t w = index_of(*run.winner);
    if (!out_checked[w] || sanitized[w] || gate_stopped(gate)) break;
    sanitized[w] = 1;
    log(fmt::format("gate: the would-be winner {} under compute-sanitizer", run.variants[w].name));
    gate.sanitize(items_of({w}));
    say({w});
  }
}

}  // namespace tune

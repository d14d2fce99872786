// The finalists of a run (PassRun): the second round, the strict re-measure and the gate's rounds.
#include "run/pass_run.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "run/run_common.hpp"
#include "search/strategy.hpp"
#include "tune/compile.hpp"
#include "tune/gate.hpp"
#include "tune/journal.hpp"
#include "tune/measure.hpp"
#include "tune/problem.hpp"
#include "tune/run_plan.hpp"
#include "tune/space.hpp"
#include "tune/worker_client.hpp"
#include "tune/worker_protocol.hpp"

namespace tune {

std::vector<std::size_t> Finalists::fastest_passed(std::size_t keep) const {
  std::vector<std::size_t> passed_idx;
  std::vector<double> medians;
  for (std::size_t i = 0; i < run_.variants.size(); ++i)
    if (run_.variants[i].status == Status::kPassed) {
      passed_idx.push_back(i);
      medians.push_back(run_.variants[i].timing->median_us);
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

std::vector<WorkerItem> PassRun::items_of(const std::vector<std::size_t>& idx) {
  std::vector<WorkerItem> items;
  for (const std::size_t i : idx) {
    if (outputs.journaled(i)) feed.ensure(i);  // the strict re-measure needs it: from the compile cache
    items.push_back({&feed.result(i), &lowered[i], &run.variants[i]});
  }
  return items;
}

Finalists PassRun::finalists() {
  return Finalists(
      plan, o, log, run, *gpu, [this](const std::vector<std::size_t>& idx) { return items_of(idx); },
      [this] { return stop_asked(); }, baseline_index);
}

void Finalists::second_round(const SearchStrategy& strategy, Outputs& outputs) {
  const auto screened = static_cast<std::size_t>(
      std::count_if(run_.variants.begin(), run_.variants.end(), [](const auto& v) { return v.status == Status::kPassed; }));
  const std::size_t keep = strategy.second_round(screened);
  if (keep == 0 || stop_asked_()) return;
  const auto promoted = fastest_passed(keep);
  log_(fmt::format("{}: timing the best {} of {} screened variants again with the search profile", strategy.name(),
                   promoted.size(), screened));
  DeviceRunner::Options second_round;
  second_round.check_parity = false;
  const auto t = Clock::now();
  for (const std::size_t i : promoted) {
    if (outputs.halved(i)) continue;  // done before the run was resumed
    const WorkerItem item = items_of_({i}).front();
    gpu_.evaluate(*item.compiled, *item.lowered, *item.record, second_round);
    outputs.append(kSecondRoundStage, run_.variants[i]);
  }
  measure_s_ += seconds_since(t);
  outputs.save(run_);
}

void Finalists::remeasure_strictly(const std::vector<std::size_t>& idx) {
  const auto items = items_of_(idx);
  const auto t = Clock::now();
  DeviceRunner::Options strict;
  strict.rule = StopRule::strict();
  gpu_.remeasure(items, strict);
  measure_s_ += seconds_since(t);
}

std::vector<std::size_t> Finalists::strict_remeasure() {
  std::vector<std::size_t> order = fastest_passed(static_cast<std::size_t>(o_.top_k));
  const std::size_t top = order.size();
  if (baseline_index_ && run_.variants[*baseline_index_].status == Status::kPassed &&
      std::find(order.begin(), order.end(), *baseline_index_) == order.end())
    order.push_back(*baseline_index_);
  if (!order.empty() && !stop_asked_()) {
    log_(fmt::format("re-measuring the top {}{} strictly, in rounds", top, order.size() > top ? " and the baseline" : ""));
    remeasure_strictly(order);
  }
  name_winner(run_);
  return order;
}

void Finalists::run_gate(const std::vector<std::size_t>& finalists, const std::function<void()>& quiet) {
  const auto t_gate = Clock::now();
  RunContext& ctx = run_.context;
  GateSettings settings;
  settings.mode = o_.sanitize;
  settings.problem = plan_.problem->file().string();
  settings.shape = plan_.shape;
  settings.seed = o_.seed;
  settings.device = o_.device;
  settings.fake = plan_.fake;
  settings.allow_unchecked = o_.allow_unchecked;
  settings.verdict_cache = verdict_cache_for(o_.no_cache, o_.cache_dir);
  settings.fresh = o_.fresh_verdicts;
  settings.log = log_;
  ctx.gate.baseline_rule = kGateBaselineRule;
  Gate gate(settings, ctx.gate);
  out_checked_.assign(run_.variants.size(), 0);
  sanitized_.assign(run_.variants.size(), 0);
  std::vector<std::size_t> batch = finalists;
  for (int round = 1;; ++round) {
    ctx.gate.rounds = round;
    gate_round(gate, settings.rounds, batch);
    if (gate_stopped(gate) || !run_.winner || out_checked_[index_of(*run_.winner)] || stop_asked_()) break;
    // Every gated finalist failed and an unchecked variant is now the fastest: the next ones,
    // twice as many each round (a defect shared by a whole family of variants takes a few
    // rounds, not one per --top variants), at most 64.
    const std::size_t want =
        std::min<std::size_t>(64, std::max<std::size_t>(1, static_cast<std::size_t>(o_.top_k)) << std::min(round, 6));
    std::vector<std::size_t> upcoming;
    for (const std::size_t i : fastest_passed(run_.variants.size()))
      if (!out_checked_[i] && upcoming.size() < want) upcoming.push_back(i);
    log_(fmt::format("gate: round {}: no gated finalist may win; re-measuring the next {} strictly and gating them",
                     round + 1, upcoming.size()));
    if (quiet) quiet();
    remeasure_strictly(upcoming);
    batch = upcoming;
  }
  ctx.gate.wall_s = seconds_since(t_gate);
  for (const auto& v : run_.variants) count_gated(v, ctx.gate);
  settle_unchecked(gate);
}

void Finalists::settle_unchecked(const Gate& gate) {
  name_winner(run_);
  const VariantRecord* w = run_.winner ? run_.find(*run_.winner) : nullptr;
  if (w && w->gate && w->gate->verdict == GateVerdict::kUnchecked)
    log_(fmt::format("gate: {} wins unchecked ({}), as --allow-unchecked allows", w->name, w->gate->reason));
  // A gate that stopped keeps a winner only where every check it asked for ran on it: safe, and
  // sanitized when the gate sanitizes. The runner-up behind an unchecked would-be winner is safe on
  // its outputs alone, and no sanitizer ran on it (--sanitize winner).
  const bool vetted =
      w && w->gate && w->gate->verdict == GateVerdict::kSafe && (!gate.sanitizing() || sanitized_[index_of(w->name)]);
  if (!gate_stopped(gate) || vetted) return;
  gate_exit_code_ = gate.could_not_run_exit_code();
  run_.winner.reset();
  run_.speedup.reset();
}

std::size_t Finalists::index_of(const std::string& name) const {
  return static_cast<std::size_t>(run_.find(name) - run_.variants.data());
}

void Finalists::say(const std::vector<std::size_t>& idx) const {
  for (const std::size_t i : idx)
    if (const auto& v = run_.variants[i]; v.gate)
      log_(fmt::format("gate: {} {}: {}", to_string(v.gate->verdict), v.name, v.gate->reason));
}

// The output checks; with --sanitize winner, the sanitizers on the would-be winner among them start
// beside them (issue 37), kept only where the serial order would sanitize it next.
void Finalists::check_outputs_with_winner(Gate& gate, const std::vector<std::size_t>& outputs) {
  name_winner(run_);
  const std::optional<std::size_t> w = run_.winner ? std::optional(index_of(*run_.winner)) : std::nullopt;
  if (!gate.sanitizing() || gate.mode() != SanitizeMode::kWinner || !w || sanitized_[*w] ||
      std::find(outputs.begin(), outputs.end(), *w) == outputs.end())
    return gate.check_outputs(items_of_(outputs));
  log_(
      fmt::format("gate: the would-be winner {} under compute-sanitizer, beside the output checks", run_.variants[*w].name));
  sanitized_[*w] = gate.check_outputs_while_sanitizing(items_of_(outputs), items_of_({*w}), [&] {
    name_winner(run_);
    return !gate_stopped(gate) && run_.winner && index_of(*run_.winner) == *w;
  });
}

void Finalists::gate_round(Gate& gate, int launches, const std::vector<std::size_t>& batch) {
  std::vector<std::size_t> outputs, sanitize;
  for (const std::size_t i : batch)
    if (!out_checked_[i] && run_.variants[i].status == Status::kPassed) {
      out_checked_[i] = 1;
      outputs.push_back(i);
    }
  log_(fmt::format("gate: checking the outputs of {} finalist(s) (more inputs, {} launches each)", outputs.size(),
                   launches + 1));
  check_outputs_with_winner(gate, outputs);
  if (gate_stopped(gate)) return say(outputs);
  if (gate.sanitizing() && gate.mode() == SanitizeMode::kFinalists) {
    // Those that failed the output checks too: a sanitizer report says why. Not the baseline while
    // it cannot win (kBaselineRule): it is sanitized when it becomes the would-be winner below.
    const auto top = fastest_passed(static_cast<std::size_t>(std::max(1, o_.top_k)));
    for (const std::size_t i : outputs) {
      if (baseline_index_ && i == *baseline_index_ && std::find(top.begin(), top.end(), i) == top.end()) continue;
      sanitized_[i] = 1;
      sanitize.push_back(i);
    }
    if (!sanitize.empty()) {
      log_(fmt::format("gate: {} finalist(s) under compute-sanitizer ({})", sanitize.size(),
                       fmt::join(kSanitizerTools, ", ")));
      gate.sanitize(items_of_(sanitize));
    }
  }
  say(outputs);
  for (name_winner(run_); run_.winner && gate.sanitizing(); name_winner(run_)) {
    const std::size_t w = index_of(*run_.winner);
    if (!out_checked_[w] || sanitized_[w] || gate_stopped(gate)) break;
    sanitized_[w] = 1;
    log_(fmt::format("gate: the would-be winner {} under compute-sanitizer", run_.variants[w].name));
    gate.sanitize(items_of_({w}));
    say({w});
  }
}

}  // namespace tune

// Sweeps run: the planned work items (sweep_plan.cpp) -> run_tune per item, the later items'
// baselines compiled ahead; the shard's part of one shape's configurations; results file stems.
#include "tune/sweep.hpp"

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "tune/compile.hpp"
#include "tune/compile_pool.hpp"
#include "tune/errors.hpp"
#include "tune/run_plan.hpp"
#include "tune/stop.hpp"

namespace tune {

TuneOptions options_for(const TuneOptions& base, const SweepWork& work) {
  TuneOptions o = base;
  o.problem = work.item.problem;
  o.dims = work.item.dims;
  o.shard = work.shard;
  return o;
}

namespace {

// The baselines of a sweep's later items, compiled into the compile cache on two threads while the
// first items run: a baseline's compile (8 to 16 s for contact's seed design, one core) is the
// longest of a short tune, and no result decides it. Without a cache there is nothing to keep. The
// threads stop taking requests when the sweep ends (an interrupt); one compile in hand finishes.
std::vector<std::jthread> compile_baselines_ahead(const std::vector<SweepWork>& work, const TuneOptions& base,
                                                  const RunDevice& device) {
  if (base.no_cache || base.compile_only || work.size() < 2) return {};
  struct Shared {
    std::vector<CompileRequest> requests;
    std::atomic<std::size_t> next{0};
    std::optional<CompilePool> pool;
  };
  auto shared = std::make_shared<Shared>();
  for (std::size_t i = 1; i < work.size(); ++i) try {
      const RunPlan plan = plan_run(options_for(base, work[i]), work[i].shape, nullptr, &device);
      if (auto r = baseline_request(plan)) shared->requests.push_back(std::move(*r));
    } catch (const std::exception&) {  // the run reports it in its turn
    }
  shared->pool.emplace(compile_cache_for(base.no_cache, base.cache_dir), base.jobs, nullptr);
  std::vector<std::jthread> threads;
  for (int t = 0; t < 2; ++t)
    threads.emplace_back([shared](const std::stop_token& stop) {
      for (std::size_t i = shared->next++; i < shared->requests.size() && !stop.stop_requested(); i = shared->next++) {
        bool cached = false;
        (void)shared->pool->compile(shared->requests[i], &cached);
      }
    });
  return threads;
}

}  // namespace

std::string held_item(const SweepWork& work, const ResultsHeldError& e, const std::function<void(const std::string&)>& log) {
  if (log)
    log(fmt::format("{}: another tune (pid {}) is writing {}; skipped, the sweep goes on", work.item.describe(), e.holder(),
                    e.file()));
  return fmt::format("{} (pid {})", work.item.describe(), e.holder());
}

std::string unrunnable_item(const SweepWork& work, const ShapeError& e, const std::function<void(const std::string&)>& log) {
  if (log) log(fmt::format("{}: {}; skipped, the sweep goes on", work.item.describe(), e.what()));
  return work.item.describe();
}

std::string cut_short_item(const SweepWork& work, const TuneOutcome& outcome) {
  return fmt::format("{} ({})", work.item.describe(), outcome.json_path.string());
}

std::string stopped_item(const SweepWork& work, const std::exception& e,
                         const std::function<void(const std::string&)>& log) {
  if (log) log(fmt::format("{}: {}", work.item.describe(), e.what()));
  return work.item.describe();
}

namespace {

// --transfer: the item's options with the results of its problem's earlier items as a warm start.
void teach(TuneOptions& o, const SweepWork& w, const std::vector<std::filesystem::path>& earlier, const TuneOptions& base) {
  o.warm_start.insert(o.warm_start.end(), earlier.begin(), earlier.end());
  if (!earlier.empty() && o.search == SearchMode::kModel)
    o.search = SearchMode::kExhaustive;  // the earlier results teach it
  if (base.log)
    base.log(o.warm_start.empty()
                 ? fmt::format("transfer: {} is the first shape of {} in the sweep; it is tuned without a warm start",
                               w.item.describe(), w.item.problem)
                 : fmt::format("transfer: {} starts from {} result(s) of the sweep's earlier shapes{}", w.item.describe(),
                               earlier.size(), base.warm_start.empty() ? "" : " and the --warm-start files"));
}

// A stop ended the sweep before item `from`: it and the items after it are not started.
void not_started_from(SweepResult& result, const std::vector<SweepWork>& work, std::size_t from) {
  result.interrupted = true;
  for (std::size_t i = from; i < work.size(); ++i) result.not_started.push_back(work[i].item.describe());
}

}  // namespace

SweepResult run_sweep(const std::vector<SweepWork>& work, const TuneOptions& base,
                      const std::function<void(const SweepWork&, const TuneOutcome&)>& on_done, bool transfer) {
  const StopScope stop_scope;  // over every shape: a stop asked for in one shape ends the sweep
  SweepResult result;
  std::map<std::string, std::vector<std::filesystem::path>> taught;  // problem -> results of its earlier items
  const RunDevice device = open_run_device(base);                    // once: every item of the sweep runs on base's device
  const std::vector<std::jthread> baselines = compile_baselines_ahead(work, base, device);
  for (std::size_t i = 0; i < work.size(); ++i) {
    const SweepWork& w = work[i];
    // Asked for after the shape before had recorded its last variant (while it was gated, written
    // or compared with torch): that shape is whole, the rest are not started.
    if (stop_requested()) {
      not_started_from(result, work, i);
      break;
    }
    TuneOptions o = options_for(base, w);
    if (transfer) teach(o, w, taught[w.item.problem], base);
    std::optional<TuneOutcome> ran_item;
    try {
      ran_item.emplace(run_tune(o, w.shape, &device));
    } catch (const ResultsHeldError& e) {  // nothing of this shape was written: the other tune's files stay
      result.held.push_back(held_item(w, e, base.log));
      continue;
    } catch (const ShapeError& e) {  // this shape alone: the others may well run
      result.unrunnable.push_back(unrunnable_item(w, e, base.log));
      continue;
    } catch (const Interrupted& e) {  // before the shape had a variant: nothing of it was written
      result.not_started.push_back(stopped_item(w, e, base.log));
      not_started_from(result, work, i + 1);
      break;
    }
    const TuneOutcome& outcome = *ran_item;
    if (transfer && outcome.run.winner && outcome.json_path.extension() == ".json")
      taught[w.item.problem].push_back(outcome.json_path);
    ++result.ran;
    if (on_done) on_done(w, outcome);
    if (outcome.run.context.interrupted) {
      result.cut_short.push_back(cut_short_item(w, outcome));
      not_started_from(result, work, i + 1);
      break;
    }
  }
  return result;
}

ShardPart shard_configs(const std::vector<Config>& chosen, const Config& baseline, const ShardRecord& shard) {
  ShardPart out{{}, shard};
  const auto b = std::find(chosen.begin(), chosen.end(), baseline);
  out.shard.variants = static_cast<std::int64_t>(chosen.size());
  out.shard.baseline_index = b == chosen.end() ? -1 : static_cast<std::int64_t>(b - chosen.begin());
  for (std::size_t i = 0; i < chosen.size(); ++i)
    if (static_cast<int>(i % static_cast<std::size_t>(shard.count)) == shard.index ||
        static_cast<std::int64_t>(i) == out.shard.baseline_index)
      out.configs.push_back(chosen[i]);
  return out;
}

std::string result_stem(const Shape& shape, const std::optional<ShardRecord>& shard) {
  if (shard && shard->split == ShardSplit::kVariants)
    return fmt::format("{}.shard-{}-of-{}", shape.tag(), shard->index, shard->count);
  return shape.tag();
}

}  // namespace tune

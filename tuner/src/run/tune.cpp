// run_tune: a run in passes, each pass's stages in order (run_pass; the stages are PassRun's,
// run/pass_run.hpp).
#include "tune/tune.hpp"

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "run/pass_run.hpp"
#include "run/run_common.hpp"
#include "search/strategy.hpp"
#include "tune/errors.hpp"
#include "tune/run_plan.hpp"

namespace tune {

TuneOutcome run_pass(const RunPlan& plan, const TuneOptions& o, Pass* pass, SearchStrategy& strategy,
                     std::optional<IsolatedRunner>& gpu) {
  PassRun r(plan, o, pass, strategy, gpu);
  r.open_device();
  r.choose_variants();
  r.open_outputs();
  if (auto earlier = r.finished_earlier()) return std::move(*earlier);
  r.lower_variants();
  r.open_journal();
  r.start_worker();
  r.start_compiles();
  r.prepare_search();
  r.search();
  if (pass && pass->search_only) return r.end_search_pass();
  int gate_exit_code = 0;
  std::unique_ptr<TorchBeside> torch;
  if (r.run.timed) {
    Finalists finalists = r.finalists();
    finalists.second_round(strategy, r.outputs);
    const std::vector<std::size_t> chosen = finalists.strict_remeasure();
    if (!chosen.empty() && !r.stop_asked()) {
      torch = r.torch_beside_gate();  // nothing is timed from here until it is released
      finalists.run_gate(chosen, [&] {
        if (torch) torch->quiet();
      });
    }
    r.tally.measure_busy += finalists.measure_s();
    gate_exit_code = finalists.gate_exit_code();
  }
  r.time_torch(std::move(torch));
  return r.write_outputs(gate_exit_code);
}

namespace {

// A run in passes (run_tune): the options of the later ones (taking the journal), the passes'
// shared state, the latest pass's outcome, the configurations chosen so far, and the worker.
struct Passes {
  const RunPlan& plan;
  const TuneOptions& o;
  std::optional<IsolatedRunner>& gpu;
  SearchStrategy& strategy;
  TuneOptions resumed;
  Pass pass;
  TuneOutcome out;
  std::set<Config> have;  // chosen so far, and the baseline while its compile is deferred

  void log(const std::string& line) const {
    if (o.log) o.log(line);
  }
  // A stop asked for after a pass's last variant still ends the passes: the last one records it.
  bool going() const { return !out.run.context.interrupted && out.run.timed && !stop_requested(); }
  // A pass over `have` (the baseline aside while deferred), after what the earlier passes spent.
  void next(bool search_only) {
    pass.configs = in_order(pass.all, have);
    if (pass.defer_baseline) std::erase(pass.configs, pass.baseline);
    pass.compile_wall_s = out.run.wall.compile_wall_s;
    pass.measure_wall_s = out.run.wall.measure_wall_s;
    pass.search_only = search_only;
    ++pass.passes_done;
    out = run_pass(plan, resumed, &pass, strategy, gpu);
  }
  Measured measured() const;
};

// What the passes so far measured, over pass.all, for the strategy's next batch.
Measured Passes::measured() const {
  std::map<std::string, const VariantRecord*> by_name;
  for (const auto& v : out.run.variants) by_name[v.name] = &v;
  const std::size_t n = pass.all.size();
  Measured m{pass.all, std::vector<std::optional<double>>(n), std::vector<char>(n, 0), std::vector<char>(n, 0),
             std::vector<char>(n, 0)};
  for (std::size_t i = 0; i < n; ++i) {
    m.excluded[i] = pass.defer_baseline && pass.all[i] == pass.baseline;
    m.chosen[i] = have.contains(pass.all[i]);
    const auto it = by_name.find(pass.names[i]);
    if (it == by_name.end()) continue;
    const VariantRecord& v = *it->second;
    if (v.status == Status::kPassed && v.timing) m.median_us[i] = v.timing->median_us;
    m.settled[i] = v.status != Status::kPending;
  }
  return m;
}

// The strategy's batches after the first, a search pass each, until it is done or the run stops.
void search_rounds(Passes& p) {
  const SearchLog log = [&p](const std::string& line) { p.log(line); };
  while (p.going()) {
    const std::vector<std::size_t> more = p.strategy.next(p.measured(), log);
    if (more.empty()) break;
    for (const std::size_t i : more) p.have.insert(p.pass.all[i]);
    p.next(true);
  }
  p.strategy.finish(p.out.run.timed, log);
}

}  // namespace

std::optional<CompileRequest> baseline_request(const RunPlan& plan) {
  try {
    if (!plan.space.violated_constraint(plan.space.baseline(), plan.shape, plan.limits).empty()) return std::nullopt;
    return compile_request(plan.space.lower(plan.space.baseline(), plan.shape, plan.limits), default_options(plan.cc));
  } catch (const std::exception&) {  // the run reports it in its turn
    return std::nullopt;
  }
}

TuneOutcome run_tune(const TuneOptions& o, const ShapeResolution& shape, const RunDevice* device) {
  const StopScope stop_scope;         // over every pass: a stop asked for in one is not forgotten by the next
  std::optional<IsolatedRunner> gpu;  // one worker for every pass
  const StrategyPtr strategy = make_search_strategy(o);
  const RunPlan plan = plan_run(o, shape, o.log, device);
  if (!strategy->adaptive()) return run_pass(plan, o, nullptr, *strategy, gpu);
  // The strategy's first choice, timed; then its further batches, a search pass each; then the
  // strict re-measure, the gate and the outputs over all of them. Each pass takes the earlier ones'
  // records from the journal (as --resume does), so nothing is compiled or measured twice.
  Passes p{plan, o, gpu, *strategy, o, {}, {}, {}};
  p.resumed.resume = true;
  p.pass.defer_baseline = !o.no_cache;  // without a cache the early compile would be lost
  p.out = run_pass(plan, o, &p.pass, *strategy, gpu);
  if (p.out.already_complete) return p.out;
  p.have.insert(p.pass.configs.begin(), p.pass.configs.end());
  if (p.pass.defer_baseline) p.have.insert(p.pass.baseline);
  search_rounds(p);
  p.next(false);
  return p.out;
}

}  // namespace tune

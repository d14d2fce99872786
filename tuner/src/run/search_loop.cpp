// The search loop of a pass (PassRun): each compiled variant measured, logged and journaled, within the budget.
#include "run/pass_run.hpp"

#include <algorithm>
#include <csignal>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "compile/kernel_params.hpp"
#include "run/run_common.hpp"
#include "search/progress_log.hpp"
#include "search/strategy.hpp"
#include "tune/stop.hpp"

namespace tune {

std::string fit_line(const std::string& prefix, const std::string& name, const std::string& detail, const std::string& tail,
                     std::size_t width) {
  const std::string whole = prefix + name + detail + tail;
  if (width == 0 || whole.size() <= width) return whole;
  constexpr std::string_view kCut = "...";
  constexpr std::size_t kFewestNameColumns = 20;
  // The name cut to `room` columns, "..." included.
  auto cut = [&](std::size_t room) { return name.substr(0, room - kCut.size()) + std::string(kCut); };
  const std::size_t with_detail = prefix.size() + detail.size() + tail.size();
  if (with_detail + std::min(kFewestNameColumns, name.size()) <= width)
    return prefix + (name.size() + with_detail <= width ? name : cut(width - with_detail)) + detail + tail;
  const std::size_t without = prefix.size() + tail.size();
  if (name.size() + without <= width) return prefix + name + tail;
  if (without + kCut.size() < width) return prefix + cut(width - without) + tail;
  return whole.substr(0, width);
}

// The search pass's profile, the strategy's (batch and graph means of 20 launches; the top few
// and the baseline get 100 in the strict re-measure, whose figures the report shows), and the
// counts of the records taken from the journal, which count as done.
void PassRun::prepare_search() {
  tally.first_round = strategy.profile();
  for (std::size_t i = 0; i < n; ++i) {
    const VariantRecord& r = run.variants[i];
    if (!outputs.journaled(i) || !r.parity) continue;
    ++tally.checked;
    if (r.status != Status::kPassed || !r.timing) continue;
    ++tally.passed;
    if (!tally.best || r.timing->median_us < *tally.best) tally.best = r.timing->median_us;
    if (r.baseline && gpu) gpu->set_baseline_median(r.timing->median_us);
  }
  tally.floor_measured = pass && pass->floor;  // measured by an earlier pass of this run
  if (tally.floor_measured) run.harness_floor = pass->floor;
}

// Each variant as it comes out of the compile threads: measured, logged, journaled.
void PassRun::search() {
  for (std::size_t done = journaled_count(); done < n; ++done) {
    if (stop_requested()) {
      ctx.interrupted = true;
      (void)feed.stop_taking();
      log(fmt::format("interrupted by {}: {} of {} variants done; writing what was measured ({} again to stop at once)",
                      signal_name(interrupt_signal()), done, n,
                      interrupt_signal() == SIGINT ? "Ctrl-C" : signal_name(interrupt_signal())));
      break;
    }
    if (!ctx.stopped_by_time_budget && o.time_budget_s > 0 && seconds_since(t_start) > o.time_budget_s)
      stop_for_time_budget(done);
    // Once stopped, only the baseline is still taken (it compiles first, so it is seldom waited for).
    const bool only_baseline = ctx.stopped_by_time_budget;
    if (only_baseline && !baseline_pending()) break;
    const std::size_t i = only_baseline ? feed.take(*baseline_index) : feed.take();
    measure(i);
    log_progress(done, i);
    run.wall.compile_wall_s = feed.wall_s() > 0 ? feed.wall_s() : feed.elapsed_s();
    outputs.append("search", run.variants[i]);
    save(false);
  }
  end_search();
}

// The workers take no new variant; those in flight finish. A budget spent before any worker took
// the baseline (a loaded machine, a large space to lower) compiles it here, else the wait for it
// would never end.
void PassRun::stop_for_time_budget(std::size_t done) {
  ctx.stopped_by_time_budget = true;
  const std::size_t taken = feed.stop_taking();
  if (taken == 0 && !feed.order().empty() && baseline_index && feed.order()[0] == *baseline_index)
    feed.compile_and_queue(*baseline_index);
  log(fmt::format("time budget of {} s reached: {} of {} variants done, the rest recorded as skipped{}", o.time_budget_s,
                  done, n, baseline_pending() ? " (the baseline still runs)" : ""));
}

// A compiled variant's record: failed, compiled (no device), pruned for its spills, or evaluated
// by the worker (the harness floor first, once a run).
void PassRun::measure(std::size_t i) {
  VariantRecord& rec = run.variants[i];
  const CompileResult& cr = feed.result(i);
  rec.compile_seconds = cr.seconds;
  rec.compile_cached = feed.from_cache(i);
  rec.resources = cr.resources;
  if (!cr.ok) {
    rec.status = Status::kCompileFailed;
    rec.reason = "NVRTC rejected the variant";
    rec.log_excerpt = excerpt(cr.log);
  } else if (note_parameter_types(i); !run.timed) {
    // What the card of the target arch would refuse to launch is no compiled variant to count on.
    const std::string refused = launch_refusal(lowered[i], cr.lowered_names, cr.resources, limits);
    rec.status = refused.empty() ? Status::kCompiled : Status::kLaunchFailed;
    rec.reason = refused;
  } else if (!o.keep_spills && !rec.baseline && rec.spill_bytes() > 0) {
    rec.status = Status::kSkipped;
    rec.reason =
        fmt::format("pruned before timing: spills {} bytes to local memory (--keep-spills measures it)", rec.spill_bytes());
  } else {
    if (!tally.floor_measured) measure_floor();
    const auto t = Clock::now();
    gpu->evaluate(cr, lowered[i], rec, tally.first_round);
    const double took = seconds_since(t);
    rec.evaluate_ms = took * 1e3;
    tally.measure_busy += took;
    ++tally.checked;
    if (rec.status == Status::kPassed) {
      ++tally.passed;
      if (!tally.best || rec.timing->median_us < *tally.best) tally.best = rec.timing->median_us;
      if (rec.baseline) gpu->set_baseline_median(rec.timing->median_us);
    }
  }
  if (rec.spill_bytes() > 0 && rec.reason.empty()) rec.reason = fmt::format("spills {} bytes", rec.spill_bytes());
}

void PassRun::note_parameter_types(std::size_t i) {
  if (tensor_dtypes.empty()) {
    std::vector<TensorSpec> specs = problem.param_specs(shape);
    for (auto& t : problem.input_specs(shape)) specs.push_back(std::move(t));
    const TensorSpec out = problem.output_spec(shape);
    for (const auto& t : specs) tensor_dtypes[t.name] = t.dtype;
    tensor_dtypes[out.name] = tensor_dtypes["out"] = out.dtype;
  }
  const CompileResult& cr = feed.result(i);
  for (std::size_t k = 0; k < lowered[i].launches.size() && k < cr.lowered_names.size(); ++k) {
    const KernelLaunch& launch = lowered[i].launches[k];
    const std::vector<std::string> types = kernel_parameter_types(cr.lowered_names[k]);
    for (std::size_t a = 0; a < types.size() && a < launch.args.size(); ++a) {
      const auto it = tensor_dtypes.find(launch.args[a]);  // a scratch buffer is raw memory: not checked
      if (it == tensor_dtypes.end()) continue;
      if (const std::string why = parameter_mismatch(types[a], it->second); !why.empty()) {
        const std::string line = fmt::format(
            "note: {} parameter {} ('{}'): {}; give the parameter the tensor's type (docs/problem-format.md, Dtypes), "
            "or every variant fails parity on a GPU",
            launch.kernel, a + 1, launch.args[a], why);
        if (type_notes.insert(line).second) log(line);
      }
    }
  }
}

void PassRun::measure_floor() {
  try {
    run.harness_floor = gpu->floor();
  } catch (const Interrupted&) {  // a stop while the first worker ran reference.py: nothing measured
    outputs.discard_unmeasured();
    throw;
  }
  tally.floor_measured = true;
  if (pass) pass->floor = run.harness_floor;
  log(fmt::format("harness floor (empty kernel): cold {:.2f} us, batch {:.2f} us, graph {:.2f} us",
                  run.harness_floor->empty_cold_us, run.harness_floor->empty_batch_us, run.harness_floor->empty_graph_us));
}

// Elapsed time and the search's remaining time at this run's pace so far (resumed records took
// none of it); on a terminal the name is cut to fit the line (TuneOptions::line_width).
void PassRun::log_progress(std::size_t done, std::size_t i) {
  const VariantRecord& rec = run.variants[i];
  const double elapsed = seconds_since(t_start);
  const double pace = feed.elapsed_s() / static_cast<double>(done + 1 - journaled_count());
  log(fit_line(fmt::format("[{:>3}/{}] {}  {:<14} {}", done + 1, n,
                           rec.compile_cached ? std::string("from cache    ")
                                              : fmt::format("compiled {:5.1f}s", feed.result(i).seconds),
                           to_string(rec.status),
                           rec.timing ? fmt::format("{:9.2f} us  ", rec.timing->median_us) : std::string(13, ' ')),
               rec.name,
               run.timed ? fmt::format("   (checked {}, passed {}, best {})", tally.checked, tally.passed,
                                       tally.best ? fmt::format("{:.2f} us", *tally.best) : "-")
                         : std::string(),
               fmt::format("  {} elapsed{}", format_duration(elapsed),
                           ctx.stopped_by_time_budget
                               ? std::string()
                               : ", eta " + format_duration(pace * static_cast<double>(n - done - 1))),
               o.line_width));
}

// The compile threads joined; what the search never reached is recorded as skipped.
void PassRun::end_search() {
  feed.join();
  if (ctx.stopped_by_time_budget || ctx.interrupted) {
    feed.end_wall();
    for (auto& v : run.variants)
      if (v.status == Status::kPending) {
        v.status = Status::kSkipped;
        v.reason = ctx.interrupted
                       ? fmt::format("not reached: the run was interrupted ({})", signal_name(interrupt_signal()))
                       : fmt::format("not reached: the --time-budget of {} s ran out", o.time_budget_s);
      }
  }
  run.wall.compile_wall_s = feed.wall_s() + (pass ? pass->compile_wall_s : 0);
}

// A search pass ends here: the records are in the journal; the next pass takes them and run_tune
// chooses what follows.
TuneOutcome PassRun::end_search_pass() {
  run.wall.measure_wall_s = tally.measure_busy + pass->measure_wall_s;
  save();
  if (gpu) gpu->detach();
  return {run, plan.json_path, std::nullopt};
}

bool PassRun::baseline_pending() const { return baseline_index && run.variants[*baseline_index].status == Status::kPending; }

}  // namespace tune

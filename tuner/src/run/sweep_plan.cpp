// A tune's plan and its one entry (tune/sweep_plan.hpp): shapes, shard and devices from the
// request, every shape resolved once, then the shapes run in sequence or on the devices.
#include "tune/sweep_plan.hpp"

#include <ranges>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "run/run_common.hpp"
#include "tune/errors.hpp"
#include "tune/stop.hpp"

namespace tune {
namespace {

void log_line(const TuneOptions& base, const std::string& line) {
  if (base.log) base.log(line);
}

// The shapes to tune: the sweep file's, or --problem's with the shape options' lists expanded.
std::vector<SweepItem> sweep_items(const TuneRequest& r) {
  if (!r.sweep_file.empty()) {
    if (!r.base.problem.empty() || !r.shape_lists.empty())
      throw InputError("--sweep lists the problems and shapes; leave out --problem and the dimension options");
    return load_sweep_file(r.sweep_file);
  }
  if (r.base.problem.empty()) throw InputError("--problem is required (try: tune --problem contact --B 4 --N 64)");
  return expand_dims(r.base.problem, r.shape_lists);
}

// --devices resolved (none without it, and none for a compile-only sweep, which runs once).
std::vector<SweepDevice> sweep_devices(const TuneRequest& r) {
  if (r.replicate && r.devices_text.empty())
    throw InputError("--replicate runs each shape on every device of --devices; add --devices all or a list");
  std::vector<SweepDevice> devices;
  if (r.devices_text.empty()) return devices;
  const DeviceSelection selection = parse_devices(r.devices_text);
  if (r.base.compile_only)
    log_line(r.base, "--compile-only: nothing is timed, so the sweep runs once, not per device");
  else
    devices = resolve_devices(selection, r.base.arch);
  if (devices.empty() && !r.base.compile_only)
    log_line(r.base, "--devices all: no CUDA device; running the compile-only sweep once");
  if (r.base.header && devices.size() > 1)
    throw InputError(
        fmt::format("--header names one file, but {} devices write results; leave it out (each header is "
                    "written beside its results)",
                    devices.size()));
  return devices;
}

// --transfer: the sweep's shapes in one sequence, cheapest first per problem.
std::vector<SweepWork> transfer_order(const SweepPlan& p, std::vector<SweepWork> all) {
  // Each shape learns from the ones before it: one sequence, on one device, choosing its variants itself.
  const char* clash = !p.devices.empty()  ? "--devices (the shapes run side by side there)"
                      : p.shard.count > 1 ? "--shard (a shard does not see the others' results)"
                      : p.base.budget > 0 ? "--budget (the warm start chooses the variants)"
                                          : nullptr;
  if (clash) throw InputError(fmt::format("--transfer tunes the sweep's shapes in one sequence; leave out {}", clash));
  auto ordered = order_for_transfer(std::move(all));
  log_line(p.base,
           fmt::format("transfer: {} shapes, cheapest first per problem: {}", ordered.size(),
                       fmt::join(ordered | std::views::transform([](const SweepWork& w) { return w.item.describe(); }),
                                 "; ")));
  return ordered;
}

// Several shapes, a shard or several devices: the sweep checked, ordered and cut to this shard.
void plan_sweep_work(SweepPlan& p, std::vector<SweepWork> all) {
  if (p.base.header && p.items > 1)
    throw InputError(
        fmt::format("--header names one file, but the sweep has {} shapes; leave it out (each header is "
                    "written beside its results)",
                    p.items));
  if (p.items > 1) validate_sweep(all);
  if (p.transfer) all = transfer_order(p, std::move(all));
  p.work = plan_sweep(all, p.shard, sweep_run_key(p.base, all));
  if (p.shard.count > 1)
    log_line(p.base, fmt::format("shard {}/{}: {} of the sweep's {} items{}", p.shard.index, p.shard.count, p.work.size(),
                                 p.items, p.items == 1 ? " (one shape: its variants are split)" : ""));
}

// The sweep's shapes side by side on the devices, one worker each.
void run_on_devices(TuneSweepOutcome& out, const std::function<void(const ItemDone&)>& on_done) {
  const SweepPlan& p = out.plan;
  for (const auto& d : p.devices)
    log_line(p.base, fmt::format("{} -> {}/{}/", describe_device(d.info), p.base.out_dir.string(), d.dir));
  const auto t0 = Clock::now();
  const auto result = run_sweep_on_devices(p.work, p.base, p.devices, p.replicate,
                                           [&](const SweepWork& w, const SweepDevice& d, const TuneOutcome& outcome) {
                                             if (on_done) on_done({p, w, &d, outcome});
                                           });
  out.seconds = seconds_since(t0);
  out.ran = result.ran;
  out.failed = result.failed;
  out.not_run = result.not_run;
  out.interrupted = result.interrupted;
}

// The sweep's shapes one after the other, in this process (a lone shape: its plain run).
void run_in_sequence(TuneSweepOutcome& out, const std::function<void(const ItemDone&)>& on_done) {
  const SweepPlan& p = out.plan;
  const auto t0 = Clock::now();
  auto done = [&](const SweepWork& w, const TuneOutcome& outcome) {
    if (on_done) on_done({p, w, nullptr, outcome});
    out.interrupted = out.interrupted || outcome.run.context.interrupted;
  };
  if (p.single()) {
    const SweepWork& w = p.work.front();
    done(w, run_tune(options_for(p.base, w), w.shape));
    out.ran = 1;
    return;
  }
  out.ran = run_sweep(p.work, p.base, done, p.transfer);
  // A stop asked for between two shapes: the shapes after it were not run.
  out.interrupted = out.interrupted || (out.ran < p.work.size() && interrupt_signal() != 0);
  out.seconds = seconds_since(t0);
}

}  // namespace

SweepPlan plan_tune(const TuneRequest& request) {
  SweepPlan p;
  p.base = request.base;
  p.replicate = request.replicate;
  p.transfer = request.transfer;
  const std::vector<SweepItem> items = sweep_items(request);
  p.items = items.size();
  if (!request.shard_text.empty()) p.shard = parse_shard(request.shard_text);
  // The one resolution of each shape (problem, space, shape, work counts; an error is kept for the
  // shape's turn), then the devices it runs on.
  std::vector<SweepWork> all = resolve_items(items, p.base.config);
  p.devices = sweep_devices(request);
  if (p.single())
    p.work = std::move(all);
  else
    plan_sweep_work(p, std::move(all));
  return p;
}

TuneSweepOutcome run_tune_request(const TuneRequest& request, const std::function<void(const ItemDone&)>& on_done) {
  TuneSweepOutcome out{plan_tune(request)};
  if (out.plan.devices.empty())
    run_in_sequence(out, on_done);
  else
    run_on_devices(out, on_done);
  return out;
}

}  // namespace tune

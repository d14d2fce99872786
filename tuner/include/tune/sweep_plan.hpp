#pragma once
// A tune as the command line asks for it, planned once and run by one entry (issue 38): one shape
// is a sweep of one. The plan resolves every shape once (resolve_item) and orders them; the run
// hands each its resolution (run_tune), in sequence in this process, or on several devices, and
// nothing after the plan looks a problem, a space or a shape up again.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "tune/devices.hpp"
#include "tune/sweep.hpp"
#include "tune/tune.hpp"

namespace tune {

// What the command line asks for: the options (their values checked as they were parsed), and the
// shapes, shard and devices still as given.
struct TuneRequest {
  TuneOptions base;                                                            // base.problem: --problem ("" with --sweep)
  std::filesystem::path sweep_file;                                            // --sweep ("" without)
  std::vector<std::pair<std::string, std::vector<std::int64_t>>> shape_lists;  // the shape options of --problem
  std::string shard_text, devices_text;                                        // --shard, --devices ("" without)
  bool replicate = false, transfer = false;
};

// The tune's plan: this shard's shapes, resolved and in the order they run, and the devices.
struct SweepPlan {
  TuneOptions base;
  std::size_t items = 0;  // shapes in the whole sweep
  ShardSpec shard;
  std::vector<SweepDevice> devices;  // none: the shapes run one after the other in this process
  bool replicate = false, transfer = false;
  std::vector<SweepWork> work;
  // One shape, unsharded, without --devices: a plain run, reported without the sweep's lines.
  [[nodiscard]] bool single() const { return items == 1 && shard.count == 1 && devices.empty(); }
};

// The request's shapes (the sweep file's, or --problem's with the shape options' lists expanded),
// shard and devices, every shape resolved once and the sweep checked: in the order the checks have
// always run, so the same error wins when several inputs are bad. A lone shape's resolution error is
// its run's to report (after the run's own checks). Throws InputError; logs through base.log.
SweepPlan plan_tune(const TuneRequest& request);

// One shape's run ended: what the front end reports of it (on devices, under a lock, one at a time).
struct ItemDone {
  const SweepPlan& plan;
  const SweepWork& work;
  const SweepDevice* device;  // nullptr in this process
  const TuneOutcome& outcome;
};

struct TuneSweepOutcome {
  SweepPlan plan;
  SweepResult result;  // what its shapes came to (one shape's: ran, interrupted)
  double seconds = 0;  // the sweep's wall time
};

// The one entry of a tune: plan_tune, then its shapes through run_tune (run_sweep, or
// run_sweep_on_devices), on_done after each. Throws what plan_tune and the runs throw.
TuneSweepOutcome run_tune_request(const TuneRequest& request, const std::function<void(const ItemDone&)>& on_done);

}  // namespace tune

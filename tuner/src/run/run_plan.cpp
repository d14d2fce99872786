// A run's plan, resolved once (tune/run_plan.hpp).
#include "tune/run_plan.hpp"

#include <string_view>

#include <fmt/format.h>

#include "run/run_common.hpp"
#include "tune/compile.hpp"
#include "tune/device.hpp"
#include "tune/errors.hpp"
#include "tune/measure.hpp"
#include "tune/sweep.hpp"
#include "tune/worker_protocol.hpp"

namespace tune {

RunDevice open_run_device(const TuneOptions& o) {
  RunDevice d;
  std::string why;
  d.compile_only = o.compile_only;
  d.fake = !d.compile_only && worker_fake_mode();
  // An ordinal this machine lacks is a mistyped option, not a machine without a GPU (--devices refuses it too).
  if (const int count = d.compile_only ? 0
                        : d.fake       ? fake_device_count()
                                       : device_count(&why);
      count > 0 && o.device >= count)
    throw InputError(fmt::format("--device {}: this machine has {} CUDA device{} (ordinals 0 to {}){}", o.device, count,
                                 count == 1 ? "" : "s", count - 1, d.fake ? " (TUNE_WORKER_FAKE_DEVICES)" : ""));
  if (d.fake) {
    d.device = fake_device(o.arch, o.device);
    d.device_note = "TUNE_WORKER_FAKE: a synthetic device; the worker returns made-up results and measures nothing";
  } else if (!d.compile_only) {
    d.device = query_device(o.device, &why);
    if (!d.device) {  // said first; how many variants and how long once they are counted (say_compile_only)
      d.device_note =
          fmt::format("no CUDA device ({}): a compile-only sweep for {} instead: every variant compiled, nothing timed{}",
                      why, arch_name(o.arch),
                      o.budget > 0 ? "" : fmt::format("; pass --budget {} to compile a sample", kSuggestedSample));
      d.compile_only = true;
      d.untimed_reason = "no CUDA device: " + why;
    }
  } else {
    d.untimed_reason = "--compile-only";
  }
  return d;
}

std::filesystem::path results_path(const TuneOptions& o, const std::string& problem, const Shape& shape,
                                   const std::string& gpu_dir) {
  const std::string stem = result_stem(shape, o.shard);
  // The longest name made of the stem: the snapshot's atomic-write temporary,
  // "<stem>.json.partial.tmp.<pid>.<serial>" (a pid of up to 7 digits, Linux's pid_max 4194304; a
  // serial of up to 6, the process's atomic writes). A name past the file system's 255 bytes failed
  // at the results lock, blamed on the folder's permissions, or at the first snapshot by the pid.
  constexpr std::size_t kLongestSuffix = std::string_view(".json.partial.tmp.").size() + 7 + 1 + 6;
  constexpr std::size_t kNameMax = 255;
  if (stem.size() + kLongestSuffix > kNameMax)
    throw ShapeError(
        fmt::format("shape {} names its results file {}.json, {} bytes: with the suffixes tune adds (.json.partial and a "
                    "temporary's) it passes the 255 bytes a file name may have; give the problem shorter dimension names",
                    shape.describe(), stem, stem.size() + 5));
  return o.out_dir / gpu_dir / problem / (stem + ".json");
}

namespace {

// Refused before anything compiles: the buffers the shape needs against the device's free memory
// (NVML; its total memory when NVML is not there; the worker checks again), and an arch NVRTC
// cannot target (it would fail every variant).
void check_device(const TuneOptions& o, RunPlan& plan) {
  if (plan.device && !plan.fake) {
    const std::string shortfall =
        DeviceRunner::memory_shortfall(*plan.problem, plan.shape, *plan.device, device_free_bytes(*plan.device));
    if (!shortfall.empty()) throw ShapeError(shortfall);
  }
  plan.cc = plan.device ? plan.device->compute_capability() : o.arch;
  check_arch(plan.cc,
             plan.device ? fmt::format("device {} ({})", o.device, plan.device->name) : fmt::format("--arch {}", plan.cc));
  plan.limits = plan.device ? plan.device->limits() : DeviceLimits::for_arch(plan.cc);
}

}  // namespace

RunPlan plan_run(const TuneOptions& o, const ShapeResolution& item, const std::function<void(const std::string&)>& log,
                 const RunDevice* device) {
  const ProblemShape& at = item.get();
  // The data is drawn in the worker; a shape whose tensors cannot fit is refused before it starts.
  if (!o.compile_only) at.problem->check_host_memory(at.shape);
  RunPlan plan{device ? *device : open_run_device(o), item.at, at.problem, at.space, at.shape, at.counts};
  if (!plan.device_note.empty() && log) log(plan.device_note);
  check_device(o, plan);
  const std::string gpu_dir = !plan.device           ? "compile-only-" + arch_name(plan.cc)
                              : o.device_dir.empty() ? plan.device->slug()
                                                     : o.device_dir;
  plan.json_path = results_path(o, std::string(plan.problem->name()), plan.shape, gpu_dir);
  plan.partial_path = partial_results_path(plan.json_path);
  return plan;
}

}  // namespace tune

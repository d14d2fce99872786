// A run's plan, resolved once (tune/run_plan.hpp).
#include "tune/run_plan.hpp"

#include <fmt/format.h>

#include "run/run_common.hpp"
#include "tune/compile.hpp"
#include "tune/errors.hpp"
#include "tune/measure.hpp"
#include "tune/sweep.hpp"
#include "tune/worker_protocol.hpp"

namespace tune {
namespace {

// The device, or the compile-only sweep without one; the note that says which is logged first.
void open_device(const TuneOptions& o, RunPlan& plan, const std::function<void(const std::string&)>& log) {
  std::string why;
  plan.compile_only = o.compile_only;
  plan.fake = !plan.compile_only && worker_fake_mode();
  if (plan.fake) {
    plan.device = fake_device(o.arch, o.device);
    plan.device_note = "TUNE_WORKER_FAKE: a synthetic device; the worker returns made-up results and measures nothing";
  } else if (!plan.compile_only) {
    plan.device = query_device(o.device, &why);
    if (!plan.device) {  // said first; how many variants and how long once they are counted (say_compile_only)
      plan.device_note =
          fmt::format("no CUDA device ({}): a compile-only sweep for {} instead: every variant compiled, nothing timed{}",
                      why, arch_name(o.arch),
                      o.budget > 0 ? "" : fmt::format("; pass --budget {} to compile a sample", kSuggestedSample));
      plan.compile_only = true;
      plan.untimed_reason = "no CUDA device: " + why;
    }
  } else {
    plan.untimed_reason = "--compile-only";
  }
  if (!plan.device_note.empty() && log) log(plan.device_note);
}

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

std::filesystem::path results_path(const TuneOptions& o, const std::string& problem, const Shape& shape,
                                   const std::string& gpu_dir) {
  return o.out_dir / gpu_dir / problem / (result_stem(shape, o.shard) + ".json");
}

RunPlan plan_run(const TuneOptions& o, const ShapeResolution& item, const std::function<void(const std::string&)>& log) {
  const ProblemShape& at = item.get();
  // The data is drawn in the worker; a shape whose tensors cannot fit is refused before it starts.
  if (!o.compile_only) at.problem->check_host_memory(at.shape);
  RunPlan plan{item.at, at.problem, at.space, at.shape};
  plan.counts = plan.problem->counts(plan.shape);
  open_device(o, plan, log);
  check_device(o, plan);
  const std::string gpu_dir = !plan.device           ? "compile-only-" + arch_name(plan.cc)
                              : o.device_dir.empty() ? plan.device->slug()
                                                     : o.device_dir;
  plan.json_path = results_path(o, std::string(plan.problem->name()), plan.shape, gpu_dir);
  plan.partial_path = partial_results_path(plan.json_path);
  return plan;
}

}  // namespace tune

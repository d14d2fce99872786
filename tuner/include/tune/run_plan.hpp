#pragma once
// A run's plan (issue 38): what a run of one shape is, built once from its options and the shape's
// resolution (the tune's plan resolved it, tune/sweep_plan.hpp) and passed by const& to every phase
// and to the baseline's early compile: the problem, its space, the shape (dtypes bound), the device
// and the limits lowering uses, and where the results go. Nothing downstream looks the problem or
// the shape up again.
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "tune/device.hpp"
#include "tune/problem.hpp"
#include "tune/problem_space.hpp"
#include "tune/shape.hpp"
#include "tune/space.hpp"
#include "tune/tune.hpp"

namespace tune {

// The device a run times on, a fake one (TUNE_WORKER_FAKE), or none (compile-only): opened once
// per run, or once for a sweep's early baseline compiles.
struct RunDevice {
  std::optional<DeviceInfo> device;
  bool compile_only = false, fake = false;
  std::string untimed_reason;  // why nothing is timed ("" in a timed run)
  std::string device_note;     // the line that says what the device is, when it is not a plain one
};
// o's device (--device, --arch, --compile-only), or the compile-only sweep when none answers.
RunDevice open_run_device(const TuneOptions& o);

struct RunPlan : RunDevice {
  std::shared_ptr<const ProblemShape> at;  // the shape's resolution (resolve_item), shared with its sweep
  const Problem* problem = nullptr;        // owned by the problem registry
  const Space& space;
  const Shape& shape;
  const WorkCounts& counts;  // the shape's flop and bytes, counted with its resolution
  int cc = 0;                // the compute capability compiled for
  DeviceLimits limits;       // the device's own, or --arch's without one: what every variant is lowered for
  // <out>/<gpu dir>/<problem>/<shape stem>.json and its snapshot (<shape stem>.json.partial).
  std::filesystem::path json_path, partial_path;
};

// The results file of `shape` of `problem` in device folder `gpu_dir` under options.out_dir.
std::filesystem::path results_path(const TuneOptions& o, const std::string& problem, const Shape& shape,
                                   const std::string& gpu_dir);

// The plan of o's run of `item` (resolved once, when the tune was planned; its error is thrown
// here): the host memory the shape's tensors need checked, the device queried (a fake one under TUNE_WORKER_FAKE, none with
// --compile-only or when none answers: then a compile-only sweep), the shape's device memory and the
// arch checked, the limits and the results path. `log` gets the device note as it is found.
// Throws InputError / ConfigError / ShapeError / DeviceError.
// `device`: the device already opened for this run (a sweep opens it once for all its shapes);
// nullptr opens o's.
RunPlan plan_run(const TuneOptions& o, const ShapeResolution& item, const std::function<void(const std::string&)>& log,
                 const RunDevice* device = nullptr);

// The compile request of the plan's baseline, lowered for the plan's limits, for a sweep to compile
// ahead of its turn into the compile cache; nullopt when the baseline is not valid there (the run
// itself says why).
std::optional<CompileRequest> baseline_request(const RunPlan& plan);

}  // namespace tune

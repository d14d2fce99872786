#pragma once
// The tune pipeline end to end: space -> lower -> compile (all cores) -> parity -> timing ->
// results JSON (written as the run goes) -> header.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tune/compile.hpp"
#include "tune/io.hpp"
#include "tune/problem_space.hpp"
#include "tune/record.hpp"
#include "tune/run_options.hpp"
#include "tune/sampling.hpp"
#include "tune/shape.hpp"
#include "tune/space.hpp"
#include "tune/stop.hpp"
#include "tune/torch_compare.hpp"
#include "tune/winner.hpp"

namespace tune {

struct RunDevice;  // tune/run_plan.hpp

struct TuneOutcome {
  RunRecord run;
  std::filesystem::path json_path;
  std::optional<std::filesystem::path> header_path;
  // Nonzero when the gate could not run and no unchecked finalist may win: 2 (the problem is at
  // fault) or 3 (the sanitizer or the device); run.context.gate.could_not_run says why.
  int gate_exit_code = 0;
  // --resume found the shape's results complete for this run's identity: nothing ran, `run` is
  // what json_path holds.
  bool already_complete = false;
};

// Throws InputError / ConfigError / ShapeError / DeviceError for what a user must fix,
// before anything is measured where possible. The first SIGINT or SIGTERM during a run stops it
// after the variant in hand (context.interrupted); a second one ends the process.
// `shape` is the run's problem, space and shape, resolved once when the tune was planned
// (resolve_item): options.problem, .config and .dims are not looked up again. `device`: the device
// a sweep opened once for all its shapes (open_run_device, tune/run_plan.hpp); nullptr opens
// options.device.
TuneOutcome run_tune(const TuneOptions& options, const ShapeResolution& shape, const RunDevice* device = nullptr);

// `tune header`: reads the result files (one problem) and returns the merged header
// (generate_merged_header) against the given or the embedded space. Throws InputError.
// Synthetic results (measured_on_gpu false) are refused unless allow_synthetic. `note` gets a line
// per record tuned on other kernel sources than the problem's now (changed since the tune).
std::string merge_result_files(const std::vector<std::filesystem::path>& files,
                               const std::optional<std::filesystem::path>& config, bool allow_synthetic = false,
                               const std::function<void(const std::string&)>& note = {});

// prefix + name + detail + tail in at most `width` columns (0: no limit), for a terminal: the name
// is cut first (ending in "...", to no fewer than 20 columns), then the detail is left out and the
// name cut to what is left; a line whose prefix and tail alone do not fit is cut at the width.
std::string fit_line(const std::string& prefix, const std::string& name, const std::string& detail, const std::string& tail,
                     std::size_t width);
}  // namespace tune

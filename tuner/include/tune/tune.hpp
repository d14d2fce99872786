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

// One writer per results file. Two runs of one shape on one --out would truncate each other's
// journal and results, and tune merge --out or tune check --write would be overwritten by a running
// tune (issue 34 #25); the second is refused in one line that names the first. The lock is flock(2)
// on "<shape>.lock" beside the results (released by the kernel however the holder ends), the
// holder's pid in it; the file is removed when the holder ends. Throws InputError
// "another tune (pid N) is writing FILE; <remedy>".
class ResultsLock {
 public:
  explicit ResultsLock(const std::filesystem::path& results,
                       const std::string& remedy = "wait for it to finish, or pass another --out");
  ~ResultsLock();
  ResultsLock(const ResultsLock&) = delete;
  ResultsLock& operator=(const ResultsLock&) = delete;

 private:
  std::filesystem::path path_;
  int fd_ = -1;
};

// The compile request of a lowered variant: its template and headers, its name expressions in
// launch order, and the options.
CompileRequest compile_request(const Lowered& lowered, std::vector<std::string> options);

// `tune header`: reads the result files (one problem) and returns the merged header
// (generate_merged_header) against the given or the embedded space. Throws InputError.
// Synthetic results (measured_on_gpu false) are refused unless allow_synthetic.
std::string merge_result_files(const std::vector<std::filesystem::path>& files,
                               const std::optional<std::filesystem::path>& config, bool allow_synthetic = false);

// prefix + name + detail + tail in at most `width` columns (0: no limit), for a terminal: the name
// is cut first (ending in "...", to no fewer than 20 columns), then the detail is left out and the
// name cut to what is left; a line whose prefix and tail alone do not fit is cut at the width.
std::string fit_line(const std::string& prefix, const std::string& name, const std::string& detail, const std::string& tail,
                     std::size_t width);
// Where a run keeps its snapshot while it goes (<shape>.json.partial beside <shape>.json): the
// results file and its header are replaced only when the run ends with a record at least as good
// as theirs (a winner beats no variant passed, which beats an interrupted run; of two interrupted
// runs, the one that recorded more variants), so a re-run that dies or is cut short leaves the
// earlier pair as it was, and its own record here.
std::filesystem::path partial_results_path(const std::filesystem::path& json_path);

}  // namespace tune

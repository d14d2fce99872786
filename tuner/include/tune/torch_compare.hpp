#pragma once
// The problem's PyTorch module timed beside the tune (issue 36): make_model of its reference.py, at
// the run's shape, on the run's own timing inputs, eager and under torch.compile, by the harness of
// report/torch_baseline.py (--one) in a process of its own after the search and the gate, on the
// run's device. Cached beside the compile cache (<cache>/torch/) per device model, torch version,
// problem (problem.json and reference.py bytes), shape with dtypes, seed, modes, TF32 and harness.
// docs/cli.md (--torch), docs/results-format.md ("torch").
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tune/device.hpp"
#include "tune/record.hpp"
#include "tune/shape.hpp"

namespace tune {

class Problem;

// --torch: which ways of running the module are timed.
enum class TorchModes { kOff, kEager, kCompile, kAll };
std::string to_string(TorchModes modes);
TorchModes torch_modes_from_string(const std::string& text);  // throws InputError
std::vector<std::string> torch_mode_names();                  // off, eager, compile, all

struct TorchCompare {
  TorchModes modes = TorchModes::kAll;
  int device = 0;                   // the run's device ordinal (CUDA's order, as the worker's)
  std::uint64_t seed = 0;           // the run's seed: its timing draw is what the module is fed
  std::filesystem::path cache_dir;  // empty: no cache (--no-cache)
  bool fake_device = false;         // TUNE_WORKER_FAKE: PyTorch is not run unless a harness is named
  // Where a file appears when the module may be timed (TorchBeside), or empty: timed at once. The
  // harness prepares first (imports, builds, torch.compile's compile and first call), then waits.
  std::filesystem::path hold;
  // Set: the harness is stopped, nothing timed (a TorchBeside dropped without wait(): the run ends
  // otherwise, as when the gate throws).
  const std::atomic<bool>* cancel = nullptr;
};

// The cache's folder inside a compile cache's; empty with no_cache.
std::filesystem::path torch_cache_for(bool no_cache, const std::optional<std::filesystem::path>& cache_dir);

// Times the module (or finds the earlier measurement in the cache) and says so in one line through
// log. Never throws: a module that cannot be timed is "skipped" with the reason (no reference.py,
// no make_model, torch not installed, no CUDA device), a harness that fails or runs past its
// deadline is "failed" with its last line. The harness: $TUNE_TORCH_HARNESS, else tune's own
// report/torch_baseline.py; run with $TUNE_PYTHON (default python3), the reference's Python; its
// deadline $TUNE_TORCH_TIMEOUT seconds (default 900).
TorchRecord time_torch_module(const Problem& problem, const Shape& shape, const DeviceInfo& device,
                              const TorchCompare& options, const std::function<void(const std::string&)>& log);

// The module timed on a thread of its own beside device work that times nothing (the correctness
// gate, issue 37; a later gate round that re-measures calls quiet() first): the harness prepares at once (torch's import, the inputs, torch.compile's compile,
// minutes of CPU at a large module) and times only after release(), so nothing is timed while the
// device is shared. held_s of the record: how long the harness waited, the wall the work beside it
// added to the run's (0 when it was done first).
class TorchBeside {
 public:
  TorchBeside(const Problem& problem, const Shape& shape, const DeviceInfo& device, TorchCompare options,
              std::function<void(const std::string&)> log);
  ~TorchBeside();  // without wait(): the harness stopped and joined, never left waiting, nothing timed
  TorchBeside(const TorchBeside&) = delete;
  TorchBeside& operator=(const TorchBeside&) = delete;
  void quiet();        // returns once the harness waits (its preparation done) or has ended
  void release();      // the device is the module's now
  TorchRecord wait();  // released first

 private:
  std::filesystem::path go_;
  TorchRecord record_;
  std::atomic<bool> done_{false};
  std::atomic<bool> cancelled_{false};
  std::jthread thread_;
  bool released_ = false;
};

// The winner against the module, graph against graph (the winner's graph_mean_us over the module's
// CUDA-graph median): "4.70x over torch.compile (graph 25.40 us against the winner's 5.40 us)",
// then ", ..." eager the same way; "" when the run has no winner with a graph time or no module times.
std::string torch_comparison(const RunRecord& run);

}  // namespace tune

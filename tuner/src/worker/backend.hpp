#pragma once
// What a worker process runs its requests on (worker_server.cpp speaks the protocol): the device
// (device_backend.cpp), a fake one that measures nothing (TUNE_WORKER_FAKE, fake_backend.cpp), and
// injected faults around either (TUNE_WORKER_FAULT, fault_injection.cpp). docs/testing.md lists
// the environment hooks.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/enum_names.hpp"
#include "tune/compile.hpp"
#include "tune/measure.hpp"
#include "tune/problem.hpp"
#include "tune/record.hpp"

namespace tune {

// TUNE_WORKER_FAULT's kinds (docs/testing.md): how a fault injected into a variant strikes. A
// sanitizer's name makes the fake sanitizer report the variant under that tool.
enum class InjectedFault {
  kSegv,
  kAbort,
  kHang,
  kCuda,
  kTrap,
  kSpin,
  kEdge,
  kFlaky,
  kMemcheck,
  kRacecheck,
  kSynccheck,
  kInitcheck,
  kGateError
};
inline constexpr EnumName<InjectedFault> kInjectedFaultNames[] =
    {{InjectedFault::kSegv, "segv"},           {InjectedFault::kAbort, "abort"},
     {InjectedFault::kHang, "hang"},           {InjectedFault::kCuda, "cuda"},
     {InjectedFault::kTrap, "trap"},           {InjectedFault::kSpin, "spin"},
     {InjectedFault::kEdge, "edge"},           {InjectedFault::kFlaky, "flaky"},
     {InjectedFault::kMemcheck, "memcheck"},   {InjectedFault::kRacecheck, "racecheck"},
     {InjectedFault::kSynccheck, "synccheck"}, {InjectedFault::kInitcheck, "initcheck"},
     {InjectedFault::kGateError, "gate_error"}};

// What an init request sets up.
struct WorkerSetup {
  const Problem* problem = nullptr;
  Shape shape;
  std::uint64_t seed = 0, parity_seed = 0;
  int device = 0;
  bool with_reference = true;
  bool check_reference = false;  // reference.py run twice on the parity data, compared bitwise
  std::string sanitizer_tool, sanitizer_log;
  std::int64_t max_smem_per_block = 0;  // WorkerInit's: the limit a fake device has (0: none known)
};

// The items of a request: their CUBINs (the attachments), launches and records.
struct WorkerItems {
  std::vector<CompileResult> compiled;
  std::vector<Lowered> lowered;
  std::vector<VariantRecord> records;
};

// One input of the gate's parity checks: a further seed or one of the problem's edge cases.
struct WorkerGateInput {
  std::string name;
  std::uint64_t seed;
  ProblemData data;
  OutputValues reference;              // its reference (an int64 output's integers exactly)
  double reference_s = 0;              // wall of its reference (the inputs' run side by side)
  std::optional<double> module_error;  // the module's own error in the output's dtype (module rule)
};

// Where a backend announces the phase it enters with an item (-1: none).
using PhaseSink = std::function<void(const std::string& phase, int item)>;

class WorkerBackend {
 public:
  virtual ~WorkerBackend() = default;
  virtual void on_phase(PhaseSink sink) = 0;
  // Returns how the reference ran ("" when it did not).
  virtual std::string init(const WorkerSetup& setup) = 0;
  // Where init's seconds went, by part (the gate's context.gate.parts_s); none by default.
  [[nodiscard]] virtual std::vector<std::pair<std::string, double>> init_seconds() const { return {}; }
  virtual HarnessFloor floor() = 0;
  // Fills the items' records: one variant (the search), or all in rounds (the strict re-measure).
  virtual void measure(WorkerItems& items, const DeviceRunner::Options& options, bool remeasure) = 0;
  // The gate's checks that need no sanitizer; `seeds` inputs come first, then the edge cases.
  virtual std::vector<GateRecord> gate(WorkerItems& items, std::vector<WorkerGateInput>& inputs, std::size_t seeds,
                                       int rounds) = 0;
  // One launch of item `i` (under compute-sanitizer): {"hash": ...} or {"error": ...}, and whether
  // its fault was sticky (the worker's context is lost).
  struct Sanitized {
    nlohmann::ordered_json result;
    bool sticky = false;
  };
  virtual Sanitized sanitize(WorkerItems& items, std::size_t i) = 0;
  // TUNE_WORKER_FAULT: makes item `i` of the request in hand fault as `kind` says, if this backend
  // can (fault_injection.cpp calls it before the request).
  virtual void inject(WorkerItems& items, std::size_t i, InjectedFault kind) = 0;
  virtual void quit() {}
};

std::unique_ptr<WorkerBackend> make_device_backend();
std::unique_ptr<WorkerBackend> make_fake_backend();
// `inner` with TUNE_WORKER_FAULT's faults injected; `inner` itself when there are none.
std::unique_ptr<WorkerBackend> with_injected_faults(std::unique_ptr<WorkerBackend> inner);

}  // namespace tune

// TUNE_WORKER_FAULT (docs/testing.md): faults injected into the variants whose names hold a
// substring, around any backend. The process faults (segv, abort, hang) strike right after the
// phase they belong to is announced; the others are the backend's to stage (inject).
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>

#include <fmt/format.h>

#include "tune/errors.hpp"
#include "worker/backend.hpp"
#include "worker/codec.hpp"

namespace tune {

using Json = nlohmann::ordered_json;

namespace {

// The faults each request stages in the backend.
constexpr InjectedFault kKernelFaults[] = {InjectedFault::kCuda, InjectedFault::kTrap, InjectedFault::kSpin};
constexpr InjectedFault kGateFaults[] = {InjectedFault::kEdge, InjectedFault::kFlaky};
constexpr InjectedFault kSanitizerFaults[] = {InjectedFault::kMemcheck, InjectedFault::kRacecheck, InjectedFault::kSynccheck,
                                              InjectedFault::kInitcheck};

struct Fault {
  std::string substring;
  InjectedFault kind;
  bool at_remeasure = false;
};

std::vector<Fault> parse_faults() {
  std::vector<Fault> out;
  const char* spec = worker_env("TUNE_WORKER_FAULT");
  if (!spec) return out;
  const std::string s = spec;
  for (std::size_t pos = 0; pos <= s.size();) {
    std::size_t end = s.find(';', pos);
    if (end == std::string::npos) end = s.size();
    const std::string entry = s.substr(pos, end - pos);
    pos = end + 1;
    const auto eq = entry.rfind('=');
    if (eq == std::string::npos) continue;
    std::string kind = entry.substr(eq + 1);
    bool at_remeasure = false;
    if (const auto at = kind.find('@'); at != std::string::npos) {
      at_remeasure = kind.substr(at + 1) == "remeasure";
      kind.resize(at);
    }
    // A kind of no known name strikes nowhere.
    if (const auto k = enum_value(kInjectedFaultNames, kind)) out.push_back({entry.substr(0, eq), *k, at_remeasure});
  }
  return out;
}

class FaultInjection final : public WorkerBackend {
 public:
  FaultInjection(std::unique_ptr<WorkerBackend> inner, std::vector<Fault> faults)
      : inner_(std::move(inner)), faults_(std::move(faults)) {}

  void on_phase(PhaseSink sink) override {
    inner_->on_phase([this, sink = std::move(sink)](const std::string& phase, int item) {
      sink(phase, item);
      strike(phase, item);
    });
  }

  std::string init(const WorkerSetup& setup) override { return inner_->init(setup); }
  HarnessFloor floor() override { return inner_->floor(); }

  void measure(WorkerItems& items, const DeviceRunner::Options& options, bool remeasure) override {
    begin(items, remeasure);
    // KIND@remeasure: the variant's kernels fault from the re-measure's warm-up on.
    const std::size_t n = remeasure ? items.records.size() : 1;
    for (std::size_t i = 0; i < n; ++i) stage(items, i, kKernelFaults);
    inner_->measure(items, options, remeasure);
  }

  std::vector<GateRecord> gate(WorkerItems& items, std::vector<WorkerGateInput>& inputs, std::size_t seeds,
                               int rounds) override {
    begin(items, false);
    // gate_error: the output checks fail as a problem's reference that fails on an edge case does.
    for (const auto& name : names_)
      if (fault_for(name, InjectedFault::kGateError))
        throw InputError(fmt::format("the reference failed on the edge cases of {} (injected by TUNE_WORKER_FAULT)", name));
    for (std::size_t i = 0; i < items.records.size(); ++i) stage(items, i, kGateFaults);
    return inner_->gate(items, inputs, seeds, rounds);
  }

  Sanitized sanitize(WorkerItems& items, std::size_t i) override {
    if (i == 0) begin(items, false);
    stage(items, i, kSanitizerFaults);
    return inner_->sanitize(items, i);
  }

  void inject(WorkerItems& items, std::size_t i, InjectedFault kind) override { inner_->inject(items, i, kind); }
  void quit() override { inner_->quit(); }

 private:
  void begin(const WorkerItems& items, bool remeasure) {
    remeasuring_ = remeasure;
    names_.clear();
    for (const auto& r : items.records) names_.push_back(r.name);
  }

  template <std::size_t N>
  void stage(WorkerItems& items, std::size_t i, const InjectedFault (&kinds)[N]) {
    for (const InjectedFault kind : kinds)
      if (fault_for(names_.at(i), kind)) inner_->inject(items, i, kind);
  }

  [[nodiscard]] const Fault* fault_for(const std::string& name, InjectedFault kind) const {
    for (const Fault& f : faults_)
      if (f.kind == kind && f.at_remeasure == remeasuring_ && name.find(f.substring) != std::string::npos) return &f;
    return nullptr;
  }

  // The process faults strike right after a phase: parity in the search, load in the re-measure.
  void strike(const std::string& phase, int item) const {
    const bool strike_evaluate = !remeasuring_ && phase == "parity";
    const bool strike_remeasure = remeasuring_ && phase == "load" && item >= 0;
    const auto k = static_cast<std::size_t>(std::max(item, 0));
    if ((!strike_evaluate && !strike_remeasure) || k >= names_.size()) return;  // e.g. the floor's empty kernel
    const std::string& name = names_[k];
    for (const Fault& f : faults_) {
      if (name.find(f.substring) == std::string::npos || f.at_remeasure != remeasuring_) continue;
      if (f.kind == InjectedFault::kSegv || f.kind == InjectedFault::kAbort) {
        const rlimit no_core{0, 0};
        setrlimit(RLIMIT_CORE, &no_core);
        if (f.kind == InjectedFault::kAbort) std::abort();
        std::signal(SIGSEGV, SIG_DFL);
        std::raise(SIGSEGV);
      }
      if (f.kind == InjectedFault::kHang)
        for (;;) pause();
    }
  }

  std::unique_ptr<WorkerBackend> inner_;
  std::vector<Fault> faults_;
  std::vector<std::string> names_;  // of the items in hand
  bool remeasuring_ = false;
};

}  // namespace

std::unique_ptr<WorkerBackend> with_injected_faults(std::unique_ptr<WorkerBackend> inner) {
  std::vector<Fault> faults = parse_faults();
  if (faults.empty()) return inner;
  return std::make_unique<FaultInjection>(std::move(inner), std::move(faults));
}

}  // namespace tune

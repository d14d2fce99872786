// The worker's backend on a real device: a DeviceRunner on the device the init request names.
#include <chrono>
#include <future>
#include <optional>
#include <stdexcept>

#include "cuda/driver.hpp"
#include "tune/device.hpp"
#include "tune/errors.hpp"
#include "worker/backend.hpp"

namespace tune {

using Json = nlohmann::ordered_json;

namespace {

class DeviceBackend final : public WorkerBackend {
 public:
  void on_phase(PhaseSink sink) override { phase_ = std::move(sink); }

  std::string init(const WorkerSetup& s) override {
    problem_ = s.problem;
    shape_ = s.shape;
    reference_ = reference_backend_from_env();
    std::string how, why;
    auto t = std::chrono::steady_clock::now();
    auto lap = [&](const char* part) {
      const auto now = std::chrono::steady_clock::now();
      init_seconds_.emplace_back(part, std::chrono::duration<double>(now - t).count());
      t = now;
    };
    init_seconds_.clear();
    const auto info = query_device(s.device, &why);
    if (!info) throw DeviceError("no CUDA device in the worker: " + why);
    lap("device");
    // A worker that only launches (under a sanitizer) times nothing: no timing data to draw. The
    // timing data are drawn beside the parity data and their reference (issue 37).
    std::future<ProblemData> timing_draw;
    if (s.with_reference)
      timing_draw =
          std::async(std::launch::async, [&] { return problem_->make_data(shape_, s.seed, DataPurpose::kTiming); });
    const ProblemData parity = problem_->make_data(shape_, s.parity_seed, DataPurpose::kParity);
    OutputValues reference;
    std::vector<double> module;
    if (s.with_reference) reference = problem_->reference(shape_, parity, reference_, &how, &module);
    if (s.with_reference && s.check_reference) problem_->check_reference_repeats(shape_, parity, reference_, reference);
    const std::optional<double> module_err = module_error(module, reference.values());
    ProblemData timing = timing_draw.valid() ? timing_draw.get() : ProblemData{};
    lap("data");
    runner_.emplace(*info, *problem_, shape_, std::move(timing), parity, std::move(reference), s.parity_seed, module_err);
    lap("context");
    runner_->on_phase([this](const std::string& phase, int item) { phase_(phase, item); });
    device_cc_ = info->compute_capability();
    return how;
  }

  [[nodiscard]] std::vector<std::pair<std::string, double>> init_seconds() const override { return init_seconds_; }

  HarnessFloor floor() override { return runner_->measure_floor(); }

  void measure(WorkerItems& it, const DeviceRunner::Options& options, bool remeasure) override {
    if (!remeasure) {
      runner_->evaluate(it.compiled[0], it.lowered[0], it.records[0], options);
      return;
    }
    std::vector<const CompileResult*> c;
    std::vector<VariantRecord*> p;
    for (std::size_t i = 0; i < it.records.size(); ++i) {
      c.push_back(&it.compiled[i]);
      p.push_back(&it.records[i]);
    }
    runner_->remeasure_in_rounds(c, it.lowered, p, options);
  }

  std::vector<GateRecord> gate(WorkerItems& it, std::vector<WorkerGateInput>& inputs, std::size_t /*seeds*/,
                               int rounds) override {
    // The server filled in each input's reference and module error (reference_gate_inputs).
    std::vector<DeviceRunner::GateInput> gi;
    for (const auto& in : inputs) gi.push_back({in.name, in.seed, &in.data, &in.reference, in.module_error});
    std::vector<GateRecord> gates(it.records.size());
    std::vector<const CompileResult*> c;
    std::vector<GateRecord*> out;
    std::vector<std::string> hashes;
    for (std::size_t i = 0; i < it.records.size(); ++i) {
      c.push_back(&it.compiled[i]);
      out.push_back(&gates[i]);
      hashes.push_back(it.records[i].parity ? it.records[i].parity->output_hash : std::string());
    }
    runner_->gate(c, it.lowered, out, hashes, gi, rounds, problem_->deterministic());
    return gates;
  }

  Sanitized sanitize(WorkerItems& it, std::size_t i) override {
    try {
      return {Json{{"hash", runner_->launch_for_sanitizer(it.compiled[i], it.lowered[i], static_cast<int>(i))}}};
    } catch (const cuda::CudaError& e) {
      return {Json{{"error", e.name()}}, e.sticky()};
    }
  }

  // TUNE_WORKER_FAULT=...=cuda|trap|spin on a device: every launch of the variant runs a kernel
  // that writes out of bounds (address 8: CUDA_ERROR_ILLEGAL_ADDRESS), executes `trap`
  // (CUDA_ERROR_LAUNCH_FAILED), or spins forever (the deadline kills the worker). Extra kernel
  // arguments are ignored.
  void inject(WorkerItems& it, std::size_t i, InjectedFault kind) override {
    if (kind != InjectedFault::kCuda && kind != InjectedFault::kTrap && kind != InjectedFault::kSpin) return;
    // The spin reads a global the host could change, so the compiler cannot drop the loop.
    const char* body = kind == InjectedFault::kTrap   ? "asm volatile(\"trap;\");"
                       : kind == InjectedFault::kSpin ? "while (*(volatile int*)&tune_spin_flag == I) __nanosleep(1000);"
                                                      : "*(volatile int*)8 = I;";
    const CompileRequest req{std::string("__device__ int tune_spin_flag = 1;\n"
                                         "template <int I> __global__ void tune_fault() { ") +
                                 body + " }",
                             "tune_fault.cu",
                             {"tune_fault<1>"},
                             default_options(device_cc_)};
    CompileResult c = compile(req);
    if (!c.ok) throw std::runtime_error("the fault-injection kernel did not compile: " + c.log);
    c.lowered_names.assign(it.lowered[i].launches.size(), c.lowered_names.at(0));
    it.compiled[i] = std::move(c);
  }

 private:
  std::vector<std::pair<std::string, double>> init_seconds_;
  PhaseSink phase_;
  const Problem* problem_ = nullptr;
  Shape shape_;
  ReferenceBackend reference_ = ReferenceBackend::kAuto;
  int device_cc_ = 90;
  std::optional<DeviceRunner> runner_;
};

}  // namespace

std::unique_ptr<WorkerBackend> make_device_backend() { return std::make_unique<DeviceBackend>(); }

}  // namespace tune

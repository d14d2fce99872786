// TUNE_WORKER_FAKE's backend: no kernel runs; every variant passes parity with a synthetic timing
// drawn from its name, and injected faults (TUNE_WORKER_FAULT) turn into the records and
// sanitizer reports a device would have produced. docs/testing.md lists the hooks.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "tune/errors.hpp"
#include "tune/measure.hpp"
#include "tune/worker_protocol.hpp"
#include "worker/backend.hpp"
#include "worker/codec.hpp"

namespace tune {

using Json = nlohmann::ordered_json;

namespace {

// Device `ordinal`'s value of a hook that lists one positive integer per fake device
// ("108,114,58"; the last stands for the devices after it), or `fallback` when it is not set.
std::int64_t fake_device_value(const char* hook, int ordinal, std::int64_t fallback, std::int64_t most) {
  const char* v = worker_env(hook);
  if (!v) return fallback;
  std::vector<std::int64_t> values;
  const std::string text = v;
  for (std::size_t pos = 0; pos <= text.size();) {
    const std::size_t end = std::min(text.find(',', pos), text.size());
    const std::string item = text.substr(pos, end - pos);
    const bool digits = !item.empty() && item.size() <= 12 && item.find_first_not_of("0123456789") == std::string::npos;
    const std::int64_t x = digits ? std::stoll(item) : 0;
    if (x < 1 || x > most)
      throw InputError(fmt::format("{}={}: '{}' is not an integer from 1 to {}; give one per fake device, comma-separated",
                                   hook, text, item, most));
    values.push_back(x);
    pos = end + 1;
  }
  return values[std::min(static_cast<std::size_t>(std::max(ordinal, 0)), values.size() - 1)];
}

std::uint64_t fnv1a(const std::string& s) {
  std::uint64_t h = 1469598103934665603ull;
  for (const char c : s) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return h;
}

class FakeBackend final : public WorkerBackend {
 public:
  void on_phase(PhaseSink sink) override { phase_ = std::move(sink); }

  std::string init(const WorkerSetup& s) override {
    if (fake_failing_device() == s.device)
      throw DeviceError(fmt::format("cannot initialise device {} (injected by TUNE_WORKER_FAKE_FAIL_DEVICE)", s.device));
    problem_ = s.problem;
    shape_ = s.shape;
    // A card refuses a launch of more shared memory than it has: so does a fake device, of
    // TUNE_WORKER_FAKE_SMEM or else of the arch it claims (the run's limits), so that a fake run
    // records launch_failed where the card would, as a compile-only run does.
    const std::int64_t claimed = s.max_smem_per_block > 0 ? s.max_smem_per_block : INT64_MAX;
    max_smem_ = fake_device_value("TUNE_WORKER_FAKE_SMEM", s.device, claimed, 1 << 30);
    parity_seed_ = s.parity_seed;
    const ReferenceBackend backend = reference_backend_from_env();
    sanitizer_tool_ = s.sanitizer_tool;
    sanitizer_log_ = s.sanitizer_log;
    log_niceness(s);
    std::string how;
    // A fake sanitizer's worker prepares nothing. Otherwise no kernel runs, but the data and the
    // reference do: a problem whose reference fails (a Python error, a wrong output shape, a
    // non-finite value) fails a fake run too.
    // A low-precision output's module runs too (where reference.py has make_model and torch
    // imports): its error goes into every synthetic parity record.
    if (s.with_reference) {
      std::vector<double> module;
      const ProblemData parity = problem_->make_data(shape_, parity_seed_, DataPurpose::kParity);
      const OutputValues ref = problem_->reference(shape_, parity, backend, &how, &module);
      module_error_ = module_error(module, ref.values());
      if (s.check_reference) problem_->check_reference_repeats(shape_, parity, backend, ref);
    }
    return how;
  }

  HarnessFloor floor() override { return HarnessFloor{2.0, 1.5, 1.0}; }

  void measure(WorkerItems& it, const DeviceRunner::Options& options, bool remeasure) override {
    Consumed consumed{injected_};
    for (std::size_t i = 0; i < it.records.size(); ++i) {
      const int item = remeasure ? static_cast<int>(i) : 0;
      phase_("load", item);
      if (!remeasure) phase_("parity", item);
      VariantRecord& rec = it.records[i];
      if (injected(i, InjectedFault::kCuda)) {
        rec.status = Status::kCrashed;
        // The phase it strikes in: parity in the search, load in the strict re-measure (@remeasure).
        const char* phase = remeasure ? "load" : "parity";
        rec.reason = std::string("CUDA_ERROR_ILLEGAL_ADDRESS during ") + phase + " (injected by TUNE_WORKER_FAULT)";
        rec.fault = FaultRecord{FaultKind::kCudaError, "", "CUDA_ERROR_ILLEGAL_ADDRESS", phase, 0, 0};
        continue;
      }
      if (std::string why = launch_limits(it, i); !why.empty()) {
        rec.status = Status::kLaunchFailed;
        rec.reason = std::move(why);
        continue;
      }
      if (options.check_parity || !rec.parity) {
        rec.parity = fake_parity(parity_seed_);
      }
      phase_("timing", item);
      if (const char* ms = worker_env("TUNE_WORKER_FAKE_DELAY_MS"))
        std::this_thread::sleep_for(std::chrono::milliseconds(std::atoi(ms)));
      if (remeasure) rec.search_timing = rec.timing;
      rec.timing = fake_timing(rec.name, options, remeasure);
      rec.status = Status::kPassed;
      const WorkCounts w = problem_->counts(shape_);
      rec.gbytes_per_s = w.bytes / (rec.timing->median_us * 1e-6) / 1e9;
      rec.gflop_per_s = w.flop / (rec.timing->median_us * 1e-6) / 1e9;
    }
  }

  std::vector<GateRecord> gate(WorkerItems& it, std::vector<WorkerGateInput>& inputs, std::size_t seeds,
                               int rounds) override {
    Consumed consumed{injected_};
    std::vector<GateRecord> gates(it.records.size());
    for (std::size_t i = 0; i < it.records.size(); ++i) {
      phase_("gate", static_cast<int>(i));
      for (std::size_t k = 0; k < inputs.size(); ++k) {
        ParityRecord p = fake_parity(inputs[k].seed);
        // "edge": the first of the problem's edge cases fails (the seeds pass).
        if (injected(i, InjectedFault::kEdge) && k == seeds) {
          p.mismatches = p.elements;
          p.max_abs_error = 1.0;
          p.tolerance_passed = false;
          if (p.module_passed) p.module_passed = false;
        }
        gates[i].inputs.push_back({inputs[k].name, p});
      }
      const bool flaky = injected(i, InjectedFault::kFlaky);
      gates[i].launches = rounds + 1;
      gates[i].deterministic = !flaky;
      gates[i].determinism = flaky ? fmt::format("launch 2 of {} changed the output (injected by TUNE_WORKER_FAULT)", rounds)
                                   : "synthetic (TUNE_WORKER_FAKE): nothing was launched";
    }
    return gates;
  }

  Sanitized sanitize(WorkerItems& it, std::size_t i) override {
    Consumed consumed{injected_};
    phase_("sanitize", static_cast<int>(i));
    const auto tool = enum_value(kInjectedFaultNames, sanitizer_tool_);
    if (tool && injected(i, *tool)) write_fake_report(it.compiled[i].lowered_names.at(0));
    return {Json{{"hash", ""}}};
  }

  void inject(WorkerItems& /*items*/, std::size_t i, InjectedFault kind) override { injected_.emplace_back(i, kind); }

  void quit() override {
    if (sanitizer_log_.empty()) return;
    std::ofstream log(sanitizer_log_, std::ios::app);
    log << "========= ERROR SUMMARY: " << fake_reports_ << (fake_reports_ == 1 ? " error" : " errors") << "\n";
  }

 private:
  using Injected = std::vector<std::pair<std::size_t, InjectedFault>>;
  // The request's injected faults hold for that request only.
  struct Consumed {
    Injected& injected;
    ~Consumed() { injected.clear(); }
  };

  // As the device backend's check (DeviceRunner), from the ptxas report: threads (the block, its
  // registers) and static plus dynamic shared memory.
  [[nodiscard]] std::string launch_limits(const WorkerItems& it, std::size_t i) const {
    DeviceLimits limits;
    limits.max_smem_per_block = max_smem_;
    return launch_refusal(it.lowered.at(i), it.compiled.at(i).lowered_names, it.records[i].resources, limits);
  }

  [[nodiscard]] bool injected(std::size_t i, InjectedFault kind) const {
    return std::find(injected_.begin(), injected_.end(), std::pair(i, kind)) != injected_.end();
  }

  // A report in compute-sanitizer's format (names mangled, as --demangle no writes them), for the
  // tool this fake worker runs under.
  void write_fake_report(const std::string& kernel) {
    std::ofstream log(sanitizer_log_, std::ios::app);
    const std::string& t = sanitizer_tool_;
    if (t == "racecheck")
      log << "========= Error: Race reported between Write access at " << kernel << "+0x1f0 in contact.cuh:412\n"
          << "=========     and Read access at " << kernel << "+0x2a0 in contact.cuh:398 [1024 hazards]\n"
          << "=========\n";
    else if (t == "memcheck")
      log << "========= Invalid __global__ read of size 16 bytes\n"
          << "=========     at " << kernel << "+0x4c0 in contact.cuh:88\n"
          << "=========     by thread (31,0,0) in block (5,0,0)\n"
          << "=========     Address 0x7f3a00001000 is out of bounds\n"
          << "=========\n";
    else if (t == "synccheck")
      log << "========= Barrier error detected. Divergent thread(s) in warp\n"
          << "=========     at " << kernel << "+0x110 in contact.cuh:200\n"
          << "=========     by thread (3,0,0) in block (0,0,0)\n"
          << "=========\n";
    else
      log << "========= Uninitialized __global__ memory read of size 4 bytes\n"
          << "=========     at " << kernel << "+0x90 in contact.cuh:61\n"
          << "=========     by thread (0,0,0) in block (0,0,0)\n"
          << "=========     Address 0x7f3a00000000\n"
          << "=========\n";
    ++fake_reports_;
  }

  // A passing parity record of the problem's output and tolerance (nothing ran): an output equal to
  // the reference, judged by the rules of the output's dtype (the module rule with the module's real
  // error where it ran).
  [[nodiscard]] ParityRecord fake_parity(std::uint64_t seed) const {
    const Tolerance tol = problem_->tolerance(shape_);
    const OutputValues zero = OutputValues::of_doubles(tol.dtype, {0.0});
    ParityRecord p = judge_output(zero, zero, tol, module_error_);
    p.elements = problem_->output_spec(shape_).elements();
    p.seed = seed;
    return p;
  }

  [[nodiscard]] static TimingRecord fake_timing(const std::string& name, const DeviceRunner::Options& options,
                                                bool remeasure) {
    const double median = 20.0 + static_cast<double>(fnv1a(name) % 2000) / 100.0;
    TimingRecord t;
    t.profile = options.rule.profile + (remeasure ? "-rounds" : "");
    t.samples = options.rule.min_samples;
    t.min_us = t.q1_us = t.median_us = t.mean_us = t.q3_us = t.max_us = median;
    t.stop_reason = "synthetic (TUNE_WORKER_FAKE): nothing was measured";
    t.gpu_seconds = median * 1e-6 * t.samples;
    t.batch_launches = options.batch_launches;
    t.batch_mean_us = median * 0.9;
    t.graph_mean_us = median * 0.8;
    return t;
  }

  PhaseSink phase_;
  const Problem* problem_ = nullptr;
  std::optional<double> module_error_;  // the module's own error on the parity data (low precision)
  Shape shape_;
  std::uint64_t parity_seed_ = 0;
  std::int64_t max_smem_ = INT64_MAX;
  // TUNE_WORKER_FAKE_NICE_LOG=FILE: each worker appends its role (the search's, the gate's output
  // checks', or its sanitizer tool) and the niceness it was started at.
  static void log_niceness(const WorkerSetup& s) {
    const char* file = worker_env("TUNE_WORKER_FAKE_NICE_LOG");
    if (!file) return;
    const std::string role = !s.sanitizer_tool.empty() ? s.sanitizer_tool : s.with_reference ? "search" : "outputs";
    std::ofstream(file, std::ios::app) << role << ' ' << getpriority(PRIO_PROCESS, 0) << '\n';
  }

  std::string sanitizer_tool_, sanitizer_log_;
  int fake_reports_ = 0;
  Injected injected_;
};

}  // namespace

std::unique_ptr<WorkerBackend> make_fake_backend() { return std::make_unique<FakeBackend>(); }

bool worker_fake_mode() {
  const char* v = worker_env("TUNE_WORKER_FAKE");
  return v && std::string(v) != "0";
}

std::vector<std::string> worker_test_hooks() {
  std::vector<std::string> out;
  for (const char* name :
       {"TUNE_WORKER_FAKE", "TUNE_WORKER_FAKE_DELAY_MS", "TUNE_WORKER_FAULT", "TUNE_WORKER_FAKE_DEVICES",
        "TUNE_WORKER_FAKE_FAIL_DEVICE", "TUNE_WORKER_FAKE_SMS", "TUNE_WORKER_FAKE_SMEM", "TUNE_WORKER_FAKE_NICE_LOG"})
    if (const char* v = worker_env(name)) out.push_back(std::string(name) + "=" + v);
  return out;
}

int fake_device_count() {
  const char* v = worker_env("TUNE_WORKER_FAKE_DEVICES");
  return v ? std::max(0, std::atoi(v)) : 1;
}

std::optional<int> fake_failing_device() {
  const char* v = worker_env("TUNE_WORKER_FAKE_FAIL_DEVICE");
  return v ? std::optional(std::atoi(v)) : std::nullopt;
}

DeviceInfo fake_device(int compute_capability, int ordinal) {
  // The arch's compile-only limits, or the SM count and shared memory the hooks give this device:
  // a fake device of other limits than sm_90's is lowered for, and checked against, its own.
  DeviceLimits l = DeviceLimits::for_arch(compute_capability);
  l.sm_count = static_cast<int>(fake_device_value("TUNE_WORKER_FAKE_SMS", ordinal, l.sm_count, 100000));
  l.max_smem_per_block = fake_device_value("TUNE_WORKER_FAKE_SMEM", ordinal, l.max_smem_per_block, 1 << 30);
  DeviceInfo d;
  d.ordinal = ordinal;
  d.name = "Fake GPU";
  // Distinct per ordinal, in the shape of a real one ("fa4e" marks it as made up).
  d.uuid = fmt::format("GPU-fa4e{:04x}-0000-0000-0000-000000000000", ordinal);
  d.cc_major = compute_capability / 10;
  d.cc_minor = compute_capability % 10;
  d.sm_count = l.sm_count;
  d.max_threads_per_block = l.max_threads_per_block;
  d.max_smem_per_block_optin = l.max_smem_per_block;
  d.l2_bytes = 50 << 20;
  d.driver_version = "none (TUNE_WORKER_FAKE)";
  return d;
}

}  // namespace tune

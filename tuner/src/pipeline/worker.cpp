// The worker process: one JSON object per line each way (see tune/worker.hpp); its client is
// worker_client.cpp.
#include "tune/worker.hpp"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include <fmt/format.h>

#include "core/enum_names.hpp"
#include "cuda/driver.hpp"
#include "tune/errors.hpp"
#include "tune/problem.hpp"
#include "pipeline/worker_protocol.hpp"

extern char** environ;

namespace tune {

using Json = nlohmann::ordered_json;

namespace {

using Clock = std::chrono::steady_clock;

const char* env(const char* name) { return worker_env(name); }

// ---- The worker side -------------------------------------------------------------------------

// TUNE_WORKER_FAULT's kinds (docs/testing.md): how a fault injected into a variant strikes. A
// sanitizer's name makes the fake sanitizer report the variant under that tool.
enum class InjectedFault {
  kSegv, kAbort, kHang, kCuda, kTrap, kSpin, kEdge, kFlaky, kMemcheck, kRacecheck, kSynccheck, kInitcheck
};
constexpr EnumName<InjectedFault> kInjectedFaultNames[] = {
    {InjectedFault::kSegv, "segv"},           {InjectedFault::kAbort, "abort"},
    {InjectedFault::kHang, "hang"},           {InjectedFault::kCuda, "cuda"},
    {InjectedFault::kTrap, "trap"},           {InjectedFault::kSpin, "spin"},
    {InjectedFault::kEdge, "edge"},           {InjectedFault::kFlaky, "flaky"},
    {InjectedFault::kMemcheck, "memcheck"},   {InjectedFault::kRacecheck, "racecheck"},
    {InjectedFault::kSynccheck, "synccheck"}, {InjectedFault::kInitcheck, "initcheck"}};
// The faults that replace a variant's kernels on a real device.
constexpr InjectedFault kKernelFaults[] = {InjectedFault::kCuda, InjectedFault::kTrap, InjectedFault::kSpin};

struct Fault {
  std::string substring;
  InjectedFault kind;
  bool at_remeasure = false;
};

std::vector<Fault> parse_faults() {
  std::vector<Fault> out;
  const char* spec = env("TUNE_WORKER_FAULT");
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

std::uint64_t fnv1a(const std::string& s) {
  std::uint64_t h = 1469598103934665603ull;
  for (const char c : s) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return h;
}

class Worker {
 public:
  explicit Worker(int reply_fd) : reply_fd_(reply_fd), fake_(worker_fake_mode()), faults_(parse_faults()) {}

  // Requests: a JSON line, then the raw bytes of its CUBINs (each item's "cubin_bytes"), read
  // straight from the pipe: hex in JSON through std::cin cost ~8 ms per variant.
  int serve() {
    while (const auto line = requests_.line()) {
      if (line->empty()) continue;
      Json request;
      try {
        request = Json::parse(*line);
        if (request.contains("items"))
          for (auto& item : request.at("items")) {
            std::vector<char> bytes(item.at("cubin_bytes").get<std::size_t>());
            if (!requests_.exact(bytes.data(), bytes.size())) return 0;  // the orchestrator is gone
            cubins_.push_back(std::move(bytes));
          }
        const auto op = request.at("op").get<std::string>();
        if (op == "quit") {
          finish_fake_sanitizer_log();
          return 0;
        }
        if (op == "init") init(request);
        else if (op == "floor") floor();
        else if (op == "evaluate" || op == "remeasure") measure(op, request);
        else if (op == "gate") gate(request);
        else if (op == "sanitize") sanitize(request);
        else throw InputError("unknown request '" + op + "'");
      } catch (const InputError& e) {  // the user's to fix (a failing reference, ...): exit 2 in tune
        reply({{"reply", "error"}, {"message", e.what()}, {"input_error", true}});
      } catch (const std::exception& e) {
        reply({{"reply", "error"}, {"message", e.what()}});
      }
      if (exiting_) return 3;
    }
    return 0;  // the orchestrator closed the pipe
  }

 private:
  void reply(const Json& j) {
    const std::string text = j.dump() + "\n";
    for (std::size_t done = 0; done < text.size();) {
      const ssize_t n = write(reply_fd_, text.data() + done, text.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) std::_Exit(5);  // the orchestrator is gone
      done += static_cast<std::size_t>(n);
    }
  }

  void init(const Json& r) {
    problem_ = &find_problem(r.at("problem").get<std::string>());
    for (const auto& [k, v] : r.at("shape").items()) shape_.set(k, v.get<std::int64_t>());
    seed_ = r.at("seed").get<std::uint64_t>();
    parity_seed_ = parity_seed_of(seed_);
    const int device = r.at("device").get<int>();
    if (fake_ && fake_failing_device() == device)
      throw DeviceError(fmt::format("cannot initialise device {} (injected by TUNE_WORKER_FAKE_FAIL_DEVICE)", device));
    const ReferenceBackend backend = reference_backend_from_env();
    backend_ = backend;
    const bool with_reference = r.value("reference", true);
    sanitizer_tool_ = r.value("sanitizer_tool", "");
    sanitizer_log_ = r.value("sanitizer_log", "");
    std::string how;
    if (fake_ && !with_reference) {
      // A fake sanitizer's worker: nothing to prepare.
    } else if (fake_) {
      // No kernel runs, but the data and the reference do: a problem whose reference fails (a
      // Python error, a wrong output shape, a non-finite value) fails a fake run too.
      (void)problem_->reference(shape_, problem_->make_data(shape_, parity_seed_, DataPurpose::kParity), backend, &how);
    } else {
      std::string why;
      const auto info = query_device(device, &why);
      if (!info) throw DeviceError("no CUDA device in the worker: " + why);
      const ProblemData parity = problem_->make_data(shape_, parity_seed_, DataPurpose::kParity);
      std::vector<double> reference;
      if (with_reference) reference = problem_->reference(shape_, parity, backend, &how);
      // A worker that only launches (under a sanitizer) times nothing: no timing data to draw.
      runner_.emplace(*info, *problem_, shape_,
                      with_reference ? problem_->make_data(shape_, seed_, DataPurpose::kTiming) : ProblemData{}, parity,
                      std::move(reference), parity_seed_);
      runner_->on_phase([this](const std::string& phase, int item) { announce(phase, item); });
      device_cc_ = info->compute_capability();
    }
    reply({{"reply", "ready"}, {"reference", how}});
  }

  void floor() {
    const HarnessFloor f = fake_ ? HarnessFloor{2.0, 1.5, 1.0} : runner_->measure_floor();
    reply({{"reply", "floor"}, {"floor", to_json(f)}});
  }

  // Announces a phase; an injected fault for the variant in hand strikes right after.
  void announce(const std::string& phase, int item) {
    reply({{"phase", phase}, {"item", item}});
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

  [[nodiscard]] const Fault* fault_for(const std::string& name, InjectedFault kind) const {
    for (const Fault& f : faults_)
      if (f.kind == kind && f.at_remeasure == remeasuring_ && name.find(f.substring) != std::string::npos) return &f;
    return nullptr;
  }

  void measure(const std::string& op, const Json& r) {
    if (!problem_) throw InputError("init first");
    remeasuring_ = op == "remeasure";
    const DeviceRunner::Options options = options_from(r.at("options"));
    Items it = take_items(r);
    std::vector<CompileResult>& compiled = it.compiled;
    std::vector<Lowered>& lowered = it.lowered;
    std::vector<VariantRecord>& records = it.records;
    if (fake_) {
      fake_measure(records, options);
    } else if (remeasuring_) {
      std::vector<const CompileResult*> c;
      std::vector<VariantRecord*> p;
      for (std::size_t i = 0; i < records.size(); ++i) {
        // KIND@remeasure on a device: the variant's kernels fault from the re-measure's warm-up on.
        for (const InjectedFault kind : kKernelFaults)
          if (fault_for(names_.at(i), kind)) compiled[i] = faulting_kernel(lowered[i], kind);
        c.push_back(&compiled[i]);
        p.push_back(&records[i]);
      }
      runner_->remeasure_in_rounds(c, lowered, p, options);
    } else {
      for (const InjectedFault kind : kKernelFaults)
        if (fault_for(names_.at(0), kind)) compiled[0] = faulting_kernel(lowered[0], kind);
      runner_->evaluate(compiled[0], lowered[0], records[0], options);
    }
    Json out = Json::array();
    bool sticky = false;
    for (const auto& rec : records) {
      out.push_back(to_json(rec));
      sticky = sticky || (rec.fault && rec.fault->kind == FaultKind::kCudaError);
    }
    // A sticky error poisoned the context: report, then exit; the orchestrator starts a fresh worker.
    exiting_ = sticky;
    reply({{"reply", "records"}, {"records", out}, {"exiting", sticky}});
  }

  // The items of a request: their CUBINs (the attachments), launches and records.
  struct Items {
    std::vector<CompileResult> compiled;
    std::vector<Lowered> lowered;
    std::vector<VariantRecord> records;
  };
  Items take_items(const Json& r) {
    Items out;
    names_.clear();
    for (const auto& item : r.at("items")) {
      CompileResult c;
      c.ok = true;
      c.cubin = std::move(cubins_.at(out.compiled.size()));
      c.lowered_names = item.at("lowered_names").get<std::vector<std::string>>();
      out.compiled.push_back(std::move(c));
      out.lowered.push_back(lowered_from(item.at("lowered")));
      out.records.push_back(variant_from_json(item.at("record")));
      names_.push_back(out.records.back().name);
    }
    cubins_.clear();
    return out;
  }

  // The gate's checks that need no sanitizer: parity on further inputs (seeds, then the problem's
  // edge cases at this shape; their references computed side by side) and determinism.
  void gate(const Json& r) {
    if (!problem_) throw InputError("init first");
    remeasuring_ = false;
    Items it = take_items(r);
    const Json& g = r.at("gate");
    const int rounds = g.at("rounds").get<int>();
    struct Input {
      std::string name;
      std::uint64_t seed;
      ProblemData data;
      std::vector<double> reference;
    };
    std::vector<Input> inputs;
    for (const auto& s : g.at("seeds")) {
      const auto seed = s.get<std::uint64_t>();
      inputs.push_back({fmt::format("seed {}", seed), seed, problem_->make_data(shape_, seed, DataPurpose::kParity), {}});
    }
    const std::vector<std::string> edge_cases = problem_->edge_cases(shape_);
    if (!edge_cases.empty()) {
      const ProblemData parity = problem_->make_data(shape_, parity_seed_, DataPurpose::kParity);  // drawn once
      for (const auto& name : edge_cases)
        inputs.push_back({name, parity_seed_, problem_->make_edge_case(shape_, parity, name), {}});
    }
    std::vector<GateRecord> gates(it.records.size());
    if (fake_) {
      for (std::size_t i = 0; i < it.records.size(); ++i) {
        announce("gate", static_cast<int>(i));
        for (std::size_t k = 0; k < inputs.size(); ++k) {
          ParityRecord p = fake_parity(inputs[k].seed);
          // "edge": the first of the problem's edge cases fails (the seeds pass).
          if (fault_for(names_[i], InjectedFault::kEdge) && k == g.at("seeds").size()) {
            p.mismatches = p.elements;
            p.max_abs_error = 1.0;
          }
          gates[i].inputs.push_back({inputs[k].name, p});
        }
        const bool flaky = fault_for(names_[i], InjectedFault::kFlaky) != nullptr;
        gates[i].launches = rounds + 1;
        gates[i].deterministic = !flaky;
        gates[i].determinism = flaky ? fmt::format("launch 2 of {} changed the output (injected by TUNE_WORKER_FAULT)", rounds)
                                     : "synthetic (TUNE_WORKER_FAKE): nothing was launched";
      }
    } else {
      // References side by side: each may be a Python process.
      std::vector<std::future<std::vector<double>>> refs;
      for (auto& in : inputs)
        refs.push_back(std::async(std::launch::async, [&] { return problem_->reference(shape_, in.data, backend_); }));
      for (std::size_t k = 0; k < inputs.size(); ++k) inputs[k].reference = refs[k].get();
      std::vector<DeviceRunner::GateInput> gi;
      for (const auto& in : inputs) gi.push_back({in.name, in.seed, &in.data, &in.reference});
      std::vector<const CompileResult*> c;
      std::vector<GateRecord*> out;
      std::vector<std::string> hashes;
      for (std::size_t i = 0; i < it.records.size(); ++i) {
        c.push_back(&it.compiled[i]);
        out.push_back(&gates[i]);
        hashes.push_back(it.records[i].parity ? it.records[i].parity->output_hash : std::string());
      }
      runner_->gate(c, it.lowered, out, hashes, gi, rounds, problem_->deterministic());
    }
    Json list = Json::array();
    for (std::size_t i = 0; i < it.records.size(); ++i) {
      it.records[i].gate = gates[i];
      list.push_back(to_json(it.records[i]));
    }
    reply({{"reply", "records"}, {"records", list}, {"exiting", false}});
  }

  // Under compute-sanitizer: one launch of each item on the parity data, nothing measured. A sticky
  // fault ends the request (the items after it are not run) and the worker.
  void sanitize(const Json& r) {
    if (!problem_) throw InputError("init first");
    remeasuring_ = false;
    Items it = take_items(r);
    Json results = Json::array();
    bool sticky = false;
    for (std::size_t i = 0; i < it.records.size(); ++i) {
      if (sticky) {
        results.push_back({{"not_run", true}});
        continue;
      }
      if (fake_) {
        announce("sanitize", static_cast<int>(i));
        if (const auto tool = enum_value(kInjectedFaultNames, sanitizer_tool_); tool && fault_for(names_[i], *tool))
          write_fake_report(it.compiled[i].lowered_names.at(0));
        results.push_back({{"hash", ""}});
        continue;
      }
      try {
        results.push_back({{"hash", runner_->launch_for_sanitizer(it.compiled[i], it.lowered[i], static_cast<int>(i))}});
      } catch (const cuda::CudaError& e) {
        results.push_back({{"error", e.name()}});
        sticky = e.sticky();
      }
    }
    exiting_ = sticky;
    reply({{"reply", "sanitized"}, {"results", results}, {"exiting", sticky}});
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

  void finish_fake_sanitizer_log() {
    if (!fake_ || sanitizer_log_.empty()) return;
    std::ofstream log(sanitizer_log_, std::ios::app);
    log << "========= ERROR SUMMARY: " << fake_reports_ << (fake_reports_ == 1 ? " error" : " errors") << "\n";
  }

  // TUNE_WORKER_FAULT=...=cuda|trap|spin on a device: every launch of the variant runs a kernel
  // that writes out of bounds (address 8: CUDA_ERROR_ILLEGAL_ADDRESS), executes `trap`
  // (CUDA_ERROR_LAUNCH_FAILED), or spins forever (the deadline kills the worker). Extra kernel
  // arguments are ignored.
  CompileResult faulting_kernel(const Lowered& lowered, InjectedFault kind) const {
    // The spin reads a global the host could change, so the compiler cannot drop the loop.
    const char* body = kind == InjectedFault::kTrap   ? "asm volatile(\"trap;\");"
                       : kind == InjectedFault::kSpin ? "while (*(volatile int*)&tune_spin_flag == I) __nanosleep(1000);"
                                        : "*(volatile int*)8 = I;";
    const CompileRequest req{std::string("__device__ int tune_spin_flag = 1;\n"
                                         "template <int I> __global__ void tune_fault() { ") + body + " }",
                             "tune_fault.cu", {"tune_fault<1>"}, default_options(device_cc_)};
    CompileResult c = compile(req);
    if (!c.ok) throw std::runtime_error("the fault-injection kernel did not compile: " + c.log);
    c.lowered_names.assign(lowered.launches.size(), c.lowered_names.at(0));
    return c;
  }

  void fake_measure(std::vector<VariantRecord>& records, const DeviceRunner::Options& options) {
    for (std::size_t i = 0; i < records.size(); ++i) {
      const int item = remeasuring_ ? static_cast<int>(i) : 0;
      announce("load", item);
      if (!remeasuring_) announce("parity", item);
      VariantRecord& rec = records[i];
      if (fault_for(rec.name, InjectedFault::kCuda)) {
        rec.status = Status::kCrashed;
        // The phase it strikes in: parity in the search, load in the strict re-measure (@remeasure).
        const char* phase = remeasuring_ ? "load" : "parity";
        rec.reason = std::string("CUDA_ERROR_ILLEGAL_ADDRESS during ") + phase + " (injected by TUNE_WORKER_FAULT)";
        rec.fault = FaultRecord{FaultKind::kCudaError, "", "CUDA_ERROR_ILLEGAL_ADDRESS", phase, 0, 0};
        continue;
      }
      if (options.check_parity || !rec.parity) {
        rec.parity = fake_parity(parity_seed_);
      }
      announce("timing", item);
      if (const char* ms = env("TUNE_WORKER_FAKE_DELAY_MS"))
        std::this_thread::sleep_for(std::chrono::milliseconds(std::atoi(ms)));
      if (remeasuring_) rec.search_timing = rec.timing;
      rec.timing = fake_timing(rec.name, options);
      rec.status = Status::kPassed;
      const WorkCounts w = problem_->counts(shape_);
      rec.gbytes_per_s = w.bytes / (rec.timing->median_us * 1e-6) / 1e9;
      rec.gflop_per_s = w.flop / (rec.timing->median_us * 1e-6) / 1e9;
    }
  }

  // A passing parity record of the problem's output and tolerance (TUNE_WORKER_FAKE: nothing ran).
  ParityRecord fake_parity(std::uint64_t seed) const {
    ParityRecord p;
    p.elements = problem_->output_spec(shape_).elements();
    p.seed = seed;
    p.atol = problem_->tolerance().atol;
    p.rtol = problem_->tolerance().rtol;
    return p;
  }

  TimingRecord fake_timing(const std::string& name, const DeviceRunner::Options& options) const {
    const double median = 20.0 + static_cast<double>(fnv1a(name) % 2000) / 100.0;
    TimingRecord t;
    t.profile = options.rule.profile + (remeasuring_ ? "-rounds" : "");
    t.samples = options.rule.min_samples;
    t.min_us = t.q1_us = t.median_us = t.mean_us = t.q3_us = t.max_us = median;
    t.stop_reason = "synthetic (TUNE_WORKER_FAKE): nothing was measured";
    t.gpu_seconds = median * 1e-6 * t.samples;
    t.batch_launches = options.batch_launches;
    t.batch_mean_us = median * 0.9;
    t.graph_mean_us = median * 0.8;
    return t;
  }

  PipeReader requests_{STDIN_FILENO};
  std::vector<std::vector<char>> cubins_;  // the attachments of the request in hand
  int reply_fd_;
  bool fake_;
  std::vector<Fault> faults_;
  const Problem* problem_ = nullptr;
  Shape shape_;
  std::uint64_t seed_ = 0, parity_seed_ = 0;
  int device_cc_ = 90;
  std::optional<DeviceRunner> runner_;
  ReferenceBackend backend_ = ReferenceBackend::kAuto;
  std::string sanitizer_tool_, sanitizer_log_;
  int fake_reports_ = 0;
  std::vector<std::string> names_;  // of the items in hand
  bool remeasuring_ = false;
  bool exiting_ = false;
};

// The parent of process `pid` (/proc/PID/stat's fourth field), -1 when unknown.
pid_t parent_of(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const auto close = stat.rfind(')');  // the command name may hold spaces and parentheses
  if (close == std::string::npos) return -1;
  char state = 0;
  int ppid = -1;
  return std::sscanf(stat.c_str() + close + 1, " %c %d", &state, &ppid) == 2 ? ppid : -1;
}

}  // namespace

bool worker_fake_mode() {
  const char* v = env("TUNE_WORKER_FAKE");
  return v && std::string(v) != "0";
}

std::vector<std::string> worker_test_hooks() {
  std::vector<std::string> out;
  for (const char* name : {"TUNE_WORKER_FAKE", "TUNE_WORKER_FAKE_DELAY_MS", "TUNE_WORKER_FAULT",
                           "TUNE_WORKER_FAKE_DEVICES", "TUNE_WORKER_FAKE_FAIL_DEVICE"})
    if (const char* v = env(name)) out.push_back(std::string(name) + "=" + v);
  return out;
}

int fake_device_count() {
  const char* v = env("TUNE_WORKER_FAKE_DEVICES");
  return v ? std::max(0, std::atoi(v)) : 1;
}

std::optional<int> fake_failing_device() {
  const char* v = env("TUNE_WORKER_FAKE_FAIL_DEVICE");
  return v ? std::optional(std::atoi(v)) : std::nullopt;
}

DeviceInfo fake_device(int compute_capability, int ordinal) {
  const DeviceLimits l = DeviceLimits::for_arch(compute_capability);
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

int run_worker(int argc, char** argv) {
  // Dies with the orchestrator (even by kill -9); Ctrl-C and SIGTERM (Slurm's scancel signals every
  // process of the job) are the orchestrator's to handle: it lets the variant in hand finish.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  // Started by the orchestrator, or by the compute-sanitizer it started (the gate), which may put
  // a process of its own in between.
  if (argc > 2) {
    const pid_t orchestrator = std::atoi(argv[2]);
    bool ours = false;
    for (pid_t p = getppid(), depth = 0; p > 1 && depth < 4 && !ours; p = parent_of(p), ++depth) ours = p == orchestrator;
    if (!ours) return 6;
  }
  std::signal(SIGINT, SIG_IGN);
  std::signal(SIGTERM, SIG_IGN);
  // Replies get the original stdout; anything else printed goes to stderr, not into the protocol.
  const int reply_fd = dup(STDOUT_FILENO);
  dup2(STDERR_FILENO, STDOUT_FILENO);
  try {
    return Worker(reply_fd).serve();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tune worker: %s\n", e.what());
    return 4;
  }
}

}  // namespace tune

#pragma once
// GPU work in a child process. The orchestrator (tune) compiles, decides and records; loading,
// parity and timing run in `tune __worker`, the same binary, which reads one JSON request per
// line on stdin and answers on stdout. A variant that segfaults, aborts, poisons its context or
// hangs costs its own record (crashed / timeout), never the run.
//
// Requests: init {problem, shape, seed, device}, floor, evaluate {items, options},
// remeasure {items, options}, quit. Before each phase (load, parity, warm-up, timing, strict
// timing) the worker sends {"phase", "item"}, so the orchestrator knows where a death happened.
//
// Test hooks (environment variables, opt-in, recorded in the results' context.isolation):
//   TUNE_WORKER_FAKE=1            the worker touches no CUDA: parity passes and the timing is
//                                 derived from a hash of the variant's name (a synthetic device,
//                                 "Fake GPU", so a machine without a GPU runs the timed pipeline)
//   TUNE_WORKER_FAKE_DELAY_MS=N   each fake evaluation takes N ms longer
//   TUNE_WORKER_FAKE_DEVICES=N    with TUNE_WORKER_FAKE: the orchestrator sees N fake devices
//                                 (default 1), each with its own UUID, for --devices
//   TUNE_WORKER_FAKE_FAIL_DEVICE=K  with TUNE_WORKER_FAKE: the worker's init on device K fails
//                                 (a DeviceError), as a lost or broken card would
//   TUNE_WORKER_FAULT="SUB=KIND[@remeasure];..."  variants whose name contains SUB fail on
//                                 purpose: segv, abort, hang (at the parity phase) or cuda (a sticky
//                                 CUDA error; on a real device a kernel that writes to address 8).
//                                 "@remeasure": at the load of the strict re-measure instead.
//                                 With TUNE_WORKER_FAKE, the gate's checks fail on purpose: racecheck,
//                                 memcheck, synccheck, initcheck (the fake worker writes that tool's
//                                 report, in compute-sanitizer's format, to the sanitizer's log when
//                                 it runs under that tool), flaky (the output changes between
//                                 launches), edge (parity fails on the first edge case).
#include <chrono>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

#include <nlohmann/json.hpp>

#include "tune/compile.hpp"
#include "tune/measure.hpp"
#include "tune/record.hpp"
#include "tune/shape.hpp"
#include "tune/space.hpp"

namespace tune {

// argv[1] of the worker process. Hidden: not in --help.
inline constexpr const char* kWorkerCommand = "__worker";

[[nodiscard]] bool worker_fake_mode();
// "NAME=value" of each TUNE_WORKER_* variable that is set.
[[nodiscard]] std::vector<std::string> worker_test_hooks();
// The device a fake run reports (TUNE_WORKER_FAKE): "Fake GPU", the limits of the arch, a UUID
// of its own per ordinal ("GPU-fa4e0001-..." for 1).
[[nodiscard]] DeviceInfo fake_device(int compute_capability, int ordinal = 0);
// TUNE_WORKER_FAKE_DEVICES (default 1) and TUNE_WORKER_FAKE_FAIL_DEVICE (nullopt when unset: no
// sentinel a device ordinal could equal).
[[nodiscard]] int fake_device_count();
[[nodiscard]] std::optional<int> fake_failing_device();

// The worker's main loop (tune __worker PARENT_PID). Returns its exit code.
int run_worker(int argc, char** argv);

struct WorkerInit {
  std::string problem;
  Shape shape;
  std::uint64_t seed = 0;
  int device = 0;
  // false: no float64 reference is computed (a worker that only launches: the sanitizer's).
  bool reference = true;
  // Runs the worker under this program (compute-sanitizer and its options); empty: directly.
  std::vector<std::string> launcher;
  // Under a sanitizer: the tool and its log file (a fake worker writes its planted reports there).
  std::string sanitizer_tool, sanitizer_log;
};

// One variant sent to the worker: its CUBIN, its launches and the record to fill.
struct WorkerItem {
  const CompileResult* compiled = nullptr;
  const Lowered* lowered = nullptr;
  VariantRecord* record = nullptr;
};

// Buffered reads of a pipe: lines (without the newline) and exact byte counts. A deadline is a
// point in time (deadline_after): one that has passed reads nothing more from the pipe and fails
// with *timed_out set, however far it has passed; no deadline (nullopt) blocks.
class PipeReader {
 public:
  using Clock = std::chrono::steady_clock;
  explicit PipeReader(int fd = -1) : fd_(fd) {}
  // nullopt at end of file or once the deadline has passed (a line already buffered is returned).
  std::optional<std::string> line(std::optional<Clock::time_point> deadline = std::nullopt, bool* timed_out = nullptr);
  bool exact(char* dst, std::size_t n);

 private:
  // Appends what the pipe has; false at end of file or past the deadline.
  bool fill(std::optional<Clock::time_point> deadline, bool* timed_out);
  int fd_;
  std::string buffer_;
  std::size_t start_ = 0;
};

// The point in time `seconds` from now: now itself (already expired) for zero, a negative number
// or NaN, and the far future for a span beyond the clock's range.
PipeReader::Clock::time_point deadline_after(double seconds);

// A child process serving requests. Every call that waits takes a deadline; when the worker dies
// or misses it (then it is killed with SIGKILL and reaped), the call returns false with what is
// known in *fault, and this object is spent: make a fresh one.
class WorkerProcess {
 public:
  // Spawns /proc/self/exe __worker in its own process group (a Ctrl-C to the terminal does not
  // reach it) and sends init. Throws DeviceError when it cannot be spawned.
  explicit WorkerProcess(const WorkerInit& init);
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;
  ~WorkerProcess();

  // Waits for init's answer. Throws DeviceError with the worker's message when init failed.
  // Returns how the worker computed the float64 reference (RunContext::reference).
  std::string wait_ready(double deadline_s);
  bool measure_floor(double deadline_s, HarnessFloor* floor, FaultRecord* fault);
  // Fills the records. *culprit: the item in hand when the worker was lost (-1: unknown).
  // *exiting: the worker reported a sticky CUDA error and exits; the records are complete.
  bool run(const char* op, const std::vector<WorkerItem>& items, const DeviceRunner::Options& options,
           double deadline_s, FaultRecord* fault, int* culprit, bool* exiting);
  // Any other request (the gate's "gate" and "sanitize"): its reply, or nullopt when the worker was
  // lost (*fault says how, *culprit the item in hand) or answered with an error (fault kind "error").
  std::optional<nlohmann::ordered_json> call(const char* op, const std::vector<WorkerItem>& items,
                                             const nlohmann::ordered_json& extra, double deadline_s, FaultRecord* fault,
                                             int* culprit);
  // Asks the worker to quit and waits for it: its exit code (128 + the signal that ended it), or -1
  // when it was already lost or had to be killed after deadline_s.
  int quit(double deadline_s);
  [[nodiscard]] bool alive() const { return pid_ > 0; }

 private:
  // A JSON line, then the raw bytes of the attachments (the CUBINs its items announce).
  void send(const nlohmann::ordered_json& request, const std::vector<const std::vector<char>*>& attachments = {});
  // The next reply (phase lines are consumed on the way); nullopt when the worker is lost.
  std::optional<nlohmann::ordered_json> receive(double deadline_s, FaultRecord* fault);
  FaultRecord reap(bool timed_out, double deadline_s);

  pid_t pid_ = -1;
  int request_fd_ = -1;
  int reply_fd_ = -1;
  PipeReader replies_;
  std::string last_phase_;
  int last_item_ = -1;
};

// "SIGSEGV" for SIGSEGV.
std::string signal_name(int signal);

}  // namespace tune

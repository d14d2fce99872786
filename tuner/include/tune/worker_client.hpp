#pragma once
// The orchestrator's side of the worker: GPU work in a child process. The orchestrator (tune)
// compiles, decides and records; loading, parity and timing run in the worker (`tune __worker`,
// tune/worker_server.hpp), which answers the requests of tune/worker_protocol.hpp. A variant that
// segfaults, aborts, poisons its context or hangs costs its own record (crashed / timeout), never
// the run.
#include <sys/types.h>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tune/compile.hpp"
#include "tune/measure.hpp"
#include "tune/record.hpp"
#include "tune/shape.hpp"
#include "tune/space.hpp"
#include "tune/worker_protocol.hpp"

namespace tune {

struct WorkerInit {
  std::string problem;  // a name or a problem file; the worker is sent the file (find_problem here)
  Shape shape;
  std::uint64_t seed = 0;
  int device = 0;
  // false: no float64 reference is computed (a worker that only launches: the sanitizer's).
  bool reference = true;
  // true: the worker runs reference.py a second time on the parity data and refuses (InputError)
  // an output that differs (Problem::check_reference_repeats).
  bool check_reference = false;
  // Runs the worker under this program (compute-sanitizer and its options); empty: directly.
  std::vector<std::string> launcher;
  // Under a sanitizer: the tool and its log file (a fake worker writes its planted reports there).
  std::string sanitizer_tool, sanitizer_log;
  // > 0: the process (and its launcher) runs at this niceness: gate work beside its longest part.
  int nice = 0;
  // The device's shared memory per block as the run knows it (> 0): a fake worker refuses a launch
  // of more, as the card it stands for would (a real worker asks its device).
  std::int64_t max_smem_per_block = 0;
};

// One variant sent to the worker: its CUBIN, its launches and the record to fill.
struct WorkerItem {
  const CompileResult* compiled = nullptr;
  const Lowered* lowered = nullptr;
  VariantRecord* record = nullptr;
};

// What a request to the worker came back with: its reply; else (nullopt) how the worker was lost or
// answered with an error (fault, kind "error") and the item in hand then (culprit, -1: unknown).
template <typename T>
struct WorkerAnswer {
  std::optional<T> reply;
  FaultRecord fault;
  int culprit = -1;
};

// A child process serving requests. Every call that waits takes a deadline; when the worker dies
// or misses it (then it is killed with SIGKILL and reaped), the call returns false with what is
// known in its answer's fault, and this object is spent: make a fresh one.
class WorkerProcess {
 public:
  // Spawns /proc/self/exe __worker in its own process group (a Ctrl-C to the terminal does not
  // reach it) and sends init. Throws DeviceError when it cannot be spawned, InputError when the
  // problem is not found.
  explicit WorkerProcess(const WorkerInit& init);
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;
  ~WorkerProcess();

  // Waits for init's answer. Throws DeviceError with the worker's message when init failed.
  // Returns how the worker computed the float64 reference (RunContext::reference).
  // `stoppable`: a stop asked for while it waits (the init runs reference.py, which may take
  // minutes) kills the worker and throws Interrupted; only for a wait before the run measured
  // anything (the first start), since Interrupted says nothing was measured.
  std::string wait_ready(double deadline_s, bool stoppable = false);
  WorkerAnswer<HarnessFloor> measure_floor(double deadline_s);
  // What run() came back with: ok when the records are filled (exiting: the worker reported a
  // sticky CUDA error and exits; the records are complete); else how the worker was lost (fault)
  // and the item in hand then (culprit, -1: unknown).
  struct RunReply {
    bool ok = false;
    bool exiting = false;
    int culprit = -1;
    FaultRecord fault;
  };
  // Fills the items' records.
  RunReply run(const char* op, const std::vector<WorkerItem>& items, const DeviceRunner::Options& options,
               double deadline_s);
  // Any other request (the gate's "gate" and "sanitize").
  WorkerAnswer<nlohmann::ordered_json> call(const char* op, const std::vector<WorkerItem>& items,
                                            const nlohmann::ordered_json& extra, double deadline_s);
  // Asks the worker to quit and waits for it: its exit code (128 + the signal that ended it), or -1
  // when it was already lost or had to be killed after deadline_s.
  int quit(double deadline_s);
  [[nodiscard]] bool alive() const { return pid_ > 0; }
  // Whether the last error reply (fault kind "error") was the user's to fix (a problem's reference
  // that fails, ...) rather than the device's.
  [[nodiscard]] bool last_error_was_input() const { return last_error_input_; }
  // Where the worker's init spent its seconds, by part (after wait_ready; empty when it did not say).
  [[nodiscard]] const std::vector<std::pair<std::string, double>>& init_seconds() const { return init_seconds_; }

 private:
  std::vector<std::pair<std::string, double>> init_seconds_;
  // A JSON line, then the raw bytes of the attachments (the CUBINs its items announce).
  void send(const nlohmann::ordered_json& request, const std::vector<const std::vector<char>*>& attachments = {});
  // The next reply (phase lines are consumed on the way); none when the worker is lost (culprit unset).
  // `stop_during` (not empty): a stop asked for meanwhile ends the worker and throws Interrupted naming it.
  WorkerAnswer<nlohmann::ordered_json> receive(double deadline_s, const std::string& stop_during = {});
  // The next line of the replies before `deadline`, or none (timed_out says whether the deadline
  // passed); `stop_during` as receive's.
  std::optional<std::string> next_line(PipeReader::Clock::time_point deadline, bool* timed_out,
                                       const std::string& stop_during);
  FaultRecord reap(bool timed_out, double deadline_s);

  pid_t pid_ = -1;
  int request_fd_ = -1;
  int reply_fd_ = -1;
  PipeReader replies_;
  std::string last_phase_;
  int last_item_ = -1;
  bool last_error_input_ = false;
};

// "SIGSEGV" for SIGSEGV.
std::string signal_name(int signal);

}  // namespace tune

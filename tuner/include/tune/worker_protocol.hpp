#pragma once
// What both sides of the worker share: the orchestrator's client (tune/worker_client.hpp) and the
// worker process's server (tune/worker_server.hpp). The worker is `tune __worker`, the same binary;
// it reads one JSON request per line on its stdin (each followed by the raw bytes of the CUBINs it
// announces) and answers one JSON object per line on its reply pipe. worker/codec.hpp
// turns the requests' launches and options into JSON and back.
//
// Requests: init {problem, shape, seed, device}, floor, evaluate {items, options},
// remeasure {items, options}, quit. Before each phase (load, parity, warm-up, timing, strict
// timing) the worker sends {"phase", "item"}, so the orchestrator knows where a death happened.
//
// Test hooks (environment variables, opt-in, recorded in the results' context.isolation): the
// orchestrator reads them to know what the worker it spawns will do, the worker to do it.
//   TUNE_WORKER_FAKE=1            the worker touches no CUDA: parity passes and the timing is
//                                 derived from a hash of the variant's name (a synthetic device,
//                                 "Fake GPU", so a machine without a GPU runs the timed pipeline)
//   TUNE_WORKER_FAKE_DELAY_MS=N   each fake evaluation takes N ms longer
//   TUNE_WORKER_FAKE_DEVICES=N    with TUNE_WORKER_FAKE: the orchestrator sees N fake devices
//                                 (default 1), each with its own UUID, for --devices
//   TUNE_WORKER_FAKE_FAIL_DEVICE=K  with TUNE_WORKER_FAKE: the worker's init on device K fails
//                                 (a DeviceError), as a lost or broken card would
//   TUNE_WORKER_FAKE_SMS=N[,N...]   with TUNE_WORKER_FAKE: the fake devices' SM counts, and
//   TUNE_WORKER_FAKE_SMEM=B[,B...]  their shared memory per block (opt-in, bytes), one per ordinal
//                                 (the last for the rest); default: the limits of --arch
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
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "tune/device.hpp"

namespace tune {

// argv[1] of the worker process. Hidden: not in --help.
inline constexpr const char* kWorkerCommand = "__worker";

[[nodiscard]] bool worker_fake_mode();
// "NAME=value" of each TUNE_WORKER_* variable that is set.
[[nodiscard]] std::vector<std::string> worker_test_hooks();
// The device a fake run reports (TUNE_WORKER_FAKE): "Fake GPU", the limits of the arch (or the SM
// count and shared memory TUNE_WORKER_FAKE_SMS / _SMEM give it), a UUID of its own per ordinal
// ("GPU-fa4e0001-..." for 1). Throws InputError for a malformed hook.
[[nodiscard]] DeviceInfo fake_device(int compute_capability, int ordinal = 0);
// TUNE_WORKER_FAKE_DEVICES (default 1) and TUNE_WORKER_FAKE_FAIL_DEVICE (nullopt when unset: no
// sentinel a device ordinal could equal).
[[nodiscard]] int fake_device_count();
[[nodiscard]] std::optional<int> fake_failing_device();

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

}  // namespace tune

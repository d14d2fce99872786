#pragma once
// The run's stop state: SIGINT, SIGTERM and SIGHUP ask a run, and every loop of it, to stop.
#include <stdexcept>
#include <string>

namespace tune {

// The signal (SIGINT, SIGTERM or SIGHUP) that interrupted the last run, 0 when none did: the exit code is
// 128 + it, as a shell reports a process that signal ended.
int interrupt_signal();
// How a user names that signal: "Ctrl-C" for SIGINT, else "SIGTERM" or "SIGHUP".
std::string interrupt_name();

// The run's stop state (issue 34 #6). While a scope is held, the first SIGINT, SIGTERM or SIGHUP
// (unless ignored as it began: nohup) asks the run to stop, and the request stays until the outermost scope ends: every loop of the run checks
// stop_requested() before its next step (the variants of a pass, the passes and rounds of an
// adaptive search, a sweep's shapes, the devices' queues). The second signal ends the process.
// run_tune holds one; a sweep holds one around all its shapes, so the next shape sees the stop too.
class StopScope {
 public:
  StopScope();
  ~StopScope();
  StopScope(const StopScope&) = delete;
  StopScope& operator=(const StopScope&) = delete;
};
// Whether a stop was asked for since the outermost StopScope started.
bool stop_requested();

// A stop asked for before the run had anything to record (while its space is enumerated or sampled,
// which may take minutes for a space raised past --max-space's default): the command ends at once
// with one line and 128 + the signal, instead of finishing the step first.
class Interrupted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
// Throws Interrupted, naming `during` ("enumerating the space of problem.json"), once a stop was asked for.
void throw_if_stopped(const std::string& during);

}  // namespace tune

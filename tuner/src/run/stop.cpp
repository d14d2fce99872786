// The run's stop state: the first SIGINT or SIGTERM asks the run to stop (tune/stop.hpp).
#include "tune/stop.hpp"

#include <atomic>
#include <csignal>
#include <iterator>
#include <mutex>

#include <fmt/format.h>

namespace tune {
namespace {

// The first SIGINT (Ctrl-C) or SIGTERM (kill, Slurm's scancel) asks the run to stop after the
// variant in hand; the handler then gives both back their default action, so a second one ends
// the process at once (the results file on disk is always a complete, atomically written snapshot).
std::atomic<bool> g_interrupted{false};
std::atomic<int> g_signal{0};  // the first signal that asked, for the exit code (128 + it)
constexpr int kStopSignals[] = {SIGINT, SIGTERM};

extern "C" void on_stop_signal(int signal) {
  int none = 0;
  g_signal.compare_exchange_strong(none, signal);  // before the flag: whoever sees the flag sees the signal
  g_interrupted = true;
  for (const int s : kStopSignals) std::signal(s, SIG_DFL);
}

// Counted: runs on several devices at once share the handler and the flag (one Ctrl-C stops them
// all); the first scope installs it, the last one gives SIGINT and SIGTERM back their previous
// action. The flag is reset only when the outermost scope starts: a run's stop stays asked of every
// pass, round, shape and device that follows (issue 34 #6).
std::mutex g_scope_mutex;
int g_scopes = 0;
void (*g_previous[std::size(kStopSignals)])(int) = {SIG_DFL, SIG_DFL};

}  // namespace

StopScope::StopScope() {
  const std::lock_guard lock(g_scope_mutex);
  if (g_scopes++ == 0) {
    g_interrupted = false;
    g_signal = 0;
    for (std::size_t i = 0; i < std::size(kStopSignals); ++i) g_previous[i] = std::signal(kStopSignals[i], on_stop_signal);
  }
}

StopScope::~StopScope() {
  const std::lock_guard lock(g_scope_mutex);
  if (--g_scopes == 0)
    for (std::size_t i = 0; i < std::size(kStopSignals); ++i)
      std::signal(kStopSignals[i], g_previous[i] == SIG_ERR ? SIG_DFL : g_previous[i]);
}

bool stop_requested() { return g_interrupted; }

int interrupt_signal() { return g_signal; }

std::string interrupt_name() { return g_signal == SIGTERM ? "SIGTERM" : "Ctrl-C"; }

void throw_if_stopped(const std::string& during) {
  if (!g_interrupted) return;
  // In a sweep the shapes before this one were measured and written: only this one's run is lost.
  throw Interrupted(
      fmt::format("interrupted ({}) while {}; this shape's run measured and wrote nothing", interrupt_name(), during));
}

}  // namespace tune

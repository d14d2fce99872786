// The run's stop state: the first SIGINT or SIGTERM asks the run to stop (tune/stop.hpp).
#include "tune/stop.hpp"

#include <atomic>
#include <csignal>
#include <iterator>
#include <mutex>

#include <fmt/format.h>

namespace tune {
namespace {

// The first SIGINT (Ctrl-C), SIGTERM (kill, Slurm's scancel) or SIGHUP (the terminal closed) asks
// the run to stop after the variant in hand; the handler then gives them back their default action,
// so a second one ends the process at once (the results file on disk is always a complete,
// atomically written snapshot). SIGHUP is one of them since a terminal closed under a run (an ssh
// session lost) ended it mid-variant, its snapshot without the stop's mark and its lock left behind.
std::atomic<bool> g_interrupted{false};
std::atomic<int> g_signal{0};  // the first signal that asked, for the exit code (128 + it)
constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP};
// A hangup ignored as the run began (nohup) stays ignored: the run outlives its terminal.
std::atomic<bool> g_hangup_ignored{false};

extern "C" void on_stop_signal(int signal) {
  int none = 0;
  g_signal.compare_exchange_strong(none, signal);  // before the flag: whoever sees the flag sees the signal
  g_interrupted = true;
  for (const int s : kStopSignals)
    if (s != SIGHUP || !g_hangup_ignored) std::signal(s, SIG_DFL);
}

// Counted: runs on several devices at once share the handler and the flag (one Ctrl-C stops them
// all); the first scope installs it, the last one gives SIGINT and SIGTERM back their previous
// action. The flag is reset only when the outermost scope starts: a run's stop stays asked of every
// pass, round, shape and device that follows (issue 34 #6).
std::mutex g_scope_mutex;
int g_scopes = 0;
void (*g_previous[std::size(kStopSignals)])(int) = {SIG_DFL, SIG_DFL, SIG_DFL};

}  // namespace

StopScope::StopScope() {
  const std::lock_guard lock(g_scope_mutex);
  if (g_scopes++ == 0) {
    g_interrupted = false;
    g_signal = 0;
    for (std::size_t i = 0; i < std::size(kStopSignals); ++i) {
      g_previous[i] = std::signal(kStopSignals[i], on_stop_signal);
      if (kStopSignals[i] == SIGHUP) g_hangup_ignored = g_previous[i] == SIG_IGN;
      if (kStopSignals[i] == SIGHUP && g_hangup_ignored) std::signal(SIGHUP, SIG_IGN);
    }
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

std::string interrupt_name() { return g_signal == SIGTERM ? "SIGTERM" : g_signal == SIGHUP ? "SIGHUP" : "Ctrl-C"; }

void throw_if_stopped(const std::string& during) {
  if (!g_interrupted) return;
  // In a sweep the shapes before this one were measured and written: only this one's run is lost.
  throw Interrupted(
      fmt::format("interrupted ({}) while {}; this shape's run measured and wrote nothing", interrupt_name(), during));
}

}  // namespace tune

#include "tune/report.hpp"

#include <spawn.h>
#include <sys/wait.h>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>

#include "core/layout.hpp"
#include "tune/errors.hpp"
#include "tune/io.hpp"

extern char** environ;

namespace tune {
namespace {

// $TUNE_REPORT_SCRIPT, else report/report.py of tune's own files (core/layout.hpp).
std::filesystem::path report_script() {
  if (const char* env = std::getenv("TUNE_REPORT_SCRIPT")) return env;
  const auto dir = own_data_dir();
  if (!dir)
    throw InputError(
        "report: no <prefix>/share/tune beside this tune, so no report/report.py; install tune (cmake --install) "
        "or set TUNE_REPORT_SCRIPT to report/report.py of a checkout");
  return *dir / "report" / "report.py";
}

volatile std::sig_atomic_t g_stop_signal = 0;
extern "C" void on_report_stop(int signal) { g_stop_signal = signal; }

// Waits for the report's process and returns its wait status. A Ctrl-C or SIGTERM for tune is
// passed on to it and tune goes on waiting: report.py ends the report with one line, its earlier
// files as they were, and 130/143; tune, ended by the signal's default action, left it running
// behind it or (Ctrl-C, which reaches both) died with no word. report.py takes a second signal
// (the terminal's and tune's) as the first.
int wait_forwarding_stops(pid_t pid) {
  struct sigaction stop {
  }, previous[2]{};
  stop.sa_handler = on_report_stop;  // no SA_RESTART: waitpid returns EINTR, and the signal is passed on
  sigemptyset(&stop.sa_mask);
  g_stop_signal = 0;
  sigaction(SIGINT, &stop, &previous[0]);
  sigaction(SIGTERM, &stop, &previous[1]);
  int status = 0;
  for (;;) {
    if (const int signal = g_stop_signal; signal != 0) {
      g_stop_signal = 0;
      ::kill(pid, signal);
    }
    if (waitpid(pid, &status, 0) >= 0) break;
    if (errno != EINTR) throw std::runtime_error(std::string("waitpid: ") + std::strerror(errno));
  }
  sigaction(SIGINT, &previous[0], nullptr);
  sigaction(SIGTERM, &previous[1], nullptr);
  return status;
}

}  // namespace

int run_report(const ReportOptions& o) {
  const auto script = report_script();
  if (!std::filesystem::is_regular_file(script))
    throw InputError("report: " + script.string() + " not found; set TUNE_REPORT_SCRIPT to report/report.py of a checkout");
  // report.py reads the results through this tune (`tune results --json`, report/results.py), which
  // refuses a hand-edited file in one line as tune header refuses it.
  if (std::getenv("TUNE_BIN") == nullptr) {
    std::error_code self_ec;
    const auto self = std::filesystem::read_symlink("/proc/self/exe", self_ec);
    if (!self_ec) ::setenv("TUNE_BIN", self.c_str(), 1);
  }
  const char* env_python = std::getenv("TUNE_PYTHON");
  const std::string python = env_python ? env_python : TUNE_PYTHON_DEFAULT;
  std::vector<std::string> args{python, script.string(), o.results_dir.string(), "-o", o.out_dir.string()};
  if (!o.peaks.empty()) args.insert(args.end(), {"--peaks", o.peaks});
  for (const auto& t : o.torch) args.insert(args.end(), {"--torch", t});
  if (o.allow_synthetic) args.emplace_back("--allow-synthetic");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (const int err = posix_spawnp(&pid, python.c_str(), nullptr, nullptr, argv.data(), environ); err != 0)
    throw InputError("report: cannot run " + python + " (" + std::strerror(err) +
                     "); set TUNE_PYTHON to a python3 with matplotlib (Debian: python3-matplotlib)");
  const int status = wait_forwarding_stops(pid);
  // report.py ends a stop with one line and 130/143; ended by a signal all the same (a second one,
  // SIGKILL), the command says so as a shell would: 128 + the signal, not an internal error.
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace tune

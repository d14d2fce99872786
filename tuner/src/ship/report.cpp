#include "tune/report.hpp"

#include <spawn.h>
#include <sys/wait.h>
#include <cerrno>
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
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) throw std::runtime_error(std::string("waitpid: ") + std::strerror(errno));
  return WIFEXITED(status) ? WEXITSTATUS(status) : 4;
}

}  // namespace tune

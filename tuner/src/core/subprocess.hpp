#pragma once
// A child process that tune starts and waits for (the Python reference, compute-sanitizer
// --version): its argv runs with no shell, in a session and process group of its own (a Ctrl-C at
// the terminal is tune's to handle), with default signal dispositions and an empty signal mask
// (the worker ignores SIGINT and SIGTERM; a child must not inherit that), stdin from /dev/null and
// no other inherited descriptor. It dies with the thread that started it (PR_SET_PDEATHSIG) and is
// a child subreaper: whatever it starts stays under it, also in a session of its own. Only the
// last bytes of its stdout and stderr are kept. When it ends, whatever is left of its process
// group is killed; when the deadline passes, it and every process under it are.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace tune {

// A temporary folder (TMPDIR/tune-<what>-XXXXXX) removed with everything in it when it goes out
// of scope. Throws InputError, saying what it was for, when it cannot be created (a full disk named).
class TempDir {
 public:
  explicit TempDir(const std::string& what);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

struct ChildOptions {
  std::vector<std::string> argv;       // argv[0]: a path, or a name looked up on $PATH
  double deadline_s = 0;               // 0: no deadline
  std::size_t keep_bytes = 64 * 1024;  // of stdout, and of stderr: the last ones
  // Called every progress_every_s seconds while the child runs, with the seconds it has run.
  double progress_every_s = 0;
  std::function<void(double)> on_progress;
  // Asked as it waits (every 20 ms); true: the child and every process under it are killed, as at
  // the deadline, and ChildResult::stopped says so (a run asked to stop does not wait for it).
  std::function<bool()> stop_when;
};

enum class ChildEnd { kExited, kSignaled, kTimedOut, kNotStarted };

struct ChildResult {
  ChildEnd end = ChildEnd::kNotStarted;
  int exit_code = -1;                          // kExited
  int signal = 0;                              // kSignaled
  int error = 0;                               // kNotStarted: the errno of the start (ENOENT: no such program, EACCES, ...)
  std::string out, err;                        // the last keep_bytes of each
  std::uint64_t out_bytes = 0, err_bytes = 0;  // all it wrote
  double seconds = 0;
  bool stopped = false;  // ChildOptions::stop_when ended it (end is kTimedOut)
};

// Runs the child to its end or its deadline. Never throws for what the child does.
ChildResult run_child(const ChildOptions& options);

// The last non-empty line of a child's output, at most max_bytes of its end (a cut is marked
// "..."), control characters as '?': a quote for a one-line error. "" when there is none.
std::string last_line(const std::string& text, std::size_t max_bytes = 300);

}  // namespace tune

#include "core/subprocess.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <system_error>

#include <fmt/format.h>

#include "tune/errors.hpp"

extern char** environ;

namespace tune {
namespace {

using Clock = std::chrono::steady_clock;

// The kept end of a stream: at most `limit` bytes, the last ones.
class Tail {
 public:
  explicit Tail(std::size_t limit) : limit_(limit) {}
  void add(const char* p, std::size_t n) {
    total_ += n;
    if (n >= limit_) {
      text_.assign(p + n - limit_, limit_);
      return;
    }
    text_.append(p, n);
    if (text_.size() > 2 * limit_) text_.erase(0, text_.size() - limit_);  // amortised: erase rarely
  }
  std::string take() {
    if (text_.size() > limit_) text_.erase(0, text_.size() - limit_);
    return std::move(text_);
  }
  [[nodiscard]] std::uint64_t total() const { return total_; }

 private:
  std::size_t limit_;
  std::string text_;
  std::uint64_t total_ = 0;
};

// argv[0] as execve needs it: a name without '/' is looked up on $PATH, as a shell would.
std::string resolve(const std::string& name) {
  if (name.empty() || name.find('/') != std::string::npos) return name;
  const char* env = std::getenv("PATH");
  const std::string path = env && *env ? env : "/usr/local/bin:/usr/bin:/bin";
  for (std::size_t pos = 0; pos <= path.size();) {
    const std::size_t colon = std::min(path.find(':', pos), path.size());
    const std::string dir = path.substr(pos, colon - pos);
    const std::string file = (dir.empty() ? "." : dir) + "/" + name;
    struct stat st {};
    if (stat(file.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(file.c_str(), X_OK) == 0) return file;
    pos = colon + 1;
  }
  return "";
}

// What the child needs, made before fork: after it only async-signal-safe calls are allowed (the
// parent may have other threads, holding malloc's lock).
struct Prepared {
  std::string path;
  std::vector<char*> argv;
  int null_fd = -1, out_w = -1, err_w = -1, status_w = -1;
  pid_t parent = 0;
};

void close_from(unsigned from, unsigned to) {
  if (from > to) return;
  if (close_range(from, to, 0) == 0) return;
  const long max = sysconf(_SC_OPEN_MAX);  // an old kernel: one by one
  for (long fd = from; fd <= std::min<long>(to, max > 0 ? max : 4096); ++fd) close(static_cast<int>(fd));
}

[[noreturn]] void exec_child(const Prepared& p) {
  setsid();  // its own session, so its own process group
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != p.parent) _exit(127);  // the parent died before the line above
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  for (int s = 1; s < NSIG; ++s) sigaction(s, &dfl, nullptr);  // SIGKILL, SIGSTOP: EINVAL, harmless
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  dup2(p.null_fd, STDIN_FILENO);
  dup2(p.out_w, STDOUT_FILENO);
  dup2(p.err_w, STDERR_FILENO);
  // Nothing else of the parent's (the worker's reply pipe, locks) reaches the child; the status
  // pipe closes itself on exec.
  const auto status_fd = static_cast<unsigned>(p.status_w);
  close_from(3, status_fd - 1);
  close_from(status_fd + 1, ~0U);
  execve(p.path.c_str(), p.argv.data(), environ);
  const int e = errno;
  (void)!write(p.status_w, &e, sizeof(e));
  _exit(127);
}

// A pipe whose ends are above stdin, stdout and stderr (a parent may run with one of them closed).
bool make_pipe(int fds[2]) {
  if (pipe2(fds, O_CLOEXEC) != 0) return false;
  for (int i = 0; i < 2; ++i)
    if (fds[i] <= STDERR_FILENO) {
      const int moved = fcntl(fds[i], F_DUPFD_CLOEXEC, 3);
      close(fds[i]);
      fds[i] = moved;
    }
  return fds[0] >= 0 && fds[1] >= 0;
}

// The processes under `root` now (from /proc: each one's parent).
std::vector<pid_t> descendants(pid_t root) {
  std::multimap<pid_t, pid_t> children;
  if (DIR* d = opendir("/proc")) {
    while (const dirent* e = readdir(d)) {
      char* end = nullptr;
      const long pid = std::strtol(e->d_name, &end, 10);
      if (pid <= 0 || *end) continue;
      std::ifstream f(std::string("/proc/") + e->d_name + "/stat");
      const std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
      const auto close = stat.rfind(')');  // the command name may hold spaces and parentheses
      int ppid = 0;
      char state = 0;
      if (close != std::string::npos && std::sscanf(stat.c_str() + close + 1, " %c %d", &state, &ppid) == 2)
        children.emplace(ppid, static_cast<pid_t>(pid));
    }
    closedir(d);
  }
  std::vector<pid_t> out;
  for (std::vector<pid_t> todo{root}; !todo.empty();) {
    const pid_t p = todo.back();
    todo.pop_back();
    for (auto [it, last] = children.equal_range(p); it != last; ++it) {
      out.push_back(it->second);
      todo.push_back(it->second);
    }
  }
  return out;
}

// The child and every process under it (it is a subreaper: an orphan of its tree stays under it,
// also one that left its session), stopped first so that none can start another, then killed.
void kill_tree(pid_t child) {
  kill(-child, SIGSTOP);
  kill(child, SIGSTOP);
  std::set<pid_t> seen;
  for (int pass = 0; pass < 16; ++pass) {
    bool more = false;
    for (const pid_t p : descendants(child))
      if (seen.insert(p).second) {
        kill(p, SIGSTOP);
        more = true;
      }
    if (!more) break;
  }
  for (const pid_t p : seen) kill(p, SIGKILL);
  kill(-child, SIGKILL);
  kill(child, SIGKILL);
}

// Reads what is there without blocking; false at the end of the stream.
bool drain(int fd, Tail& tail) {
  char buf[65536];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n > 0) {
      tail.add(buf, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }
}

class Child {
 public:
  Child(const ChildOptions& o, pid_t pid, int out_r, int err_r)
      : o_(o), pid_(pid), fds_{out_r, err_r}, tails_{Tail(o.keep_bytes), Tail(o.keep_bytes)} {
    for (const int fd : fds_) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  }

  ChildResult wait() {
    const auto start = Clock::now();
    auto next_progress = start + seconds(o_.progress_every_s);
    ChildResult r;
    r.end = ChildEnd::kExited;
    while (!exited()) {
      const auto now = Clock::now();
      if (o_.deadline_s > 0 && now >= start + seconds(o_.deadline_s)) {
        kill_tree(pid_);
        r.end = ChildEnd::kTimedOut;
        break;
      }
      if (o_.stop_when && o_.stop_when()) {
        kill_tree(pid_);
        r.end = ChildEnd::kTimedOut;
        r.stopped = true;
        break;
      }
      if (o_.on_progress && o_.progress_every_s > 0 && now >= next_progress) {
        o_.on_progress(std::chrono::duration<double>(now - start).count());
        next_progress += seconds(o_.progress_every_s);
      }
      read_some(20);
    }
    kill(-pid_, SIGKILL);  // what is left of its process group
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {}
    read_some(0);  // what it wrote last (a process that left its group may hold the pipes: no waiting)
    for (const int fd : fds_)
      if (fd >= 0) close(fd);
    if (r.end == ChildEnd::kExited && WIFSIGNALED(status)) {
      r.end = ChildEnd::kSignaled;
      r.signal = WTERMSIG(status);
    } else if (r.end == ChildEnd::kExited) {
      r.exit_code = WEXITSTATUS(status);
    }
    r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    r.out_bytes = tails_[0].total();
    r.err_bytes = tails_[1].total();
    r.out = tails_[0].take();
    r.err = tails_[1].take();
    return r;
  }

 private:
  static Clock::duration seconds(double s) {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
  }

  // Whether the child has ended, without reaping it: its process group id stays its own until then.
  bool exited() const {
    siginfo_t info{};
    return waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid_;
  }

  void read_some(int timeout_ms) {
    pollfd p[2];
    nfds_t n = 0;
    for (const int fd : fds_)
      if (fd >= 0) p[n++] = {fd, POLLIN, 0};
    if (n == 0) {
      if (timeout_ms > 0) usleep(static_cast<useconds_t>(timeout_ms) * 1000);
      return;
    }
    if (poll(p, n, timeout_ms) <= 0) return;
    for (int i = 0; i < 2; ++i)
      if (fds_[i] >= 0 && !drain(fds_[i], tails_[i])) {
        close(fds_[i]);
        fds_[i] = -1;
      }
  }

  const ChildOptions& o_;
  pid_t pid_;
  int fds_[2];
  Tail tails_[2];
};

}  // namespace

ChildResult run_child(const ChildOptions& options) {
  ChildResult failed;
  Prepared p;
  p.path = options.argv.empty() ? "" : resolve(options.argv.front());
  if (p.path.empty()) {
    failed.error = ENOENT;
    return failed;
  }
  for (const auto& a : options.argv) p.argv.push_back(const_cast<char*>(a.c_str()));
  p.argv.push_back(nullptr);
  p.parent = getpid();
  int out[2] = {-1, -1}, err[2] = {-1, -1}, status[2] = {-1, -1};
  p.null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  const bool ready = p.null_fd >= 0 && make_pipe(out) && make_pipe(err) && make_pipe(status);
  p.out_w = out[1];
  p.err_w = err[1];
  p.status_w = status[1];
  const pid_t pid = ready ? fork() : -1;
  if (pid == 0) exec_child(p);
  failed.error = errno;
  for (const int fd : {p.null_fd, out[1], err[1], status[1]})
    if (fd >= 0) close(fd);
  int exec_error = 0;
  ssize_t got = -1;
  if (pid > 0)
    while ((got = read(status[0], &exec_error, sizeof(exec_error))) < 0 && errno == EINTR) {}
  if (status[0] >= 0) close(status[0]);
  if (pid < 0 || got > 0) {  // not started (no fork, or exec failed: reap the child that could not)
    if (pid > 0) waitpid(pid, nullptr, 0);
    for (const int fd : {out[0], err[0]})
      if (fd >= 0) close(fd);
    if (got > 0) failed.error = exec_error;
    return failed;
  }
  return Child(options, pid, out[0], err[0]).wait();
}

std::string last_line(const std::string& text, std::size_t max_bytes) {
  const std::size_t end = text.find_last_not_of("\n\r \t");
  if (end == std::string::npos) return "";
  const std::size_t nl = text.rfind('\n', end);
  std::size_t start = nl == std::string::npos ? 0 : nl + 1;
  std::string prefix;
  if (end + 1 - start > max_bytes) {
    start = end + 1 - max_bytes;
    // Not in the middle of a UTF-8 character.
    while (start <= end && (static_cast<unsigned char>(text[start]) & 0xc0) == 0x80) ++start;
    prefix = "...";
  }
  std::string line = prefix + text.substr(start, end + 1 - start);
  for (char& c : line)
    if (static_cast<unsigned char>(c) < 0x20 || c == '\x7f') c = '?';
  return line;
}

TempDir::TempDir(const std::string& what) {
  std::string templ = (std::filesystem::temp_directory_path() / ("tune-" + what + "-XXXXXX")).string();
  if (!mkdtemp(templ.data()))
    throw InputError(fmt::format("cannot create a temporary folder (tune-{}-...) in {} ({}){}; check $TMPDIR", what,
                                 std::filesystem::temp_directory_path().string(), std::strerror(errno),
                                 errno == ENOSPC ? ": the disk is full" : ""));
  path_ = templ;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace tune

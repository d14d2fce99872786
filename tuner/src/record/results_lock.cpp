// One writer per results file (ResultsLock, tune/io.hpp), and where a run keeps its snapshot while
// it goes (partial_results_path).
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "tune/errors.hpp"
#include "tune/io.hpp"

namespace tune {

namespace {

// The temporary files of the shape's results, snapshot and header that a writer killed mid-write
// left (kill -9, a node lost, a full disk): no writer of them runs while the lock is held, and
// nothing else would ever remove them (nor would git ignore them in results/).
void remove_stale_temporaries(const std::filesystem::path& results) {
  const std::string json = results.filename().string();
  const std::string header = std::filesystem::path(results).replace_extension(".hpp").filename().string();
  std::error_code ec;
  const auto dir = results.has_parent_path() ? results.parent_path() : std::filesystem::path(".");
  std::vector<std::filesystem::path> stale;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (is_atomic_write_temporary(name, json) || is_atomic_write_temporary(name, json + ".partial") ||
        is_atomic_write_temporary(name, header))
      stale.push_back(it->path());
  }
  for (const auto& f : stale) std::filesystem::remove(f, ec);
}

}  // namespace

ResultsLock::ResultsLock(const std::filesystem::path& results, const std::string& remedy)
    : path_(std::filesystem::path(results).replace_extension(".lock")) {
  for (;;) {
    fd_ = open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0)
      throw InputError(
          fmt::format("cannot create {} ({}); the results' folder must be writable", path_.string(), std::strerror(errno)));
    if (flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      char buf[32] = {};
      const ssize_t n = pread(fd_, buf, sizeof(buf) - 1, 0);
      close(fd_);
      fd_ = -1;
      std::string holder = n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string("?");
      holder = holder.substr(0, holder.find('\n'));
      throw ResultsHeldError(fmt::format("another tune (pid {}) is writing {}; {}", holder, results.string(), remedy),
                             holder, results.string());
    }
    // The file may have been removed by a holder that just finished: lock the one on disk.
    struct stat held {
    }, now{};
    if (fstat(fd_, &held) == 0 && stat(path_.c_str(), &now) == 0 && held.st_ino == now.st_ino && held.st_dev == now.st_dev)
      break;
    close(fd_);
  }
  remove_stale_temporaries(results);
  const std::string pid = std::to_string(getpid()) + "\n";
  if (ftruncate(fd_, 0) != 0 || pwrite(fd_, pid.data(), pid.size(), 0) < 0) {
    // The lock holds without the pid; the message then says "pid ?".
  }
}

ResultsLock::~ResultsLock() {
  std::error_code ec;
  std::filesystem::remove(path_, ec);  // still holding the lock: a newcomer retries on the new file
  close(fd_);
}

std::filesystem::path partial_results_path(const std::filesystem::path& json_path) {
  return std::filesystem::path(json_path.string() + ".partial");
}

}  // namespace tune

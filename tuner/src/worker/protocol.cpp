// The pipe reads both sides of the worker make (see tune/worker_protocol.hpp): the orchestrator
// reads replies with a deadline, the worker reads requests without one.
#include "tune/worker_protocol.hpp"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace tune {

namespace {

using Clock = PipeReader::Clock;

double remaining_s(Clock::time_point deadline) { return std::chrono::duration<double>(deadline - Clock::now()).count(); }

}  // namespace

PipeReader::Clock::time_point deadline_after(double seconds) {
  const auto now = Clock::now();
  if (!(seconds > 0)) return now;  // zero, negative or NaN: already expired, never "no deadline"
  // Beyond about a century the clock's range may overflow: the far future instead.
  if (seconds > 3e9) return Clock::time_point::max();
  return now + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

std::optional<std::string> PipeReader::line(std::optional<Clock::time_point> deadline, bool* timed_out) {
  if (timed_out) *timed_out = false;
  for (;;) {
    if (const auto nl = buffer_.find('\n', start_); nl != std::string::npos) {
      std::string out = buffer_.substr(start_, nl - start_);
      start_ = nl + 1;
      return out;
    }
    if (!fill(deadline, timed_out)) return std::nullopt;
  }
}

bool PipeReader::exact(char* dst, std::size_t n) {
  while (buffer_.size() - start_ < n)
    if (!fill(std::nullopt, nullptr)) return false;
  std::memcpy(dst, buffer_.data() + start_, n);
  start_ += n;
  return true;
}

bool PipeReader::fill(std::optional<Clock::time_point> deadline, bool* timed_out) {
  buffer_.erase(0, start_);
  start_ = 0;
  for (;;) {
    if (deadline) {
      const double left = remaining_s(*deadline);
      if (left <= 0) {
        if (timed_out) *timed_out = true;
        return false;
      }
      pollfd p{fd_, POLLIN, 0};
      const int ready = poll(&p, 1, static_cast<int>(std::min(left * 1000 + 1, 60000.0)));
      if (ready <= 0) continue;  // EINTR (a Ctrl-C: the orchestrator decides later) or not yet
    }
    char chunk[1 << 16];
    const ssize_t n = read(fd_, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;  // end of file: the other side is gone
    buffer_.append(chunk, static_cast<std::size_t>(n));
    return true;
  }
}

}  // namespace tune

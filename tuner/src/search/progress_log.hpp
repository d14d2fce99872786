#pragma once
// Says how far a long step has got: a line at most every 2 s once it has taken 1 s (a short one
// says nothing). Shared by the pass (lowering the variants) and the search strategies (the space).

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>

#include <fmt/format.h>

namespace tune {

// "12s", "3m05s", "1h02m"; "?" for a negative or non-finite number.
inline std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const auto s = static_cast<long long>(std::llround(seconds));
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60);
}

class ProgressLog {
 public:
  ProgressLog(std::function<void(const std::string&)> log, std::string what)
      : log_(std::move(log)), what_(std::move(what)) {}
  void tick(std::uint64_t done, std::uint64_t of, const std::string& more) {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    if (s < 1 || s - last_ < 2) return;
    last_ = s;
    const double percent = 100.0 * static_cast<double>(done) / static_cast<double>(std::max<std::uint64_t>(of, 1));
    log_(fmt::format("{}: {} of {} ({:.0f} %){}, {} elapsed", what_, done, of, percent, more, format_duration(s)));
  }

 private:
  std::function<void(const std::string&)> log_;
  std::string what_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  double last_ = -2;
};

}  // namespace tune

#pragma once
// Says how far a long step has got: a line at most every 2 s once it has taken 1 s (a short one
// says nothing). Shared by the pass (lowering the variants) and the search strategies (the space).

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "tune/tune.hpp"

namespace tune {

class ProgressLog {
 public:
  ProgressLog(std::function<void(const std::string&)> log, std::string what) : log_(std::move(log)), what_(std::move(what)) {}
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

#pragma once
// What the phases of a run share: the clock, the estimates' constants, the context's stamps.
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include <fmt/format.h>

#include "tune/errors.hpp"
#include "tune/io.hpp"

namespace tune {

using LogFn = std::function<void(const std::string&)>;

// One NVRTC compile of a variant on one core, for the estimates a run gives before it starts:
// 13 contact B4 N64 variants for sm_90 took 19.4 s of CPU on the 2-core CI machine (issue 34).
constexpr double kSecondsPerCompile = 1.5;
// The sample `--budget` a compile-only sweep that fell back from a missing GPU suggests.
constexpr std::size_t kSuggestedSample = 50;

using Clock = std::chrono::steady_clock;
inline double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

inline std::string now_iso8601() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

inline std::string host_name() {
  char buf[256] = {};
  return gethostname(buf, sizeof(buf) - 1) == 0 ? buf : "unknown";
}

inline std::string excerpt(const std::string& log, std::size_t limit = 2000) {
  if (log.size() <= limit) return log;
  return log.substr(0, limit) + "\n[... " + std::to_string(log.size() - limit) + " more bytes]";
}

// `option`: the option that chose the folder, named in the message ("--out", "--header").
inline void check_writable(const std::filesystem::path& dir, const char* option = "--out") {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    throw InputError(fmt::format("cannot create output directory {} ({}); pass {} to choose another", dir.string(),
                                 folder_error(dir, ec), option));
  const auto probe = dir / ".tune-write-test";
  {
    std::ofstream f(probe);
    if (!f)
      throw InputError(fmt::format("output directory {} is not writable; pass {} to choose another", dir.string(), option));
  }
  std::filesystem::remove(probe, ec);
}

}  // namespace tune

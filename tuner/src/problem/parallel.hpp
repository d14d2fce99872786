#pragma once
// Runs fn(i) for i in [0, n) on all hardware threads; the CPU references use it.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace tune {

template <typename Fn>
void parallel_for(std::int64_t n, Fn&& fn) {
  const auto workers = static_cast<std::int64_t>(std::max(1u, std::thread::hardware_concurrency()));
  std::atomic<std::int64_t> next{0};
  auto work = [&] {
    for (std::int64_t i = next++; i < n; i = next++) fn(i);
  };
  std::vector<std::jthread> pool;
  for (std::int64_t t = 1; t < std::min(workers, n); ++t) pool.emplace_back(work);
  work();
}

}  // namespace tune

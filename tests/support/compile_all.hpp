#pragma once
// Compiles lowered variants on all cores (NVRTC is thread-safe; a variant takes seconds), results
// in the order of `lowered`. The NVRTC and device tiers compile their samples with it.
#include <algorithm>
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "tune/compile.hpp"
#include "tune/tune.hpp"

namespace tune::test {

inline std::vector<CompileResult> compile_all(const std::vector<Lowered>& lowered, const std::vector<std::string>& options) {
  std::vector<CompileResult> results(lowered.size());
  std::atomic<std::size_t> next{0};
  std::vector<std::jthread> pool;
  for (unsigned t = 0; t < std::max(1u, std::thread::hardware_concurrency()); ++t) {
    pool.emplace_back([&] {
      for (std::size_t i = next++; i < lowered.size(); i = next++)
        results[i] = compile(compile_request(lowered[i], options));
    });
  }
  pool.clear();  // joins
  return results;
}

}  // namespace tune::test

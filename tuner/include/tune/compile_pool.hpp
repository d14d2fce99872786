#pragma once
// How tune, tune check and tune verify compile variants: through the compile cache (when there is
// one), every NVRTC compile in a slot of the process's CompileSlots, on a pool of threads.
#include <atomic>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tune/compile.hpp"
#include "tune/compile_cache.hpp"

namespace tune {

class CompilePool {
 public:
  // cache: nullopt compiles everything (--no-cache). jobs: compiles at once, 0 for one per hardware
  // thread (CompileSlots::shared() is raised to it). log: where the one warning about a cache that
  // cannot be written goes.
  CompilePool(std::optional<CompileCache> cache, int jobs, std::function<void(const std::string&)> log);
  CompilePool(const CompilePool&) = delete;
  CompilePool& operator=(const CompilePool&) = delete;

  // One variant: the cache's entry (*cached = true), else an NVRTC compile in a slot, stored when
  // it succeeded. A compile that throws is a failed result with the exception's text; a cache that
  // cannot be written is one warning per pool, and the compile stands. Thread-safe.
  [[nodiscard]] CompileResult compile(const CompileRequest& request, bool* cached) const;
  // Every request on the pool's threads: the results in request order, (*cached)[i] for each.
  [[nodiscard]] std::vector<CompileResult> compile_all(const std::vector<CompileRequest>& requests,
                                                       std::vector<char>* cached) const;
  // The cache's folder, or "off".
  [[nodiscard]] std::string cache_description() const;
  [[nodiscard]] int jobs() const { return jobs_; }
  // The compiles at once for a requested count: it, or one per hardware thread for 0.
  [[nodiscard]] static int jobs_for(int requested);

 private:
  std::optional<CompileCache> cache_;
  int jobs_;
  std::string nvrtc_version_;
  std::function<void(const std::string&)> log_;
  mutable std::atomic<bool> warned_{false};
};

// The cache of a command's options: none with --no-cache, else --cache-dir (default:
// CompileCache::default_dir()).
std::optional<CompileCache> compile_cache_for(bool no_cache, const std::optional<std::filesystem::path>& cache_dir);

}  // namespace tune

// The compile pool (see tune/compile_pool.hpp).
#include "tune/compile_pool.hpp"

#include <algorithm>
#include <thread>

#include <fmt/format.h>

namespace tune {

CompilePool::CompilePool(std::optional<CompileCache> cache, int jobs, std::function<void(const std::string&)> log)
    : cache_(std::move(cache)), jobs_(jobs_for(jobs)), nvrtc_version_(nvrtc_version()), log_(std::move(log)) {
  CompileSlots::shared().ensure(jobs_);
}

int CompilePool::jobs_for(int requested) {
  return requested > 0 ? requested : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

CompileResult CompilePool::compile(const CompileRequest& request, bool* cached) const {
  *cached = false;
  try {
    const auto in_a_slot = [](const CompileRequest& q) {
      const CompileSlots::Slot slot(CompileSlots::shared());
      return tune::compile(q);
    };
    if (!cache_) return in_a_slot(request);
    std::string failed;
    CompileResult r = cache_->get_or_compile(request, nvrtc_version_, cached, &failed, in_a_slot);
    if (!failed.empty() && !warned_.exchange(true) && log_)
      log_(
          fmt::format("warning: the compile cache {} cannot be written ({}); the run goes on without storing "
                      "(--cache-dir chooses another)",
                      cache_->dir().string(), failed));
    return r;
  } catch (const std::exception& e) {
    CompileResult r;
    r.log = std::string("compile raised: ") + e.what();
    return r;
  }
}

std::vector<CompileResult> CompilePool::compile_all(const std::vector<CompileRequest>& requests,
                                                    std::vector<char>* cached) const {
  std::vector<CompileResult> out(requests.size());
  cached->assign(requests.size(), 0);
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i = next++; i < requests.size(); i = next++) {
      bool hit = false;
      out[i] = compile(requests[i], &hit);
      (*cached)[i] = hit;
    }
  };
  {
    std::vector<std::jthread> threads;
    for (int t = 1; t < std::min<int>(jobs_, static_cast<int>(requests.size())); ++t) threads.emplace_back(work);
    work();
  }
  return out;
}

std::optional<CompileCache> compile_cache_for(bool no_cache, const std::optional<std::filesystem::path>& cache_dir) {
  if (no_cache) return std::nullopt;
  return CompileCache(cache_dir ? *cache_dir : CompileCache::default_dir());
}

std::string CompilePool::cache_description() const { return cache_ ? cache_->dir().string() : "off"; }

}  // namespace tune

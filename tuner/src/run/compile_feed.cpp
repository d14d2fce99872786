// The compile feed of a pass: the compile threads, their queue, the next compiled variant; and
// PassRun::start_compiles, which sets it going.
#include "run/pass_run.hpp"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "run/run_common.hpp"
#include "tune/compile.hpp"
#include "tune/space.hpp"
#include "tune/stop.hpp"

namespace tune {

void CompileFeed::plan(const std::vector<Lowered>& lowered, std::vector<std::string> options,
                       std::vector<std::size_t> order) {
  lowered_ = &lowered;
  options_ = std::move(options);
  order_ = std::move(order);
  results_.assign(lowered.size(), CompileResult{});
  from_cache_.assign(lowered.size(), 0);
  t_start_ = Clock::now();
}

void CompileFeed::start(int jobs) {
  for (int t = 0; t < jobs; ++t)
    pool_.emplace_back([this] {
      for (std::size_t k = next_++; k < order_.size(); k = next_++) compile_and_queue(order_[k]);
    });
}

std::pair<CompileResult, bool> CompileFeed::compile_one(std::size_t i) const {
  bool cached = false;
  CompileResult r = compiler_->compile(compile_request((*lowered_)[i], options_), &cached);
  return {std::move(r), cached};
}

void CompileFeed::compile_and_queue(std::size_t i) {
  auto [r, cached] = compile_one(i);
  std::lock_guard lock(mutex_);
  results_[i] = std::move(r);
  from_cache_[i] = cached;
  queue_.push_back(i);
  if (++compiled_ == order_.size()) wall_ = elapsed_s();
  ready_.notify_one();
}

void CompileFeed::ensure(std::size_t i) {
  if (!results_[i].ok && results_[i].cubin.empty()) results_[i] = compile_one(i).first;
}

std::size_t CompileFeed::take(std::optional<std::size_t> only) {
  std::unique_lock lock(mutex_);
  if (only) {
    auto has = [&] { return std::find(queue_.begin(), queue_.end(), *only); };
    ready_.wait(lock, [&] { return has() != queue_.end(); });
    queue_.erase(has());
    return *only;
  }
  ready_.wait(lock, [&] { return !queue_.empty(); });
  const std::size_t i = queue_.front();
  queue_.pop_front();
  return i;
}

double CompileFeed::elapsed_s() const { return seconds_since(t_start_); }

// The compile threads. The baseline compiles (and so is measured) first: a run cut short still has
// its speedup. Variants the journal already holds are not compiled (unless the strict re-measure
// needs them).
void PassRun::start_compiles() {
  std::vector<std::size_t> order;
  if (baseline_index && !outputs.journaled(*baseline_index)) order.push_back(*baseline_index);
  for (std::size_t i = 0; i < n; ++i)
    if (!outputs.journaled(i) && !run.variants[i].baseline) order.push_back(i);
  ctx.time_budget_s = o.time_budget_s;
  feed.plan(lowered, ctx.compile_options, std::move(order));
  if (stop_requested()) return;  // the search loop stops at its first step: nothing is compiled
  if (pass && !pass->search_only && pass->baseline_compile.joinable()) {
    const auto t_wait = Clock::now();
    pass->baseline_compile.join();  // the baseline, compiled into the cache while the search passes ran
    if (seconds_since(t_wait) > 0.5) log(fmt::format("waited {:.1f} s for the baseline's compile", seconds_since(t_wait)));
  }
  feed.start(ctx.jobs);
}

}  // namespace tune

// The compile feed of a pass (PassRun): the compile threads, their queue, the next compiled variant.
#include "run/pass_run.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cmath>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <ctime>
#include <deque>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <random>
#include <ranges>
#include <set>
#include <thread>

#include <cuda.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/enum_names.hpp"
#include "run/run_common.hpp"
#include "search/progress_log.hpp"
#include "search/strategy.hpp"
#include "tune/compile.hpp"
#include "tune/compile_cache.hpp"
#include "tune/compile_pool.hpp"
#include "tune/device.hpp"
#include "tune/errors.hpp"
#include "tune/gate.hpp"
#include "tune/io.hpp"
#include "tune/journal.hpp"
#include "tune/measure.hpp"
#include "tune/problem.hpp"
#include "tune/run_plan.hpp"
#include "tune/space.hpp"
#include "tune/sweep.hpp"
#include "tune/worker_client.hpp"
#include "tune/worker_protocol.hpp"

namespace tune {

// The compile threads. The baseline compiles (and so is measured) first: a run cut short still has
// its speedup. Variants the journal already holds are not compiled (unless the strict re-measure
// needs them).
void PassRun::start_compiles() {
  feed.results.resize(n);
  feed.from_cache.assign(n, 0);
  if (baseline_index && !outputs.journaled(*baseline_index)) feed.compile_order.push_back(*baseline_index);
  for (std::size_t i = 0; i < n; ++i)
    if (!outputs.journaled(i) && !run.variants[i].baseline) feed.compile_order.push_back(i);
  ctx.time_budget_s = o.time_budget_s;
  feed.t_compile = Clock::now();
  if (stop_requested()) return;  // the search loop stops at its first step: nothing is compiled
  if (pass && !pass->search_only && pass->baseline_compile.joinable()) {
    const auto t_wait = Clock::now();
    pass->baseline_compile.join();  // the baseline, compiled into the cache while the search passes ran
    if (seconds_since(t_wait) > 0.5) log(fmt::format("waited {:.1f} s for the baseline's compile", seconds_since(t_wait)));
  }
  for (int t = 0; t < ctx.jobs; ++t)
    feed.pool.emplace_back([this] {
      for (std::size_t k = feed.next++; k < feed.compile_order.size(); k = feed.next++)
        compile_and_queue(feed.compile_order[k]);
    });
}

std::pair<CompileResult, bool> PassRun::compile_one(std::size_t i) {
  bool cached = false;
  CompileResult r = feed.compiler->compile(compile_request(lowered[i], ctx.compile_options), &cached);
  return {std::move(r), cached};
}

void PassRun::compile_and_queue(std::size_t i) {
  auto [r, cached] = compile_one(i);
  std::lock_guard lock(feed.mutex);
  feed.results[i] = std::move(r);
  feed.from_cache[i] = cached;
  feed.compiled_queue.push_back(i);
  if (++feed.compiled_count == feed.compile_order.size()) feed.compile_wall = seconds_since(feed.t_compile);
  feed.ready.notify_one();
}

// A journaled variant the strict re-measure needs comes from the compile cache (or compiles again).
void PassRun::ensure_compiled(std::size_t i) {
  if (!feed.results[i].ok && feed.results[i].cubin.empty() && outputs.journaled(i)) feed.results[i] = compile_one(i).first;
}

// The next compiled variant (only the baseline, once the time budget is spent).
std::size_t PassRun::take_compiled(bool only_baseline) {
  std::unique_lock lock(feed.mutex);
  if (only_baseline) {
    auto has = [&] { return std::find(feed.compiled_queue.begin(), feed.compiled_queue.end(), *baseline_index); };
    feed.ready.wait(lock, [&] { return has() != feed.compiled_queue.end(); });
    feed.compiled_queue.erase(has());
    return *baseline_index;
  }
  feed.ready.wait(lock, [&] { return !feed.compiled_queue.empty(); });
  const std::size_t i = feed.compiled_queue.front();
  feed.compiled_queue.pop_front();
  return i;
}

}  // namespace tune

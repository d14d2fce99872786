#include "tune/tune.hpp"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <csignal>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <ctime>
#include <deque>
#include <fstream>
#include <future>
#include <mutex>
#include <random>
#include <thread>

#include <cuda.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tune/compile.hpp"
#include "tune/compile_cache.hpp"
#include "tune/device.hpp"
#include "tune/errors.hpp"
#include "tune/io.hpp"
#include "tune/measure.hpp"
#include "tune/problem.hpp"
#include "tune/space.hpp"
#include "tune/sweep.hpp"

namespace tune {
namespace {

// The first SIGINT asks the run to stop after the variant in hand; the handler then gives SIGINT
// back its default action, so a second Ctrl-C ends the process at once (the results file on disk
// is always a complete, atomically written snapshot).
std::atomic<bool> g_interrupted{false};

extern "C" void on_sigint(int) {
  g_interrupted = true;
  std::signal(SIGINT, SIG_DFL);
}

class SigintGuard {
 public:
  SigintGuard() {
    g_interrupted = false;
    previous_ = std::signal(SIGINT, on_sigint);
  }
  ~SigintGuard() { std::signal(SIGINT, previous_ == SIG_ERR ? SIG_DFL : previous_); }
  SigintGuard(const SigintGuard&) = delete;
  SigintGuard& operator=(const SigintGuard&) = delete;

 private:
  void (*previous_)(int) = SIG_DFL;
};

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string now_iso8601() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string host_name() {
  char buf[256] = {};
  return gethostname(buf, sizeof(buf) - 1) == 0 ? buf : "unknown";
}

// The seed of the parity inputs: fresh data, not the timing buffers.
std::uint64_t parity_seed_of(std::uint64_t seed) { return seed * 0x9E3779B97F4A7C15ull + 1; }

std::string excerpt(const std::string& log, std::size_t limit = 2000) {
  if (log.size() <= limit) return log;
  return log.substr(0, limit) + "\n[... " + std::to_string(log.size() - limit) + " more bytes]";
}

void check_writable(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw InputError(fmt::format("cannot create output directory {} ({}); pass --out to choose another", dir.string(), ec.message()));
  const auto probe = dir / ".tune-write-test";
  {
    std::ofstream f(probe);
    if (!f) throw InputError(fmt::format("output directory {} is not writable; pass --out to choose another", dir.string()));
  }
  std::filesystem::remove(probe, ec);
}

struct Job {
  std::size_t index;
  Lowered lowered;
  CompileResult compiled;
};

}  // namespace

CompileRequest compile_request(const Lowered& lowered, std::vector<std::string> options) {
  CompileRequest req{std::string(template_source(lowered.template_name)), lowered.template_name, {}, std::move(options)};
  for (const auto& k : lowered.launches) req.name_expressions.push_back(k.name_expression);
  return req;
}

void write_file_atomic(const std::filesystem::path& path, const std::string& text) {
  std::error_code ec;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  const auto tmp = path.string() + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw InputError(fmt::format("cannot write {}; check the directory's permissions", tmp));
    f << text;
    f.flush();
    if (!f) throw InputError(fmt::format("writing {} failed (disk full?)", tmp));
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw InputError(fmt::format("cannot move {} to {} ({})", tmp, path.string(), ec.message()));
}

Space load_space(const std::string& problem, const std::optional<std::filesystem::path>& file) {
  if (file) {
    Space s = Space::load(*file);
    if (s.problem() != problem)
      throw ConfigError(fmt::format("{}: describes problem '{}', not '{}'", file->string(), s.problem(), problem));
    return s;
  }
  const std::string name = "configs/" + problem + ".json";
  nlohmann::ordered_json j;
  try {
    j = nlohmann::ordered_json::parse(template_source(problem + ".json"));
  } catch (const nlohmann::ordered_json::parse_error& e) {
    throw ConfigError(name + " (embedded): not valid JSON (" + e.what() + ")");
  }
  return Space::parse(j, name);
}

Shape resolve_shape(const Problem& problem, const Space& space,
                    const std::vector<std::pair<std::string, std::int64_t>>& dims) {
  const auto names = problem.dims();
  for (const auto& [k, v] : dims)
    if (std::find(names.begin(), names.end(), k) == names.end())
      throw ShapeError(fmt::format("--{} is not a dimension of problem {} (it takes {})", k, problem.name(), fmt::join(names, ", ")));
  Shape shape;
  for (const auto& d : names) {
    auto it = std::find_if(dims.begin(), dims.end(), [&](const auto& p) { return p.first == d; });
    if (it != dims.end()) {
      shape.set(d, it->second);
    } else if (auto def = space.default_dims().find(d); def != space.default_dims().end()) {
      shape.set(d, def->second);
    } else {
      throw ShapeError(fmt::format("problem {} needs --{} (no default in {})", problem.name(), d, space.source_name()));
    }
  }
  problem.check_shape(shape);
  space.check_shape(shape);
  return shape;
}

// Winner: the smallest median; any variant within the noise of the best ties with it, and a
// tie goes to fewer registers, then the lexicographically smaller name, so the header is stable.
std::optional<std::string> pick_winner(const RunRecord& run, std::string* rule) {
  const VariantRecord* best = nullptr;
  for (const auto& v : run.variants)
    if (v.status == Status::kPassed && v.timing && (!best || v.timing->median_us < best->timing->median_us)) best = &v;
  if (!best) return std::nullopt;
  auto spread = [](const TimingRecord& t) { return t.median_us > 0 ? (t.q3_us - t.q1_us) / (2 * t.median_us) : 0.0; };
  const VariantRecord* pick = best;
  for (const auto& v : run.variants) {
    if (v.status != Status::kPassed || !v.timing || &v == best) continue;
    const double tol = std::min(0.05, std::max({0.005, spread(*best->timing), spread(*v.timing)}));
    if (v.timing->median_us > best->timing->median_us * (1 + tol)) continue;
    // Unknown registers (-1: no report) never win a tie on registers.
    auto regs = [](const VariantRecord& r) { return r.max_registers() < 0 ? INT_MAX : r.max_registers(); };
    if (std::make_pair(regs(v), v.name) < std::make_pair(regs(*pick), pick->name)) pick = &v;
  }
  *rule = "smallest cold median; variants within max(0.5 %, half the relative interquartile range, capped at 5 %) "
          "of it tie, and a tie goes to fewer registers, then the smaller name";
  return pick->name;
}

std::vector<std::size_t> best_by_median(const std::vector<double>& medians, std::size_t keep) {
  std::vector<std::size_t> order(medians.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return medians[a] < medians[b]; });
  order.resize(std::min(keep, order.size()));
  return order;
}

std::vector<Config> sample_configs(const std::vector<Config>& all, const Config& baseline, int budget,
                                   std::uint64_t seed) {
  if (budget <= 0 || static_cast<std::size_t>(budget) >= all.size()) return all;
  std::vector<std::size_t> order(all.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15ULL);  // its own stream, not the inputs'
  const auto k = static_cast<std::size_t>(budget);
  for (std::size_t i = 0; i < k; ++i) std::swap(order[i], order[i + rng() % (order.size() - i)]);
  order.resize(k);
  const auto base = std::find(all.begin(), all.end(), baseline);
  if (base != all.end()) {
    const auto bi = static_cast<std::size_t>(base - all.begin());
    if (std::find(order.begin(), order.end(), bi) == order.end()) order.push_back(bi);
  }
  std::sort(order.begin(), order.end());
  std::vector<Config> out;
  out.reserve(order.size());
  for (const std::size_t i : order) out.push_back(all[i]);
  return out;
}

TuneOutcome run_tune(const TuneOptions& o) {
  const auto t_start = Clock::now();
  const SigintGuard sigint_guard;
  auto log = [&](const std::string& line) {
    if (o.log) o.log(line);
  };
  const Problem& problem = find_problem(o.problem);
  const Space space = load_space(o.problem, o.config);
  const Shape shape = resolve_shape(problem, space, o.dims);

  RunRecord run;
  run.problem = o.problem;
  run.shape = shape;
  run.seed = o.seed;
  const WorkCounts counts = problem.counts(shape);
  run.flop = counts.flop;
  run.bytes = counts.bytes;

  // The device, or the compile-only sweep without one.
  std::string why;
  bool compile_only = o.compile_only;
  if (!compile_only) {
    run.device = query_device(o.device, &why);
    if (!run.device) {
      log(fmt::format("no CUDA device ({}): running the compile-only sweep for {} instead; nothing is timed", why,
                      arch_name(o.arch)));
      compile_only = true;
      run.untimed_reason = "no CUDA device: " + why;
    }
  } else {
    run.untimed_reason = "--compile-only";
  }
  const int cc = run.device ? run.device->compute_capability() : o.arch;
  const DeviceLimits limits = run.device ? run.device->limits() : DeviceLimits::for_arch(cc);
  run.timed = !compile_only;

  const std::string gpu_dir = run.device ? run.device->slug() : "compile-only-" + arch_name(cc);
  const auto json_path = o.out_dir / gpu_dir / o.problem / (result_stem(shape, o.shard) + ".json");
  check_writable(json_path.parent_path());
  if (o.header && o.header->has_parent_path()) check_writable(o.header->parent_path());

  const Enumeration space_enum = space.enumerate(shape, limits);
  if (space_enum.configs.empty()) {
    std::string reasons;
    for (const auto& [c, n] : space_enum.rejected_by) reasons += fmt::format("; '{}' rejected {}", c, n);
    throw ShapeError(fmt::format("no configuration of {} accepts shape {} on {}{}", space.source_name(), shape.describe(),
                                 arch_name(cc), reasons));
  }

  auto& ctx = run.context;
  ctx.tool_version = tool_version();
  ctx.git_commit = tool_git_commit();
  ctx.command_line = o.command_line;
  ctx.started_at = now_iso8601();
  ctx.host = host_name();
  ctx.nvrtc_version = nvrtc_version();
  ctx.cuda_header_version = fmt::format("{}.{}", CUDA_VERSION / 1000, (CUDA_VERSION % 1000) / 10);
  ctx.arch = arch_name(cc);
  ctx.compile_options = default_options(cc);
  ctx.config_file = o.config ? o.config->string() : space.source_name() + " (embedded)";
  ctx.jobs = o.jobs > 0 ? o.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));

  std::optional<CompileCache> cache;
  if (!o.no_cache) cache.emplace(o.cache_dir ? *o.cache_dir : CompileCache::default_dir());
  ctx.compile_cache = cache ? cache->dir().string() : "off";

  ctx.valid_configs = static_cast<std::int64_t>(space_enum.configs.size());
  std::vector<Config> chosen = sample_configs(space_enum.configs, space.baseline(), o.budget, o.seed);
  if (chosen.size() < space_enum.configs.size()) {
    ctx.search = "random";
    ctx.budget = o.budget;
    log(fmt::format("random search: {} of {} valid configurations (seed {}), the baseline included", chosen.size(),
                    space_enum.configs.size(), o.seed));
  }
  ctx.shard = o.shard;
  if (o.shard && o.shard->split == "variants") {
    chosen = shard_configs(chosen, space.baseline(), *o.shard, &*ctx.shard);
    log(fmt::format("shard {}/{}: {} of {} variants", o.shard->index, o.shard->count, chosen.size(), ctx.shard->variants));
  }

  // Records for every variant up front: an interrupted run shows what was never reached.
  std::vector<Lowered> lowered;
  for (const Config& c : chosen) {
    VariantRecord r;
    r.name = space.name(c);
    r.params = space.to_json(c);
    r.baseline = c == space.baseline();
    Lowered l = space.lower(c, shape);
    for (const auto& k : l.launches)
      r.launches.push_back({{"kernel", k.name_expression},
                            {"grid", k.grid},
                            {"block", k.block},
                            {"dynamic_smem_bytes", k.dynamic_smem}});
    run.variants.push_back(std::move(r));
    lowered.push_back(std::move(l));
  }
  const auto baseline_it = std::find_if(run.variants.begin(), run.variants.end(), [](const auto& v) { return v.baseline; });
  if (baseline_it != run.variants.end()) {
    run.baseline = baseline_it->name;
  } else {
    log(fmt::format("note: the baseline violates '{}' at this shape; no speedup will be reported",
                    space.violated_constraint(space.baseline(), shape, limits)));
  }
  const std::size_t n = run.variants.size();
  log(fmt::format("{} {}: {} variants ({} of {} configurations pass the constraints), {} compile jobs, {}",
                  o.problem, shape.describe(), n, space_enum.configs.size(), space_enum.total, ctx.jobs,
                  run.device ? run.device->name + " (" + ctx.arch + ")" : ctx.arch + ", compile only"));

  auto save = [&] {
    run.wall.total_wall_s = seconds_since(t_start);
    write_file_atomic(json_path, to_json(run).dump(2) + "\n");
  };
  save();

  // Data and the float64 reference are prepared on their own thread while compilation starts.
  std::future<std::pair<ProblemData, std::vector<double>>> parity_future;
  std::future<ProblemData> timing_future;
  if (run.timed) {
    parity_future = std::async(std::launch::async, [&] {
      ProblemData d = problem.make_data(shape, parity_seed_of(o.seed), DataPurpose::kParity);
      std::vector<double> ref = problem.reference(shape, d);
      return std::make_pair(std::move(d), std::move(ref));
    });
    timing_future = std::async(std::launch::async, [&] { return problem.make_data(shape, o.seed, DataPurpose::kTiming); });
  }

  // Compile on all cores; the GPU measures each variant as soon as it is compiled (one at a time).
  std::mutex mutex;
  std::condition_variable ready;
  std::deque<std::size_t> compiled_queue;
  std::vector<CompileResult> results(n);
  std::vector<char> from_cache(n, 0);
  std::atomic<std::size_t> next{0};
  std::size_t compiled_count = 0;
  // The baseline compiles (and so is measured) first: a run cut short still has its speedup.
  std::vector<std::size_t> compile_order(n);
  for (std::size_t k = 0; k < n; ++k) compile_order[k] = k;
  if (baseline_it != run.variants.end()) {
    const auto b = static_cast<std::size_t>(baseline_it - run.variants.begin());
    std::rotate(compile_order.begin(), compile_order.begin() + static_cast<std::ptrdiff_t>(b),
                compile_order.begin() + static_cast<std::ptrdiff_t>(b) + 1);
  }
  ctx.time_budget_s = o.time_budget_s;
  const auto t_compile = Clock::now();
  double compile_wall = 0;
  auto worker = [&] {
    for (std::size_t k = next++; k < n; k = next++) {
      const std::size_t i = compile_order[k];
      const CompileRequest req = compile_request(lowered[i], ctx.compile_options);
      CompileResult r;
      bool cached = false;
      try {
        const std::string key = cache ? CompileCache::key(req, ctx.nvrtc_version) : std::string();
        if (auto hit = cache ? cache->load(key) : std::nullopt) {
          r = std::move(*hit);
          cached = true;
        } else {
          r = compile(req);
          if (cache) cache->store(key, r);
        }
      } catch (const std::exception& e) {
        r.ok = false;
        r.log = std::string("compile raised: ") + e.what();
      }
      std::lock_guard lock(mutex);
      results[i] = std::move(r);
      from_cache[i] = cached;
      compiled_queue.push_back(i);
      if (++compiled_count == n) compile_wall = seconds_since(t_compile);
      ready.notify_one();
    }
  };
  std::vector<std::jthread> pool;
  for (int t = 0; t < ctx.jobs; ++t) pool.emplace_back(worker);

  std::optional<DeviceRunner> runner;
  std::optional<std::pair<ProblemData, std::vector<double>>> parity;
  const bool halving = o.search == "halving";
  DeviceRunner::Options first_round;
  if (halving) {
    first_round.rule = StopRule::screen();
    first_round.batch_launches = 10;
    if (ctx.search == "exhaustive") ctx.search = "halving";
    else ctx.search += "+halving";
  }
  double measure_busy = 0;
  std::size_t checked = 0, passed = 0;
  std::optional<double> best;
  const std::optional<std::size_t> baseline_index =
      baseline_it != run.variants.end() ? std::optional(static_cast<std::size_t>(baseline_it - run.variants.begin()))
                                        : std::nullopt;
  for (std::size_t done = 0; done < n; ++done) {
    if (g_interrupted) {
      ctx.interrupted = true;
      next = n;
      log(fmt::format("interrupted: {} of {} variants done; writing what was measured (Ctrl-C again to stop at once)",
                      done, n));
      break;
    }
    if (!ctx.stopped_by_time_budget && o.time_budget_s > 0 && seconds_since(t_start) > o.time_budget_s) {
      ctx.stopped_by_time_budget = true;
      next = n;  // the workers take no new variant; those in flight finish
      log(fmt::format("time budget of {} s reached: {} of {} variants done, the rest recorded as skipped{}",
                      o.time_budget_s, done, n,
                      baseline_index && run.variants[*baseline_index].status == Status::kPending
                          ? " (the baseline still runs)" : ""));
    }
    // Once stopped, only the baseline is still taken (it compiles first, so it is seldom waited for).
    const bool only_baseline = ctx.stopped_by_time_budget;
    if (only_baseline && !(baseline_index && run.variants[*baseline_index].status == Status::kPending)) break;
    std::size_t i;
    {
      std::unique_lock lock(mutex);
      if (only_baseline) {
        auto has = [&] { return std::find(compiled_queue.begin(), compiled_queue.end(), *baseline_index); };
        ready.wait(lock, [&] { return has() != compiled_queue.end(); });
        compiled_queue.erase(has());
        i = *baseline_index;
      } else {
        ready.wait(lock, [&] { return !compiled_queue.empty(); });
        i = compiled_queue.front();
        compiled_queue.pop_front();
      }
    }
    VariantRecord& rec = run.variants[i];
    const CompileResult& cr = results[i];
    rec.compile_seconds = cr.seconds;
    rec.compile_cached = from_cache[i] != 0;
    rec.resources = cr.resources;
    if (!cr.ok) {
      rec.status = Status::kCompileFailed;
      rec.reason = "NVRTC rejected the variant";
      rec.log_excerpt = excerpt(cr.log);
    } else if (!run.timed) {
      rec.status = Status::kCompiled;
    } else if (!o.keep_spills && !rec.baseline && rec.spill_bytes() > 0) {
      rec.status = Status::kSkipped;
      rec.reason = fmt::format("pruned before timing: spills {} bytes to local memory (--keep-spills measures it)",
                               rec.spill_bytes());
    } else {
      if (!runner) {
        parity = parity_future.get();
        runner.emplace(*run.device, problem, shape, timing_future.get(), parity->first, parity->second,
                       parity_seed_of(o.seed));
        run.harness_floor = runner->measure_floor();
        log(fmt::format("harness floor (empty kernel): cold {:.2f} us, batch {:.2f} us, graph {:.2f} us",
                        run.harness_floor->empty_cold_us, run.harness_floor->empty_batch_us,
                        run.harness_floor->empty_graph_us));
      }
      const auto t = Clock::now();
      runner->evaluate(cr, lowered[i], rec, first_round);
      measure_busy += seconds_since(t);
      ++checked;
      if (rec.status == Status::kPassed) {
        ++passed;
        if (!best || rec.timing->median_us < *best) best = rec.timing->median_us;
      }
    }
    if (rec.spill_bytes() > 0 && rec.reason.empty()) rec.reason = fmt::format("spills {} bytes", rec.spill_bytes());
    log(fmt::format("[{:>3}/{}] {}  {:<14} {}{}", done + 1, n,
                    rec.compile_cached ? std::string("from cache    ") : fmt::format("compiled {:5.1f}s", cr.seconds),
                    to_string(rec.status),
                    rec.timing ? fmt::format("{:9.2f} us  ", rec.timing->median_us) : std::string(13, ' '), rec.name) +
        (run.timed ? fmt::format("   (checked {}, passed {}, best {})", checked, passed,
                                 best ? fmt::format("{:.2f} us", *best) : "-")
                   : ""));
    run.wall.compile_wall_s = compile_wall > 0 ? compile_wall : seconds_since(t_compile);
    save();
  }
  pool.clear();
  if (ctx.stopped_by_time_budget || ctx.interrupted) {
    if (compile_wall == 0) compile_wall = seconds_since(t_compile);
    for (auto& v : run.variants)
      if (v.status == Status::kPending) {
        v.status = Status::kSkipped;
        v.reason = ctx.interrupted ? std::string("not reached: the run was interrupted (SIGINT)")
                                   : fmt::format("not reached: the --time-budget of {} s ran out", o.time_budget_s);
      }
  }
  run.wall.compile_wall_s = compile_wall;

  // The `keep` fastest passed variants (by their current cold median), fastest first.
  auto fastest_passed = [&](std::size_t keep) {
    std::vector<std::size_t> passed_idx;
    std::vector<double> medians;
    for (std::size_t i = 0; i < n; ++i)
      if (run.variants[i].status == Status::kPassed) {
        passed_idx.push_back(i);
        medians.push_back(run.variants[i].timing->median_us);
      }
    std::vector<std::size_t> out;
    for (const std::size_t k : best_by_median(medians, keep)) out.push_back(passed_idx[k]);
    return out;
  };

  if (run.timed && halving && !ctx.interrupted) {
    // Successive halving: the best third of the screened variants (at least top + 1) timed again
    // with the search profile (parity already passed); the others keep their screening time.
    const auto screened = static_cast<std::size_t>(
        std::count_if(run.variants.begin(), run.variants.end(), [](const auto& v) { return v.status == Status::kPassed; }));
    const auto promoted = fastest_passed(std::max<std::size_t>((screened + 2) / 3, static_cast<std::size_t>(o.top_k) + 1));
    log(fmt::format("halving: timing the best {} of {} screened variants again with the search profile",
                    promoted.size(), screened));
    DeviceRunner::Options second_round;
    second_round.check_parity = false;
    const auto t = Clock::now();
    for (const std::size_t i : promoted) runner->evaluate(results[i], lowered[i], run.variants[i], second_round);
    measure_busy += seconds_since(t);
    save();
  }

  if (run.timed) {
    // The top few, re-measured strictly and interleaved, before a winner is named.
    std::vector<std::size_t> order = fastest_passed(static_cast<std::size_t>(o.top_k));
    const std::size_t top = order.size();
    if (baseline_index && run.variants[*baseline_index].status == Status::kPassed &&
        std::find(order.begin(), order.end(), *baseline_index) == order.end())
      order.push_back(*baseline_index);
    if (!order.empty() && !ctx.interrupted) {
      log(fmt::format("re-measuring the top {}{} strictly, interleaved", top, order.size() > top ? " and the baseline" : ""));
      std::vector<const CompileResult*> c;
      std::vector<Lowered> l;
      std::vector<VariantRecord*> r;
      for (auto i : order) {
        c.push_back(&results[i]);
        l.push_back(lowered[i]);
        r.push_back(&run.variants[i]);
      }
      const auto t = Clock::now();
      DeviceRunner::Options strict;
      strict.rule = StopRule::strict();
      runner->remeasure_interleaved(c, l, r, strict);
      measure_busy += seconds_since(t);
    }
    run.winner = pick_winner(run, &run.winner_rule);
    if (run.winner && run.baseline) {
      const auto* w = run.find(*run.winner);
      const auto* b = run.find(*run.baseline);
      if (b->status == Status::kPassed) run.speedup = b->timing->median_us / w->timing->median_us;
    }
  }
  run.wall.measure_wall_s = measure_busy;
  run.complete = true;
  run.context.finished_at = now_iso8601();
  save();

  TuneOutcome out{run, json_path, std::nullopt};
  // No header from a search cut short by hand, nor from a part of one (tune merge writes it).
  if (run.timed && run.winner && !run.context.interrupted && !(o.shard && o.shard->split == "variants")) {
    const auto header_path = o.header ? *o.header : json_path.parent_path() / (shape.tag() + ".hpp");
    write_file_atomic(header_path, generate_header(run, space));
    out.header_path = header_path;
  }
  out.run = run;
  return out;
}

}  // namespace tune

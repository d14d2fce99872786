#include "tune/tune.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <ranges>
#include <climits>
#include <cmath>
#include <csignal>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <ctime>
#include <cstring>
#include <deque>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <mutex>
#include <random>
#include <thread>

#include <cuda.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

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
#include "tune/space.hpp"
#include "tune/sweep.hpp"
#include "tune/worker_client.hpp"
#include "tune/worker_protocol.hpp"
#include "core/enum_names.hpp"
#include "pipeline/progress_log.hpp"
#include "pipeline/run_common.hpp"
#include "pipeline/search/strategy.hpp"
#include "tune/run_plan.hpp"

namespace tune {
namespace {
// What a lost worker leaves of a variant: the status, and a reason that says how it was lost.
void record_loss(VariantRecord& rec, const FaultRecord& f, const std::string& when) {
  rec.status = f.kind == FaultKind::kTimeout ? Status::kTimeout : Status::kCrashed;
  const std::string phase = f.phase.empty() ? "before its first phase" : "during " + f.phase;
  if (f.kind == FaultKind::kTimeout)
    rec.reason = fmt::format("no answer within {:g} s ({}){}; the worker process was killed", f.deadline_s, phase, when);
  else if (f.kind == FaultKind::kError)
    rec.reason = fmt::format("the worker process failed {}{}: {}", phase, when, f.message);
  else if (f.kind == FaultKind::kSignal)
    rec.reason = fmt::format("the worker process was killed by {} {}{}", f.signal, phase, when);
  else
    rec.reason = fmt::format("the worker process exited with code {} {}{}", f.exit_code, phase, when);
  rec.fault = f;
}

// The GPU side of a timed run: loading, parity and timing in a worker process, a fresh one after a
// variant kills it or misses its deadline. A lost variant is recorded, never retried.
class IsolatedRunner {
 public:
  IsolatedRunner(WorkerInit init, double timeout_override_s, RunContext& ctx, std::function<void(const std::string&)> log)
      : init_(std::move(init)), override_s_(timeout_override_s), iso_(&ctx.isolation), reference_(&ctx.reference),
        log_(std::move(log)) {
    iso_->first_variant_timeout_s = override_s_ > 0 ? override_s_ : kFirstDeadlineS;
    iso_->variant_timeout_s = iso_->first_variant_timeout_s;
    iso_->timeout_rule = override_s_ > 0
        ? "--variant-timeout for each variant (times the variant count for the strict re-measure)"
        : "10 s until the baseline is timed; then max(5 s, 2 s + 2 x the stop rule's wall cap + 50 x the launches of "
          "one evaluation x the baseline's median), times the variant count for the strict re-measure";
  }

  // The next pass of the same run (an adaptive search strategy) keeps this worker, its data and its
  // reference. detach() at the end of a pass keeps what it recorded in the pass's context (which
  // goes with the pass); rebind() moves that to the next pass's context and records into it.
  void detach() {
    own_iso_ = *iso_;
    own_reference_ = *reference_;
    iso_ = &own_iso_;
    reference_ = &own_reference_;
  }
  void rebind(RunContext& ctx) {
    ctx.isolation = *iso_;
    ctx.reference = *reference_;
    iso_ = &ctx.isolation;
    reference_ = &ctx.reference;
  }

  // Starts a worker (its init, data and CPU reference overlap the compiles) if none runs.
  void start() {
    if (worker_) return;
    worker_.emplace(init_);
    ready_ = false;
    ++iso_->worker_starts;
  }

  HarnessFloor floor() {
    HarnessFloor h;
    FaultRecord f;
    if (!ready().measure_floor(kFloorDeadlineS, &h, &f)) {
      worker_.reset();
      VariantRecord r;
      record_loss(r, f, "");
      throw DeviceError("measuring the harness floor: " + r.reason);
    }
    return h;
  }

  void set_baseline_median(double us) {
    baseline_us_ = us;
    iso_->variant_timeout_s = deadline(DeviceRunner::Options{});
  }

  void evaluate(const CompileResult& compiled, const Lowered& lowered, VariantRecord& rec,
                const DeviceRunner::Options& options) {
    FaultRecord f;
    int culprit = -1;
    bool exiting = false;
    if (!ready().run("evaluate", {{&compiled, &lowered, &rec}}, options, deadline(options), &f, &culprit, &exiting)) {
      worker_.reset();
      record_loss(rec, f, "");
    } else if (exiting) {
      worker_.reset();  // it reported a sticky CUDA error and exits
    }
  }

  // Re-measures the items in rounds; one that kills the worker is recorded and the rest are
  // re-measured in a fresh one (each alone when the culprit cannot be told).
  void remeasure(std::vector<WorkerItem> items, const DeviceRunner::Options& options) {
    while (!items.empty()) {
      FaultRecord f;
      int culprit = -1;
      bool exiting = false;
      const double d = deadline(options) * static_cast<double>(items.size());
      if (ready().run("remeasure", items, options, d, &f, &culprit, &exiting)) {
        if (exiting) worker_.reset();
        return;
      }
      worker_.reset();
      if (culprit < 0 || culprit >= static_cast<int>(items.size())) {
        for (const WorkerItem& it : items) remeasure({it}, options);
        return;
      }
      VariantRecord& lost = *items[static_cast<std::size_t>(culprit)].record;
      record_loss(lost, f, " in the strict re-measure");
      log_(fmt::format("strict re-measure: {} {}; the others are re-measured in a fresh worker", lost.name, lost.reason));
      items.erase(items.begin() + culprit);
    }
  }

 private:
  static constexpr double kFirstDeadlineS = 10, kMinDeadlineS = 5, kInitDeadlineS = 300, kFloorDeadlineS = 120;

  WorkerProcess& ready() {
    start();
    if (!ready_) {
      // The start runs the reference: its own deadline (reference.py named, exit 2) comes first.
      *reference_ = worker_->wait_ready(std::max(kInitDeadlineS, reference_timeout_s() + 60));
      ready_ = true;
    }
    return *worker_;
  }

  [[nodiscard]] double deadline(const DeviceRunner::Options& o) const {
    if (override_s_ > 0) return override_s_;
    if (!baseline_us_) return kFirstDeadlineS;
    const double launches = o.warmup_launches + 2 + o.rule.min_samples + 11.0 * o.batch_launches;
    return std::max(kMinDeadlineS, 2 + 2 * o.rule.wall_cap_seconds + 50 * launches * *baseline_us_ * 1e-6);
  }

  WorkerInit init_;
  double override_s_;
  RunContext::Isolation* iso_;
  std::string* reference_;
  RunContext::Isolation own_iso_;
  std::string own_reference_;
  std::function<void(const std::string&)> log_;
  std::optional<WorkerProcess> worker_;
  bool ready_ = false;
  std::optional<double> baseline_us_;
};

}  // namespace

ResultsLock::ResultsLock(const std::filesystem::path& results, const std::string& remedy)
    : path_(std::filesystem::path(results).replace_extension(".lock")) {
  for (;;) {
    fd_ = open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0)
      throw InputError(fmt::format("cannot create {} ({}); pass --out to choose another folder", path_.string(),
                                   std::strerror(errno)));
    if (flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      char buf[32] = {};
      const ssize_t n = pread(fd_, buf, sizeof(buf) - 1, 0);
      close(fd_);
      fd_ = -1;
      const std::string holder = n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string("?");
      throw InputError(fmt::format("another tune (pid {}) is writing {}; {}", holder.substr(0, holder.find('\n')),
                                   results.string(), remedy));
    }
    // The file may have been removed by a holder that just finished: lock the one on disk.
    struct stat held{}, now{};
    if (fstat(fd_, &held) == 0 && stat(path_.c_str(), &now) == 0 && held.st_ino == now.st_ino && held.st_dev == now.st_dev)
      break;
    close(fd_);
  }
  const std::string pid = std::to_string(getpid()) + "\n";
  if (ftruncate(fd_, 0) != 0 || pwrite(fd_, pid.data(), pid.size(), 0) < 0) {
    // The lock holds without the pid; the message then says "pid ?".
  }
}

ResultsLock::~ResultsLock() {
  std::error_code ec;
  std::filesystem::remove(path_, ec);  // still holding the lock: a newcomer retries on the new file
  close(fd_);
}

namespace {

// The journal's first line: what must match for --resume to continue a run.
nlohmann::ordered_json run_identity(const TuneOptions& o, const RunRecord& run, const Space& space) {
  return {{"tool_version", run.context.tool_version},
          {"git_commit", run.context.git_commit},
          {"device", run.device ? run.device->name : "none (compile only)"},
          {"device_index", o.device},
          {"device_uuid", run.device ? run.device->uuid : ""},
          {"problem", run.problem},
          {"shape", run.shape.tag()},
          {"seed", o.seed},
          {"source_hash", sources_hash(space, find_problem(o.problem))},
          {"reference", run.context.reference_identity},
          {"compile_options", run.context.compile_options},
          {"budget", o.budget},
          {"search", to_string(o.search)},
          {"keep_spills", o.keep_spills}};
}

// The identity without the card (its index and UUID): a sweep on several devices may run a shape on
// any of them, and cards of one model (the identity's device name) continue each other's runs.
nlohmann::ordered_json across_cards(nlohmann::ordered_json identity) {
  if (identity.is_object()) {
    identity.erase("device_index");
    identity.erase("device_uuid");
  }
  return identity;
}

// The first field in which two identities differ ("" when they are of one run).
std::string identity_difference(const nlohmann::ordered_json& mine, const nlohmann::ordered_json& theirs) {
  if (!theirs.is_object()) return "identity (none recorded)";
  for (const auto& [key, value] : mine.items())
    if (!theirs.contains(key) || theirs.at(key) != value) return key;
  for (const auto& [key, value] : theirs.items())
    if (!mine.contains(key)) return key;
  return "";
}

// The configurations a run times, and how they were found (for the log).
struct Chosen {
  std::vector<Config> configs;
  std::string how;
};

// An adaptive search strategy (run_tune) runs the pipeline in passes; this is what they share.
// The first pass's choose_configs fills `all`, `names` and `configs`; a later pass times `configs`
// (the run so far), taking the earlier passes' records from the journal. With search_only a pass
// ends after the search loop, its records in the journal, and writes no results.
struct Pass {
  std::vector<Config> all;         // the valid configurations
  std::vector<std::string> names;  // their variants' names
  std::vector<Config> configs;     // those chosen so far, in the order of `all`
  Config baseline;                 // the space's baseline (valid here or not)
  // The baseline's compile (8 to 16 s of NVRTC for contact's, on one core) is the longest of a
  // pass: the search passes leave it out while a thread of its own compiles it into the cache, and
  // the last pass times it (a cache hit by then).
  bool defer_baseline = false;
  std::jthread baseline_compile;
  bool search_only = true;
  int passes_done = 0;  // the passes before this one
  std::optional<HarnessFloor> floor;  // the first pass's
  Clock::time_point started = Clock::now();
  double compile_wall_s = 0, measure_wall_s = 0;  // spent by the earlier passes
};

// Those of `all` that are in `chosen`, in the order of `all`.
std::vector<Config> in_order(const std::vector<Config>& all, const std::set<Config>& chosen) {
  std::vector<Config> out;
  for (const Config& c : all)
    if (chosen.contains(c)) out.push_back(c);
  return out;
}

// `configs` with the baseline (where it is valid), in the order of `all`.
std::vector<Config> with_baseline(const std::vector<Config>& all, const std::vector<Config>& configs, const Config& base) {
  std::set<Config> chosen(configs.begin(), configs.end());
  if (std::find(all.begin(), all.end(), base) != all.end()) chosen.insert(base);
  return in_order(all, chosen);
}

// The first pass's choice: the valid configurations and their names, and what the search passes
// time (without the baseline while its compile is deferred).
void fill_pass(Pass& pass, const Space& space, const std::vector<Config>& all, std::vector<Config> chosen) {
  pass.all = all;
  pass.baseline = space.baseline();
  pass.names.clear();
  for (const Config& c : all) pass.names.push_back(space.name(c));
  if (pass.defer_baseline) std::erase(chosen, space.baseline());
  pass.configs = std::move(chosen);
}

using LogFn = std::function<void(const std::string&)>;

// A later pass of an adaptive search: the configurations chosen so far.
Chosen later_pass_configs(const Space& space, RunContext& ctx, const Pass& pass, const SearchStrategy& strategy) {
  strategy.record(ctx);
  ctx.valid_configs = static_cast<std::int64_t>(pass.all.size());
  std::vector<Config> configs = pass.configs;
  if (!pass.search_only && pass.defer_baseline) configs = with_baseline(pass.all, configs, space.baseline());
  SearchRounds rounds;
  strategy.rounds(rounds);
  return {configs, fmt::format("{} of {} valid configurations: the {}, {} model round(s) and {} refine round(s)",
                               configs.size(), pass.all.size(), rounds.first, rounds.model, rounds.refine)};
}

// The configurations a pass times: the search strategy's first choice (pipeline/search/strategy.hpp),
// or in a later pass of an adaptive one the run so far. The first pass of an adaptive search
// fills `pass`.
Chosen choose_configs(const TuneOptions& o, const std::string& problem, const Space& space, const Shape& shape,
                      const DeviceLimits& limits, RunContext& ctx, const LogFn& log, Pass* pass,
                      SearchStrategy& strategy) {
  ctx.space_configurations = space.size();
  if (pass && !pass->configs.empty()) return later_pass_configs(space, ctx, *pass, strategy);
  const SearchSetting setting{o, problem, space, shape, limits, log, pass && pass->defer_baseline};
  FirstBatch batch = strategy.first(setting, ctx);
  if (pass) {
    fill_pass(*pass, space, batch.all, std::move(batch.configs));
    batch.configs = pass->configs;
  }
  strategy.record(ctx);
  return {std::move(batch.configs), std::move(batch.how)};
}

// How much a record is worth keeping, compared in order: 2 a run that ended with a ranking (a
// winner, or a compile-only run), 1 a timed run that ended with no variant passed, 0 an interrupted
// one; between two interrupted runs, the one that recorded more variants (not pending or skipped).
std::pair<int, std::size_t> results_worth(const RunRecord& r) {
  if (r.complete && !r.context.interrupted) return {r.timed && !r.winner ? 1 : 2, 0};
  return {0, static_cast<std::size_t>(std::count_if(r.variants.begin(), r.variants.end(), [](const VariantRecord& v) {
            return v.status != Status::kPending && v.status != Status::kSkipped;
          }))};
}

// The results file a run's <shape>.json replaces: itself, else the <shape>.json.gz a result of
// record is kept as (which may not exist either).
std::filesystem::path earlier_result(const std::filesystem::path& json) {
  std::error_code ec;
  return std::filesystem::exists(json, ec) ? json : compressed_result_path(json);
}

// A finished run with a ranking (a winner, or a compile-only run) replaces an earlier results file
// that no reader accepts (issue 34 #21): that file is moved aside to <file>.unreadable-<UTC time>,
// never lost, and one line says so. Left in place it would block every later run of the shape.
void move_unreadable_aside(const std::filesystem::path& json, const RunRecord& run,
                           const std::function<void(const std::string&)>& log) {
  std::error_code ec;
  const auto path = earlier_result(json);
  if (results_worth(run).first < 2 || !std::filesystem::exists(path, ec)) return;
  try {
    (void)read_result(path);
    return;
  } catch (const InputError& e) {
    std::string stamp = now_iso8601();
    std::erase_if(stamp, [](char c) { return c == '-' || c == ':'; });
    const std::filesystem::path aside = path.string() + ".unreadable-" + stamp;
    std::filesystem::rename(path, aside, ec);
    if (ec) return;  // reason_to_keep keeps it then, and says why
    if (log) log(fmt::format("moved the earlier results {} aside to {}: they cannot be read ({})", path.string(),
                             aside.filename().string(), e.what()));
  }
}

// Why the results file at `path` (<shape>.json, else the <shape>.json.gz a result of record is kept
// as) stays as it is rather than being replaced by `run`'s record (empty: replace it). An earlier record is replaced by one at least as good (results_worth); one
// that cannot be read is kept, as it may hold what no tool here can read (a newer schema).
std::string reason_to_keep(const std::filesystem::path& json, const RunRecord& run) {
  std::error_code ec;
  const auto path = earlier_result(json);
  if (!std::filesystem::exists(path, ec)) return "";
  RunRecord earlier;
  try {
    earlier = read_result(path);
  } catch (const InputError& e) {
    return fmt::format("it cannot be read ({}); move it away for a run to replace it", e.what());
  }
  const auto mine = results_worth(run), theirs = results_worth(earlier);
  if (mine >= theirs) return "";
  const std::string what = mine.first == 0 ? "this run was interrupted" : "no variant of this run passed";
  if (theirs.first == 0)
    return fmt::format("{}, and they record more variants of an interrupted run ({}, this run {})", what, theirs.second,
                       mine.second);
  return earlier.winner ? fmt::format("{}, and they name a winner ({})", what, *earlier.winner)
                        : fmt::format("{}, and they are of a run that finished", what);
}

}  // namespace

std::filesystem::path partial_results_path(const std::filesystem::path& json_path) {
  return std::filesystem::path(json_path.string() + ".partial");
}

std::string fit_line(const std::string& prefix, const std::string& name, const std::string& detail,
                     const std::string& tail, std::size_t width) {
  const std::string whole = prefix + name + detail + tail;
  if (width == 0 || whole.size() <= width) return whole;
  constexpr std::string_view kCut = "...";
  constexpr std::size_t kFewestNameColumns = 20;
  // The name cut to `room` columns, "..." included.
  auto cut = [&](std::size_t room) { return name.substr(0, room - kCut.size()) + std::string(kCut); };
  const std::size_t with_detail = prefix.size() + detail.size() + tail.size();
  if (with_detail + std::min(kFewestNameColumns, name.size()) <= width)
    return prefix + (name.size() + with_detail <= width ? name : cut(width - with_detail)) + detail + tail;
  const std::size_t without = prefix.size() + tail.size();
  if (name.size() + without <= width) return prefix + name + tail;
  if (without + kCut.size() < width) return prefix + cut(width - without) + tail;
  return whole.substr(0, width);
}

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const auto s = static_cast<long long>(std::llround(seconds));
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60);
}

CompileRequest compile_request(const Lowered& lowered, std::vector<std::string> options) {
  if (!lowered.sources) throw InputError("the search space was read without its template files; load it from a file");
  CompileRequest req{lowered.sources->main, lowered.template_name, {}, std::move(options),
                     with_cuda_headers(lowered.sources->main, lowered.sources->headers)};
  for (const auto& k : lowered.launches) req.name_expressions.push_back(k.name_expression);
  return req;
}

namespace {

// context.tensors: every tensor at the bound shape, in role order.
std::vector<TensorRecord> tensor_records(const Problem& problem, const Shape& shape) {
  std::vector<TensorRecord> out;
  auto add = [&](const std::vector<TensorSpec>& specs, const char* role) {
    for (const auto& s : specs) out.push_back({s.name, role, std::string(dtype_name(s.dtype)), s.shape});
  };
  add(problem.param_specs(shape), "parameter");
  add(problem.input_specs(shape), "input");
  add({problem.output_spec(shape)}, "output");
  return out;
}

}  // namespace

namespace {
constexpr EnumName<SearchMode> kSearchModeNames[] = {
    {SearchMode::kExhaustive, "exhaustive"}, {SearchMode::kHalving, "halving"}, {SearchMode::kModel, "model"}};
}  // namespace

std::string to_string(SearchMode mode) {
  return std::string(enum_name(kSearchModeNames, mode).value_or("exhaustive"));
}

SearchMode search_mode_from_string(const std::string& text) {
  if (const auto mode = enum_value(kSearchModeNames, text)) return *mode;
  throw InputError(fmt::format("--search {}: expected {}", text, fmt::join(search_mode_names(), ", ")));
}

std::vector<std::string> search_mode_names() {
  std::vector<std::string> out;
  for (const auto& [m, name] : kSearchModeNames) out.emplace_back(name);
  return out;
}

namespace {

// The journal's stage of a strategy's second round (SearchStrategy::second_round): "halving", the
// name journals of --search halving have always had, so --resume reads the earlier ones.
constexpr const char* kSecondRoundStage = "halving";

// A run (run_tune), or one pass of an adaptive search strategy: all of it, or with pass->search_only up to
// the end of the search. Its phases follow the data flow (issue 23): the device, the plan (the
// configurations), the outputs' place, the variants lowered, the journal, the worker, the compile
// pipeline feeding the search, then the halving round, the strict re-measure, the gate and the
// outputs. gpu: the worker, kept from pass to pass. The members are in the order they are made:
// they are destroyed in reverse (the compile threads before what they fill, the journal and the
// results lock last but the stop scope).
struct PassRun {
  const TuneOptions& o;
  Pass* pass;
  SearchStrategy& strategy;
  std::optional<IsolatedRunner>& gpu;
  const Clock::time_point t_start;
  const StopScope stop_scope;
  const std::function<void(const std::string&)> log;
  const RunPlan& plan;  // resolved once by run_tune (plan_run): every pass reads it, none resolves it again
  const Problem& problem = *plan.problem;
  const Space& space = plan.space;
  const Shape& shape = plan.shape;
  RunRecord run;
  RunContext& ctx = run.context;

  // the plan's device, and the limits every variant is lowered for
  const bool compile_only = plan.compile_only, fake = plan.fake;
  const int cc = plan.cc;
  const DeviceLimits& limits = plan.limits;
  // plan
  std::vector<Config> chosen;
  std::string chosen_how;
  // open_outputs
  const std::filesystem::path& json_path = plan.json_path;
  const std::filesystem::path& partial_path = plan.partial_path;
  std::optional<ResultsLock> results_lock;
  std::optional<CompilePool> compiler;
  int gate_exit_code = 0;  // settle_unchecked: the gate could not run and nothing unchecked may win
  // lower_variants
  std::vector<Lowered> lowered;
  std::optional<std::size_t> baseline_index;
  std::size_t n = 0;
  // open_journal
  std::filesystem::path journal_path;
  std::vector<char> journaled, halved;
  std::optional<Journal> journal;
  Clock::time_point last_save;
  // start_compiles: compile on all cores; the GPU measures each variant as soon as it is compiled
  // (one at a time).
  std::mutex mutex;
  std::condition_variable ready;
  std::deque<std::size_t> compiled_queue;
  std::vector<CompileResult> results;
  std::vector<char> from_cache;
  std::atomic<std::size_t> next{0};
  std::size_t compiled_count = 0;
  std::vector<std::size_t> compile_order;  // the variants to compile, baseline first; fixed once the threads start
  Clock::time_point t_compile;
  double compile_wall = 0;
  std::vector<std::jthread> pool;
  // search
  DeviceRunner::Options first_round;
  double measure_busy = 0;
  std::size_t checked = 0, passed = 0;
  std::optional<double> best;
  bool floor_measured = false;

  PassRun(const RunPlan& run_plan, const TuneOptions& options, Pass* p, SearchStrategy& s, std::optional<IsolatedRunner>& g)
      : o(options), pass(p), strategy(s), gpu(g), t_start(p ? p->started : Clock::now()),
        log([&options](const std::string& line) {
          if (options.log) options.log(line);
        }),
        plan(run_plan) {
    run.problem = std::string(problem.name());
    run.shape = shape;
    run.seed = o.seed;
    run.flop = plan.counts.flop;
    run.bytes = plan.counts.bytes;
  }
  PassRun(const PassRun&) = delete;
  PassRun& operator=(const PassRun&) = delete;

  // The plan's device (plan_run said what it is; a later pass says it again).
  void open_device() {
    if (pass && pass->passes_done > 0 && !plan.device_note.empty()) log(plan.device_note);
    run.device = plan.device;
    run.untimed_reason = plan.untimed_reason;
    run.timed = !compile_only;
  }

  // The variants, chosen before anything is written: a space too large to enumerate, or a run of
  // more variants than --max-variants, is refused in one line and leaves no file behind.
  void choose_variants() {
    Chosen chosen_configs = choose_configs(o, run.problem, space, shape, limits, ctx, log, pass, strategy);
    chosen = std::move(chosen_configs.configs);
    chosen_how = std::move(chosen_configs.how);
    ctx.shard = o.shard;
    if (o.shard && o.shard->split == "variants") {
      chosen = shard_configs(chosen, space.baseline(), *o.shard, &*ctx.shard);
      log(fmt::format("shard {}/{}: {} of {} variants", o.shard->index, o.shard->count, chosen.size(), ctx.shard->variants));
    }
    if (chosen.size() > o.max_variants)
      throw InputError(fmt::format("{} {}: {} variants ({}) are more than --max-variants {} a run compiles and times (each "
                                   "keeps its record in memory; at {:.1f} s a compile, {} of one core); pass --budget N to "
                                   "time a random sample, restrict the space, split it with --shard, or raise "
                                   "--max-variants",
                                   o.problem, shape.describe(), chosen.size(), chosen_how, o.max_variants,
                                   kSecondsPerCompile, format_duration(kSecondsPerCompile * static_cast<double>(chosen.size()))));
    if (compile_only) say_compile_only();
  }

  // A compile-only sweep says, once its variants are counted, how long it may take and where its
  // results go, before anything compiles (issue 34); with more than a sample, how to make it short.
  void say_compile_only() const {
    const int jobs = CompilePool::jobs_for(o.jobs);
    const double seconds = kSecondsPerCompile * static_cast<double>(chosen.size()) / jobs;
    const auto dir = o.out_dir / ("compile-only-" + arch_name(cc)) / run.problem;
    const bool sample = o.budget <= 0 && chosen.size() > kSuggestedSample;
    log(fmt::format("compile-only sweep: {} variants for {} on {} compile job(s), about {} ({:.1f} s a compile a job; "
                    "less from the compile cache), results into {}/{}",
                    chosen.size(), arch_name(cc), jobs, format_duration(seconds), kSecondsPerCompile, dir.string(),
                    sample ? fmt::format("; --budget {} compiles a sample", kSuggestedSample) : std::string()));
  }

  // Where the results go (locked for this run), and the run's context.
  void open_outputs() {
    check_writable(json_path.parent_path());
    if (o.header && o.header->has_parent_path()) check_writable(o.header->parent_path());
    results_lock.emplace(json_path);

    ctx.tool_version = tool_version();
    ctx.git_commit = tool_git_commit();
    ctx.command_line = o.command_line;
    ctx.started_at = now_iso8601();
    ctx.host = host_name();
    ctx.nvrtc_version = nvrtc_version();
    ctx.cuda_header_version = fmt::format("{}.{}", CUDA_VERSION / 1000, (CUDA_VERSION % 1000) / 10);
    ctx.arch = arch_name(cc);
    ctx.compile_options = default_options(cc);
    ctx.config_file = o.config ? o.config->string() : problem.file().string() + std::string(kProblemFileMark);
    ctx.source_hash = sources_hash(space, problem);
    ctx.tensors = tensor_records(problem, shape);
    ctx.reference_identity = run.device ? problem.reference_identity(reference_backend_from_env()) : "none (compile only)";
    ctx.gate.jobs = gate_jobs();  // a bad TUNE_GATE_JOBS is refused before anything is measured
    compiler.emplace(compile_cache_for(o.no_cache, o.cache_dir), o.jobs, log);
    ctx.jobs = compiler->jobs();
    ctx.compile_cache = compiler->cache_description();
  }

  // Records for every variant up front: an interrupted run shows what was never reached.
  void lower_variants() {
    ProgressLog lowering(log, "lowering the variants");
    for (const Config& c : chosen) {
      lowering.tick(lowered.size(), chosen.size(), "");
      VariantRecord r;
      r.name = space.name(c);
      r.params = space.to_json(c);
      r.baseline = c == space.baseline();
      Lowered l = space.lower(c, shape, limits);
      for (const auto& k : l.launches)
        r.launches.push_back({{"kernel", k.name_expression},
                              {"grid", k.grid},
                              {"block", k.block},
                              {"dynamic_smem_bytes", k.dynamic_smem}});
      run.variants.push_back(std::move(r));
      lowered.push_back(std::move(l));
    }
    n = run.variants.size();
    find_baseline();
    log(fmt::format("{} {}: {} variants ({}), {} compile jobs, {}", o.problem, shape.describe(), n, chosen_how, ctx.jobs,
                    run.device ? run.device->name + " (" + ctx.arch + ")" : ctx.arch + ", compile only"));
  }

  // The baseline among the variants; else, in a search pass that defers it, its compile started on a
  // thread of its own (the last pass times it); else a note that no speedup will be reported.
  void find_baseline() {
    const auto it = std::find_if(run.variants.begin(), run.variants.end(), [](const auto& v) { return v.baseline; });
    if (it != run.variants.end()) {
      run.baseline = it->name;
      baseline_index = static_cast<std::size_t>(it - run.variants.begin());
    } else if (pass && pass->defer_baseline && pass->search_only) {
      if (!pass->baseline_compile.joinable() &&
          std::find(pass->all.begin(), pass->all.end(), space.baseline()) != pass->all.end())
        pass->baseline_compile = std::jthread(
            [request = compile_request(space.lower(space.baseline(), shape, limits), ctx.compile_options),
             cache = compile_cache_for(o.no_cache, o.cache_dir), jobs = o.jobs] {
              const CompilePool baseline_pool(cache, jobs, nullptr);
              bool cached = false;
              (void)baseline_pool.compile(request, &cached);
            });
    } else {
      log(fmt::format("note: the baseline violates '{}' at this shape; no speedup will be reported",
                      space.violated_constraint(space.baseline(), shape, limits)));
    }
  }

  // This shape's results file in another device's folder of the sweep (TuneOptions::resume_dirs).
  [[nodiscard]] std::filesystem::path in_folder(const std::string& dir) const {
    return o.out_dir / dir / run.problem / json_path.filename();
  }

  // --resume (issue 34 #7): the shape's results, complete for this run's identity, in this device's
  // folder (or another's of the sweep, for a card of the same model) are kept as they are and nothing
  // is tuned. Not while this folder holds the shape's journal (a run to continue), nor in a later pass.
  std::optional<TuneOutcome> finished_earlier() {
    std::error_code ec;
    if (!o.resume || (pass && pass->passes_done > 0) || std::filesystem::exists(Journal::path_for(json_path), ec))
      return std::nullopt;
    const auto identity = run_identity(o, run, space);
    std::vector<std::filesystem::path> candidates{json_path};
    for (const auto& dir : o.resume_dirs) candidates.push_back(in_folder(dir));
    for (const auto& json : candidates) {
      const auto file = earlier_result(json);
      RunRecord earlier;
      try {
        if (!std::filesystem::exists(file, ec)) continue;
        earlier = read_result(file);
      } catch (const InputError&) {
        continue;  // the run replaces it, or keeps it (reason_to_keep), as without --resume
      }
      if (!earlier.complete || earlier.context.interrupted) continue;
      const std::string differs = json == json_path
          ? identity_difference(identity, earlier.context.run_identity)
          : identity_difference(across_cards(identity), across_cards(earlier.context.run_identity));
      if (!differs.empty()) {
        log(fmt::format("--resume: {} is complete, but not for this run (its {} differs); {} is tuned again",
                        file.string(), differs, shape.tag()));
        continue;
      }
      log(fmt::format("{}: already complete in {}; skipped", shape.tag(), file.string()));
      TuneOutcome out{.run = std::move(earlier), .json_path = file, .header_path = std::nullopt, .already_complete = true};
      if (const auto header = json.parent_path() / (shape.tag() + ".hpp"); out.run.winner && std::filesystem::exists(header, ec))
        out.header_path = header;
      return out;
    }
    return std::nullopt;
  }

  // --resume with --devices (issue 34 #8): the shape's journal in another device's folder of the
  // sweep (the shape ran there before the interruption), of this run but for the card, moves here
  // with its records; that folder's journal and snapshot of the shape are removed.
  void adopt_journal(const nlohmann::ordered_json& identity) {
    std::error_code ec;
    for (const auto& dir : o.resume_dirs) {
      const auto other_json = in_folder(dir);
      const auto other = Journal::path_for(other_json);
      if (other_json == json_path || !std::filesystem::exists(other, ec)) continue;
      std::optional<ResultsLock> other_lock;  // that folder's writer of the shape: none may be running
      std::vector<Journal::Entry> entries;
      try {
        other_lock.emplace(other_json);
        entries = Journal::read(other, across_cards(identity));
      } catch (const InputError& e) {
        log(fmt::format("--resume: another device's journal is not taken: {}", e.what()));
        continue;
      }
      {
        Journal moved = Journal::create(journal_path, identity);
        for (const auto& e : entries) moved.append(e.stage, e.record);
      }
      std::filesystem::remove(other, ec);
      std::filesystem::remove(partial_results_path(other_json), ec);  // its lock file goes with other_lock
      log(fmt::format("--resume: {} records of {} moved from {} (another device's folder) to {}", entries.size(),
                      shape.tag(), other.string(), journal_path.string()));
      return;
    }
  }

  // The journal: a fresh one, or with --resume the records of the interrupted run it identifies.
  void open_journal() {
    journal_path = Journal::path_for(json_path);
    ctx.journal = journal_path.string();
    const auto identity = run_identity(o, run, space);
    ctx.run_identity = identity;
    journaled.assign(n, 0);
    halved.assign(n, 0);
    if (o.resume && !std::filesystem::exists(journal_path)) adopt_journal(identity);
    if (o.resume && std::filesystem::exists(journal_path)) {
      const std::size_t refused = take_journal(identity);
      ctx.resumed_variants = static_cast<int>(std::count(journaled.begin(), journaled.end(), 1));
      if (pass && pass->passes_done > 0 && stop_requested()) {  // the last pass, after a stop: it only writes
        log(fmt::format("writing the {} of {} variants measured before the stop (journal {})", ctx.resumed_variants, n,
                        journal_path.string()));
      } else if (pass && pass->passes_done > 0) {  // a later pass: resumed by run_tune, not by the user
        log(fmt::format("pass {}: {} of {} variants measured by the earlier passes (journal {}); {} to compile and "
                        "measure", pass->passes_done + 1, ctx.resumed_variants, n, journal_path.string(), n - static_cast<std::size_t>(ctx.resumed_variants)));
      } else {
        log(fmt::format("--resume: {} of {} variants taken from {}; the rest are compiled and measured", ctx.resumed_variants,
                        n, journal_path.string()) +
            (refused ? fmt::format(" ({} journal records not taken: not final, or not this run's variants)", refused) : ""));
      }
      journal.emplace(Journal::append_to(journal_path));
    } else {
      if (o.resume) log(fmt::format("--resume: no journal at {}; starting a fresh run", journal_path.string()));
      else if (std::filesystem::exists(journal_path))
        log(fmt::format("replacing the journal of an earlier run, {} (--resume continues one)", journal_path.string()));
      journal.emplace(Journal::create(journal_path, identity));
    }
    save();
  }

  // Only final records of this run's variants are taken: a status the search ends with (not
  // pending, not compiled in a timed run), the same parameters and baseline flag as the variant of
  // that name, a timing where it passed. Anything else is measured again. Returns those refused.
  std::size_t take_journal(const nlohmann::ordered_json& identity) {
    std::map<std::string, std::size_t> by_name;
    for (std::size_t i = 0; i < n; ++i) by_name[run.variants[i].name] = i;
    std::size_t refused = 0;
    for (auto& e : Journal::read(journal_path, identity)) {
      const auto it = by_name.find(e.record.name);
      if (it == by_name.end()) {
        ++refused;
        continue;
      }
      const VariantRecord& mine = run.variants[it->second];
      const Status st = e.record.status;
      const bool final_status = st != Status::kPending && st != Status::kUnsafe &&
                                !(run.timed && st == Status::kCompiled) && (st != Status::kPassed || e.record.timing);
      const bool halving_ok = e.stage != kSecondRoundStage || (st == Status::kPassed && journaled[it->second]);
      if (!final_status || !halving_ok || e.record.params != mine.params || e.record.baseline != mine.baseline) {
        ++refused;
        continue;
      }
      run.variants[it->second] = std::move(e.record);
      (e.stage == kSecondRoundStage ? halved : journaled)[it->second] = 1;
    }
    return refused;
  }

  // The run's snapshot, complete as far as it goes, rewritten at most every 2 s while variants
  // finish (the journal holds each record the moment it exists; rewriting the whole file per
  // variant made a 500-variant run spend seconds serializing) and at every stage boundary. It goes
  // to <shape>.json.partial: the results file and its header are replaced only when the run ends
  // with something at least as good (issue 22, item 7), so a re-run that dies keeps them as they were.
  void save(bool force = true) {
    if (!force && seconds_since(last_save) < 2.0) return;
    run.wall.total_wall_s = seconds_since(t_start);
    write_file_atomic(partial_path, to_json(run).dump(2) + "\n");
    last_save = Clock::now();
  }

  // The worker process starts now: its data and float64 reference are prepared while compilation runs.
  // A later pass of an adaptive search keeps the worker of the first (gpu holds it).
  void start_worker() {
    ctx.isolation.test_hooks = worker_test_hooks();
    if (!gpu)
      for (const auto& h : ctx.isolation.test_hooks) log("test hook active: " + h);
    if (run.timed && gpu) {
      gpu->rebind(ctx);
    } else if (run.timed) {
      ctx.isolation.worker = fake ? "fake (TUNE_WORKER_FAKE: synthetic results, nothing measured)" : "process";
      gpu.emplace(WorkerInit{problem.file().string(), shape, o.seed, o.device}, o.variant_timeout_s, ctx, log);
    }
    if (run.timed) gpu->start();
  }

  // The compile threads. The baseline compiles (and so is measured) first: a run cut short still has
  // its speedup. Variants the journal already holds are not compiled (unless the strict re-measure
  // needs them).
  void start_compiles() {
    results.resize(n);
    from_cache.assign(n, 0);
    if (baseline_index && !journaled[*baseline_index]) compile_order.push_back(*baseline_index);
    for (std::size_t i = 0; i < n; ++i)
      if (!journaled[i] && !run.variants[i].baseline) compile_order.push_back(i);
    ctx.time_budget_s = o.time_budget_s;
    t_compile = Clock::now();
    if (stop_requested()) return;  // the search loop stops at its first step: nothing is compiled
    if (pass && !pass->search_only && pass->baseline_compile.joinable()) {
      const auto t_wait = Clock::now();
      pass->baseline_compile.join();  // the baseline, compiled into the cache while the search passes ran
      if (seconds_since(t_wait) > 0.5)
        log(fmt::format("waited {:.1f} s for the baseline's compile", seconds_since(t_wait)));
    }
    for (int t = 0; t < ctx.jobs; ++t)
      pool.emplace_back([this] {
        for (std::size_t k = next++; k < compile_order.size(); k = next++) compile_and_queue(compile_order[k]);
      });
  }

  CompileResult compile_one(std::size_t i, bool* cached) {
    return compiler->compile(compile_request(lowered[i], ctx.compile_options), cached);
  }

  void compile_and_queue(std::size_t i) {
    bool cached = false;
    CompileResult r = compile_one(i, &cached);
    std::lock_guard lock(mutex);
    results[i] = std::move(r);
    from_cache[i] = cached;
    compiled_queue.push_back(i);
    if (++compiled_count == compile_order.size()) compile_wall = seconds_since(t_compile);
    ready.notify_one();
  }

  // A journaled variant the strict re-measure needs comes from the compile cache (or compiles again).
  void ensure_compiled(std::size_t i) {
    bool cached = false;
    if (!results[i].ok && results[i].cubin.empty() && journaled[i]) results[i] = compile_one(i, &cached);
  }

  // The search pass's profile, the strategy's (batch and graph means of 20 launches; the top few
  // and the baseline get 100 in the strict re-measure, whose figures the report shows), and the
  // counts of the records taken from the journal, which count as done.
  void prepare_search() {
    first_round = strategy.profile();
    for (std::size_t i = 0; i < n; ++i) {
      const VariantRecord& r = run.variants[i];
      if (!journaled[i] || !r.parity) continue;
      ++checked;
      if (r.status != Status::kPassed || !r.timing) continue;
      ++passed;
      if (!best || r.timing->median_us < *best) best = r.timing->median_us;
      if (r.baseline && gpu) gpu->set_baseline_median(r.timing->median_us);
    }
    floor_measured = pass && pass->floor;  // measured by an earlier pass of this run
    if (floor_measured) run.harness_floor = pass->floor;
  }

  // Each variant as it comes out of the compile threads: measured, logged, journaled.
  void search() {
    for (std::size_t done = journaled_count(); done < n; ++done) {
      if (stop_requested()) {
        ctx.interrupted = true;
        next = n;
        log(fmt::format("interrupted by {}: {} of {} variants done; writing what was measured ({} again to stop at once)",
                        signal_name(interrupt_signal()), done, n, interrupt_signal() == SIGINT ? "Ctrl-C" : signal_name(interrupt_signal())));
        break;
      }
      if (!ctx.stopped_by_time_budget && o.time_budget_s > 0 && seconds_since(t_start) > o.time_budget_s)
        stop_for_time_budget(done);
      // Once stopped, only the baseline is still taken (it compiles first, so it is seldom waited for).
      const bool only_baseline = ctx.stopped_by_time_budget;
      if (only_baseline && !baseline_pending()) break;
      const std::size_t i = take_compiled(only_baseline);
      measure(i);
      log_progress(done, i);
      run.wall.compile_wall_s = compile_wall > 0 ? compile_wall : seconds_since(t_compile);
      journal->append("search", run.variants[i]);
      save(false);
    }
    end_search();
  }

  // Variants the journal held at the start: not compiled or measured again.
  [[nodiscard]] std::size_t journaled_count() const { return n - compile_order.size(); }

  [[nodiscard]] bool baseline_pending() const {
    return baseline_index && run.variants[*baseline_index].status == Status::kPending;
  }

  // The workers take no new variant; those in flight finish. A budget spent before any worker took
  // the baseline (a loaded machine, a large space to lower) compiles it here, else the wait for it
  // would never end.
  void stop_for_time_budget(std::size_t done) {
    ctx.stopped_by_time_budget = true;
    const std::size_t taken = next.exchange(n);
    if (taken == 0 && !compile_order.empty() && baseline_index && compile_order[0] == *baseline_index)
      compile_and_queue(*baseline_index);
    log(fmt::format("time budget of {} s reached: {} of {} variants done, the rest recorded as skipped{}",
                    o.time_budget_s, done, n, baseline_pending() ? " (the baseline still runs)" : ""));
  }

  // The next compiled variant (only the baseline, once the time budget is spent).
  std::size_t take_compiled(bool only_baseline) {
    std::unique_lock lock(mutex);
    if (only_baseline) {
      auto has = [&] { return std::find(compiled_queue.begin(), compiled_queue.end(), *baseline_index); };
      ready.wait(lock, [&] { return has() != compiled_queue.end(); });
      compiled_queue.erase(has());
      return *baseline_index;
    }
    ready.wait(lock, [&] { return !compiled_queue.empty(); });
    const std::size_t i = compiled_queue.front();
    compiled_queue.pop_front();
    return i;
  }

  // A compiled variant's record: failed, compiled (no device), pruned for its spills, or evaluated
  // by the worker (the harness floor first, once a run).
  void measure(std::size_t i) {
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
      if (!floor_measured) measure_floor();
      const auto t = Clock::now();
      gpu->evaluate(cr, lowered[i], rec, first_round);
      const double took = seconds_since(t);
      rec.evaluate_ms = took * 1e3;
      measure_busy += took;
      ++checked;
      if (rec.status == Status::kPassed) {
        ++passed;
        if (!best || rec.timing->median_us < *best) best = rec.timing->median_us;
        if (rec.baseline) gpu->set_baseline_median(rec.timing->median_us);
      }
    }
    if (rec.spill_bytes() > 0 && rec.reason.empty()) rec.reason = fmt::format("spills {} bytes", rec.spill_bytes());
  }

  void measure_floor() {
    run.harness_floor = gpu->floor();
    floor_measured = true;
    if (pass) pass->floor = run.harness_floor;
    log(fmt::format("harness floor (empty kernel): cold {:.2f} us, batch {:.2f} us, graph {:.2f} us",
                    run.harness_floor->empty_cold_us, run.harness_floor->empty_batch_us,
                    run.harness_floor->empty_graph_us));
  }

  // Elapsed time and the search's remaining time at this run's pace so far (resumed records took
  // none of it); on a terminal the name is cut to fit the line (TuneOptions::line_width).
  void log_progress(std::size_t done, std::size_t i) {
    const VariantRecord& rec = run.variants[i];
    const double elapsed = seconds_since(t_start);
    const double pace = seconds_since(t_compile) / static_cast<double>(done + 1 - journaled_count());
    log(fit_line(fmt::format("[{:>3}/{}] {}  {:<14} {}", done + 1, n,
                             rec.compile_cached ? std::string("from cache    ")
                                                : fmt::format("compiled {:5.1f}s", results[i].seconds),
                             to_string(rec.status),
                             rec.timing ? fmt::format("{:9.2f} us  ", rec.timing->median_us) : std::string(13, ' ')),
                 rec.name,
                 run.timed ? fmt::format("   (checked {}, passed {}, best {})", checked, passed,
                                         best ? fmt::format("{:.2f} us", *best) : "-")
                           : std::string(),
                 fmt::format("  {} elapsed{}", format_duration(elapsed),
                             ctx.stopped_by_time_budget ? std::string()
                                                        : ", eta " + format_duration(pace * static_cast<double>(n - done - 1))),
                 o.line_width));
  }

  // The compile threads joined; what the search never reached is recorded as skipped.
  void end_search() {
    pool.clear();
    if (ctx.stopped_by_time_budget || ctx.interrupted) {
      if (compile_wall == 0) compile_wall = seconds_since(t_compile);
      for (auto& v : run.variants)
        if (v.status == Status::kPending) {
          v.status = Status::kSkipped;
          v.reason = ctx.interrupted ? fmt::format("not reached: the run was interrupted ({})", signal_name(interrupt_signal()))
                                     : fmt::format("not reached: the --time-budget of {} s ran out", o.time_budget_s);
        }
    }
    run.wall.compile_wall_s = compile_wall + (pass ? pass->compile_wall_s : 0);
  }

  // A search pass ends here: the records are in the journal; the next pass takes them and run_tune
  // chooses what follows.
  TuneOutcome end_search_pass() {
    run.wall.measure_wall_s = measure_busy + pass->measure_wall_s;
    save();
    if (gpu) gpu->detach();
    return {run, json_path, std::nullopt};
  }

  // The `keep` fastest passed variants (by their current cold median), fastest first.
  [[nodiscard]] std::vector<std::size_t> fastest_passed(std::size_t keep) const {
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
  }

  // A stop asked for after the search's last variant: the passes that follow are not started.
  bool stop_asked() {
    if (stop_requested() && !ctx.interrupted) {
      ctx.interrupted = true;
      log(fmt::format("interrupted by {}: every variant searched; the passes that follow are left to --resume",
                      signal_name(interrupt_signal())));
    }
    return ctx.interrupted;
  }

  // The strategy's second round (successive halving): the best of the screened variants timed again
  // with the search profile (parity already passed); the others keep their screening time.
  void second_round() {
    const auto screened = static_cast<std::size_t>(
        std::count_if(run.variants.begin(), run.variants.end(), [](const auto& v) { return v.status == Status::kPassed; }));
    const std::size_t keep = strategy.second_round(screened);
    if (keep == 0 || stop_asked()) return;
    const auto promoted = fastest_passed(keep);
    log(fmt::format("{}: timing the best {} of {} screened variants again with the search profile", strategy.name(),
                    promoted.size(), screened));
    DeviceRunner::Options second_round;
    second_round.check_parity = false;
    const auto t = Clock::now();
    for (const std::size_t i : promoted) {
      if (halved[i]) continue;  // done before the run was resumed
      ensure_compiled(i);
      gpu->evaluate(results[i], lowered[i], run.variants[i], second_round);
      journal->append(kSecondRoundStage, run.variants[i]);
    }
    measure_busy += seconds_since(t);
    save();
  }

  std::vector<WorkerItem> items_of(const std::vector<std::size_t>& idx) {
    std::vector<WorkerItem> items;
    for (const std::size_t i : idx) {
      ensure_compiled(i);
      items.push_back({&results[i], &lowered[i], &run.variants[i]});
    }
    return items;
  }

  void remeasure_strictly(const std::vector<std::size_t>& idx) {
    const auto items = items_of(idx);
    const auto t = Clock::now();
    DeviceRunner::Options strict;
    strict.rule = StopRule::strict();
    gpu->remeasure(items, strict);
    measure_busy += seconds_since(t);
  }

  // The top few (and the baseline), re-measured strictly in rounds, before a winner is named. The
  // finalists, for the gate.
  std::vector<std::size_t> strict_remeasure() {
    std::vector<std::size_t> order = fastest_passed(static_cast<std::size_t>(o.top_k));
    const std::size_t top = order.size();
    if (baseline_index && run.variants[*baseline_index].status == Status::kPassed &&
        std::find(order.begin(), order.end(), *baseline_index) == order.end())
      order.push_back(*baseline_index);
    if (!order.empty() && !stop_asked()) {
      log(fmt::format("re-measuring the top {}{} strictly, in rounds", top, order.size() > top ? " and the baseline" : ""));
      remeasure_strictly(order);
    }
    name_winner(run);
    return order;
  }

  // The correctness gate (tune/gate.hpp): the finalists' outputs on more inputs and over many
  // launches, then the sanitizers; a finalist that fails never wins, and when every gated one has
  // failed the next few are re-measured strictly and gated in turn.
  void gate_finalists(const std::vector<std::size_t>& finalists) {
    const auto t_gate = Clock::now();
    GateSettings settings;
    settings.mode = sanitize_mode_from_string(o.sanitize);
    settings.problem = problem.file().string();
    settings.shape = shape;
    settings.seed = o.seed;
    settings.device = o.device;
    settings.fake = fake;
    settings.allow_unchecked = o.allow_unchecked;
    settings.verdict_cache = verdict_cache_for(o.no_cache, o.cache_dir);
    settings.fresh = o.fresh_verdicts;
    settings.log = log;
    ctx.gate.baseline_rule = kGateBaselineRule;
    Gate gate(settings, ctx.gate);
    std::vector<char> out_checked(n, 0), sanitized(n, 0);
    std::vector<std::size_t> batch = finalists;
    for (int round = 1;; ++round) {
      ctx.gate.rounds = round;
      gate_round(gate, settings.rounds, batch, out_checked, sanitized);
      if (gate_stopped(gate) || !run.winner || out_checked[index_of(*run.winner)] || stop_asked()) break;
      // Every gated finalist failed and an unchecked variant is now the fastest: the next ones,
      // twice as many each round (a defect shared by a whole family of variants takes a few
      // rounds, not one per --top variants), at most 64.
      const std::size_t want =
          std::min<std::size_t>(64, std::max<std::size_t>(1, static_cast<std::size_t>(o.top_k)) << std::min(round, 6));
      std::vector<std::size_t> upcoming;
      for (const std::size_t i : fastest_passed(n))
        if (!out_checked[i] && upcoming.size() < want) upcoming.push_back(i);
      log(fmt::format("gate: round {}: no gated finalist may win; re-measuring the next {} strictly and gating them",
                      round + 1, upcoming.size()));
      remeasure_strictly(upcoming);
      batch = upcoming;
    }
    ctx.gate.wall_s = seconds_since(t_gate);
    for (const auto& v : run.variants) count_gated(v, ctx.gate);
    settle_unchecked(gate);
  }

  // A gate that could not run stops (issue 34): the checks left are not worth another wait, and the
  // run ends as a run error, unless --allow-unchecked lets an unchecked finalist win.
  bool gate_stopped(const Gate& gate) const { return !gate.could_not_run().empty() && !o.allow_unchecked; }

  // Without --allow-unchecked no variant the gate could not check wins: the results keep what was
  // measured (the finalists `unchecked`), name no winner and get no header, and the run exits 2 or 3.
  void settle_unchecked(const Gate& gate) {
    name_winner(run);
    const VariantRecord* w = run.winner ? run.find(*run.winner) : nullptr;
    if (w && w->gate && w->gate->verdict == "unchecked")
      log(fmt::format("gate: {} wins unchecked ({}), as --allow-unchecked allows", w->name, w->gate->reason));
    if (!gate_stopped(gate) || (w && w->gate && w->gate->verdict == "safe")) return;
    gate_exit_code = gate.could_not_run_exit_code();
    run.winner.reset();
    run.speedup.reset();
  }

  std::size_t index_of(const std::string& name) const {
    return static_cast<std::size_t>(run.find(name) - run.variants.data());
  }

  void say(const std::vector<std::size_t>& idx) const {
    for (const std::size_t i : idx)
      if (const auto& v = run.variants[i]; v.gate) log(fmt::format("gate: {} {}: {}", v.gate->verdict, v.name, v.gate->reason));
  }

  // One round of the gate over `batch`: the output checks of those not yet checked, the sanitizers
  // on them (--sanitize finalists), then with --sanitize winner the would-be winner alone, and the
  // next one when it fails.
  void gate_round(Gate& gate, int launches, const std::vector<std::size_t>& batch, std::vector<char>& out_checked,
                  std::vector<char>& sanitized) {
    std::vector<std::size_t> outputs, sanitize;
    for (const std::size_t i : batch)
      if (!out_checked[i] && run.variants[i].status == Status::kPassed) {
        out_checked[i] = 1;
        outputs.push_back(i);
      }
    log(fmt::format("gate: checking the outputs of {} finalist(s) (more inputs, {} launches each)", outputs.size(),
                    launches + 1));
    gate.check_outputs(items_of(outputs));
    if (gate_stopped(gate)) return say(outputs);
    if (gate.sanitizing() && gate.mode() == SanitizeMode::kFinalists) {
      // Those that failed the output checks too: a sanitizer report says why. Not the baseline while
      // it cannot win (kBaselineRule): it is sanitized when it becomes the would-be winner below.
      const auto top = fastest_passed(static_cast<std::size_t>(std::max(1, o.top_k)));
      for (const std::size_t i : outputs) {
        if (baseline_index && i == *baseline_index && std::find(top.begin(), top.end(), i) == top.end()) continue;
        sanitized[i] = 1;
        sanitize.push_back(i);
      }
      if (!sanitize.empty()) {
        log(fmt::format("gate: {} finalist(s) under compute-sanitizer ({})", sanitize.size(),
                        fmt::join(kSanitizerTools, ", ")));
        gate.sanitize(items_of(sanitize));
      }
    }
    say(outputs);
    for (name_winner(run); run.winner && gate.sanitizing(); name_winner(run)) {
      const std::size_t w = index_of(*run.winner);
      if (!out_checked[w] || sanitized[w] || gate_stopped(gate)) break;
      sanitized[w] = 1;
      log(fmt::format("gate: the would-be winner {} under compute-sanitizer", run.variants[w].name));
      gate.sanitize(items_of({w}));
      say({w});
    }
  }

  // The problem's PyTorch module at this shape (issue 36), after every kernel was timed and gated, so
  // the two never share the device; never for a run cut short or a part of one (tune merge's).
  void time_torch() {
    if (!run.timed || !run.device || ctx.interrupted || stop_asked() || (o.shard && o.shard->split == "variants")) return;
    run.torch = time_torch_module(problem, shape, *run.device,
                                  TorchCompare{.modes = o.torch, .device = o.device, .seed = o.seed,
                                               .cache_dir = torch_cache_for(o.no_cache, o.cache_dir), .fake_device = fake},
                                  log);
  }

  // The record complete, then the results and their header, unless the earlier ones are worth more;
  // a finished run's journal removed.
  TuneOutcome write_outputs() {
    run.wall.measure_wall_s = measure_busy + (pass ? pass->measure_wall_s : 0);
    run.complete = true;
    run.wall.total_wall_s = seconds_since(t_start);
    ctx.gate.share = run.wall.total_wall_s > 0 ? ctx.gate.wall_s / run.wall.total_wall_s : 0;
    run.context.finished_at = now_iso8601();
    save();

    TuneOutcome out{.run = run, .json_path = json_path, .header_path = std::nullopt, .gate_exit_code = gate_exit_code};
    // No header from a search cut short by hand, nor from a part of one (tune merge writes it). It is
    // made before anything is replaced: a header that cannot be made leaves the earlier pair alone.
    std::optional<std::string> header;
    if (run.timed && run.winner && !run.context.interrupted && !(o.shard && o.shard->split == "variants"))
      header = generate_header(run, space);
    move_unreadable_aside(json_path, run, log);
    if (const std::string kept = reason_to_keep(json_path, run); !kept.empty()) {
      out.json_path = partial_path;
      log(fmt::format("kept the earlier results {} and its header: {}; this run's results are in {}",
                      earlier_result(json_path).string(), kept, partial_path.string()));
    } else {
      replace_results(header, out);
    }
    // A finished run needs no journal (its results hold every record); an interrupted one keeps it.
    journal.reset();
    if (!ctx.interrupted) std::filesystem::remove(journal_path);
    if (gpu) gpu->detach();
    out.run = run;
    return out;
  }

  // The results first, then their header: the two renames are each atomic.
  void replace_results(const std::optional<std::string>& header, TuneOutcome& out) {
    write_file_atomic(json_path, to_json(run).dump(2) + "\n");
    if (header) {
      out.header_path = o.header ? *o.header : json_path.parent_path() / (shape.tag() + ".hpp");
      write_file_atomic(*out.header_path, *header);
    }
    std::error_code ec;
    std::filesystem::remove(partial_path, ec);
    // <shape>.json replaces a <shape>.json.gz of record only now, once it is written: readers never
    // see two files of one shape (they refuse the pair), and a run cut short keeps the .json.gz.
    if (std::filesystem::exists(compressed_result_path(json_path), ec)) {
      std::filesystem::remove(compressed_result_path(json_path), ec);
      log(fmt::format("{} replaces {} (removed)", json_path.string(), compressed_result_path(json_path).filename().string()));
    }
  }
};

TuneOutcome run_pass(const RunPlan& plan, const TuneOptions& o, Pass* pass, SearchStrategy& strategy,
                     std::optional<IsolatedRunner>& gpu) {
  PassRun r(plan, o, pass, strategy, gpu);
  r.open_device();
  r.choose_variants();
  r.open_outputs();
  if (auto earlier = r.finished_earlier()) return std::move(*earlier);
  r.lower_variants();
  r.open_journal();
  r.start_worker();
  r.start_compiles();
  r.prepare_search();
  r.search();
  if (pass && pass->search_only) return r.end_search_pass();
  if (r.run.timed) r.second_round();
  if (r.run.timed) {
    const std::vector<std::size_t> finalists = r.strict_remeasure();
    if (!finalists.empty() && !r.stop_asked()) r.gate_finalists(finalists);
  }
  r.time_torch();
  return r.write_outputs();
}

}  // namespace

namespace {

// A run in passes (run_tune): the options of the later ones (taking the journal), the passes'
// shared state, the latest pass's outcome, the configurations chosen so far, and the worker.
struct Passes {
  const RunPlan& plan;
  const TuneOptions& o;
  std::optional<IsolatedRunner>& gpu;
  SearchStrategy& strategy;
  TuneOptions resumed;
  Pass pass;
  TuneOutcome out;
  std::set<Config> have;  // chosen so far, and the baseline while its compile is deferred

  void log(const std::string& line) const {
    if (o.log) o.log(line);
  }
  // A stop asked for after a pass's last variant still ends the passes: the last one records it.
  bool going() const { return !out.run.context.interrupted && out.run.timed && !stop_requested(); }
  // A pass over `have` (the baseline aside while deferred), after what the earlier passes spent.
  void next(bool search_only) {
    pass.configs = in_order(pass.all, have);
    if (pass.defer_baseline) std::erase(pass.configs, pass.baseline);
    pass.compile_wall_s = out.run.wall.compile_wall_s;
    pass.measure_wall_s = out.run.wall.measure_wall_s;
    pass.search_only = search_only;
    ++pass.passes_done;
    out = run_pass(plan, resumed, &pass, strategy, gpu);
  }
  Measured measured() const;
};

// What the passes so far measured, over pass.all, for the strategy's next batch.
Measured Passes::measured() const {
  std::map<std::string, const VariantRecord*> by_name;
  for (const auto& v : out.run.variants) by_name[v.name] = &v;
  const std::size_t n = pass.all.size();
  Measured m{pass.all, std::vector<std::optional<double>>(n), std::vector<char>(n, 0), std::vector<char>(n, 0),
             std::vector<char>(n, 0)};
  for (std::size_t i = 0; i < n; ++i) {
    m.excluded[i] = pass.defer_baseline && pass.all[i] == pass.baseline;
    m.chosen[i] = have.contains(pass.all[i]);
    const auto it = by_name.find(pass.names[i]);
    if (it == by_name.end()) continue;
    const VariantRecord& v = *it->second;
    if (v.status == Status::kPassed && v.timing) m.median_us[i] = v.timing->median_us;
    m.settled[i] = v.status != Status::kPending;
  }
  return m;
}

// The strategy's batches after the first, a search pass each, until it is done or the run stops.
void search_rounds(Passes& p) {
  const SearchLog log = [&p](const std::string& line) { p.log(line); };
  while (p.going()) {
    const std::vector<std::size_t> more = p.strategy.next(p.measured(), log);
    if (more.empty()) break;
    for (const std::size_t i : more) p.have.insert(p.pass.all[i]);
    p.next(true);
  }
  p.strategy.finish(p.out.run.timed, log);
}

}  // namespace

std::optional<CompileRequest> baseline_request(const RunPlan& plan) {
  try {
    if (!plan.space.violated_constraint(plan.space.baseline(), plan.shape, plan.limits).empty()) return std::nullopt;
    return compile_request(plan.space.lower(plan.space.baseline(), plan.shape, plan.limits), default_options(plan.cc));
  } catch (const std::exception&) {  // the run reports it in its turn
    return std::nullopt;
  }
}

std::optional<CompileRequest> baseline_request(const TuneOptions& o) {
  try {
    return baseline_request(plan_run(o, nullptr));
  } catch (const std::exception&) {  // the run reports it in its turn
    return std::nullopt;
  }
}

TuneOutcome run_tune(const TuneOptions& o) {
  const StopScope stop_scope;  // over every pass: a stop asked for in one is not forgotten by the next
  std::optional<IsolatedRunner> gpu;  // one worker for every pass
  const StrategyPtr strategy = make_search_strategy(o);
  const RunPlan plan = plan_run(o, o.log);
  if (!strategy->adaptive()) return run_pass(plan, o, nullptr, *strategy, gpu);
  // The strategy's first choice, timed; then its further batches, a search pass each; then the
  // strict re-measure, the gate and the outputs over all of them. Each pass takes the earlier ones'
  // records from the journal (as --resume does), so nothing is compiled or measured twice.
  Passes p{plan, o, gpu, *strategy, o, {}, {}, {}};
  p.resumed.resume = true;
  p.pass.defer_baseline = !o.no_cache;  // without a cache the early compile would be lost
  p.out = run_pass(plan, o, &p.pass, *strategy, gpu);
  if (p.out.already_complete) return p.out;
  p.have.insert(p.pass.configs.begin(), p.pass.configs.end());
  if (p.pass.defer_baseline) p.have.insert(p.pass.baseline);
  search_rounds(p);
  p.next(false);
  return p.out;
}

}  // namespace tune

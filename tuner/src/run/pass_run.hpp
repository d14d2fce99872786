#pragma once
// One pass of a run (run_tune): its phases, by job, over one RunPlan. Internal to run/.
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "run/run_common.hpp"
#include "search/strategy.hpp"
#include "tune/compile.hpp"
#include "tune/compile_pool.hpp"
#include "tune/device.hpp"
#include "tune/gate.hpp"
#include "tune/io.hpp"
#include "tune/journal.hpp"
#include "tune/measure.hpp"
#include "tune/problem.hpp"
#include "tune/run_plan.hpp"
#include "tune/space.hpp"
#include "tune/torch_compare.hpp"
#include "tune/worker_client.hpp"
#include "worker/isolated_runner.hpp"

namespace tune {

// The journal's first line: what must match for --resume to continue a run (the run's context
// filled: its sources' hash, reference and compile options).
nlohmann::ordered_json run_identity(const TuneOptions& o, const RunRecord& run);

// The identity without the card (its index and UUID): a sweep on several devices may run a shape on
// any of them, and cards of one model (the identity's device name) continue each other's runs.
// same_card (a --replicate replica: each card runs every shape itself) keeps the UUID, so that only
// the card's own results under its other folder names count.
nlohmann::ordered_json across_cards(nlohmann::ordered_json identity, bool same_card = false);

// The first field in which two identities differ ("" when they are of one run).
std::string identity_difference(const nlohmann::ordered_json& mine, const nlohmann::ordered_json& theirs);

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
  std::vector<Config> all;         // the valid configurations (past --max-candidates, those held)
  std::int64_t valid_configs = 0;  // the valid configurations counted, for a later pass's record
  std::uint64_t candidates = 0;    // all's size where it holds a sample of them, else 0
  std::vector<std::string> names;  // their variants' names
  std::vector<Config> configs;     // those chosen so far, in the order of `all`
  Config baseline;                 // the space's baseline (valid here or not)
  // The baseline's compile (8 to 16 s of NVRTC for contact's, on one core) is the longest of a
  // pass: the search passes leave it out while a thread of its own compiles it into the cache, and
  // the last pass times it (a cache hit by then).
  bool defer_baseline = false;
  std::jthread baseline_compile;
  bool search_only = true;
  int passes_done = 0;                // the passes before this one
  std::optional<HarnessFloor> floor;  // the first pass's
  Clock::time_point started = Clock::now();
  double compile_wall_s = 0, measure_wall_s = 0;  // spent by the earlier passes
  // The results' lock, taken by the first pass and held until the last ends: released between two
  // passes, it let another tune of the shape in, which removed the journal the next pass resumes.
  std::optional<ResultsLock> results_lock;
};

// Those of `all` that are in `chosen`, in the order of `all`.
std::vector<Config> in_order(const std::vector<Config>& all, const std::set<Config>& chosen);

// `configs` with the baseline (where it is valid), in the order of `all`.
std::vector<Config> with_baseline(const std::vector<Config>& all, const std::vector<Config>& configs, const Config& base);

// The first pass's choice: the valid configurations and their names, and what the search passes
// time (without the baseline while its compile is deferred).
void fill_pass(Pass& pass, const Space& space, std::vector<Config> all, std::vector<Config> chosen);

// A later pass of an adaptive search: the configurations chosen so far.
Chosen later_pass_configs(const Space& space, RunContext& ctx, const Pass& pass, const SearchStrategy& strategy);

// The configurations a pass times: the search strategy's first choice (search/strategy.hpp),
// or in a later pass of an adaptive one the run so far. The first pass of an adaptive search
// fills `pass`.
Chosen choose_configs(const TuneOptions& o, const std::string& problem, const Space& space, const Shape& shape,
                      const DeviceLimits& limits, RunContext& ctx, const LogFn& log, Pass* pass, SearchStrategy& strategy);

// How much a record is worth keeping, compared in order: 2 a run that ended with a ranking (a
// winner, or a compile-only run), 1 a timed run that ended with no variant passed, 0 an interrupted
// one; between two interrupted runs, the one that recorded more variants (not pending or skipped).
std::pair<int, std::size_t> results_worth(const RunRecord& r);

// The results file a run's <shape>.json replaces: itself, else the <shape>.json.gz a result of
// record is kept as (which may not exist either).
std::filesystem::path earlier_result(const std::filesystem::path& json);

// A finished run with a ranking (a winner, or a compile-only run) replaces an earlier results file
// that no reader accepts (issue 34 #21): that file is moved aside to <file>.unreadable-<UTC time>,
// never lost, and one line says so. Left in place it would block every later run of the shape.
void move_unreadable_aside(const std::filesystem::path& json, const RunRecord& run,
                           const std::function<void(const std::string&)>& log);

// Why the results file at `path` (<shape>.json, else the <shape>.json.gz a result of record is kept
// as) stays as it is rather than being replaced by `run`'s record (empty: replace it). An earlier record is replaced by one at least as good (results_worth); one
// that cannot be read is kept, as it may hold what no tool here can read (a newer schema).
std::string reason_to_keep(const std::filesystem::path& json, const RunRecord& run);

// context.tensors: every tensor at the bound shape, in role order.
std::vector<TensorRecord> tensor_records(const Problem& problem, const Shape& shape);

// The journal's stage of a strategy's second round (SearchStrategy::second_round): "halving", the
// name journals of --search halving have always had, so --resume reads the earlier ones.
inline constexpr const char* kSecondRoundStage = "halving";

// A run (run_tune), or one pass of an adaptive search strategy: all of it, or with pass->search_only up to
// the end of the search. Its phases follow the data flow (issue 23): the device, the plan (the
// configurations), the outputs' place, the variants lowered, the journal, the worker, the compile
// pipeline feeding the search, then the halving round, the strict re-measure, the gate and the
// outputs. gpu: the worker, kept from pass to pass. The members are in the order they are made:
// they are destroyed in reverse (the compile threads before what they fill, the journal and the
// results lock last but the stop scope).
// The compile feed of a pass (compile_feed.cpp): compile threads on all cores over a fixed order of
// the pass's variants, each compiled one handed to the search loop through a queue. The search loop
// takes them one at a time (take); the finalists ask for a variant the journal held (ensure).
class CompileFeed {
 public:
  // The compiler (the compile cache and --jobs), made with the run's context (open_outputs).
  void open(std::optional<CompileCache> cache, int jobs, std::function<void(const std::string&)> log) {
    compiler_.emplace(std::move(cache), jobs, std::move(log));
  }
  [[nodiscard]] const CompilePool& compiler() const { return *compiler_; }

  // What the threads will compile: `order` (indices into `lowered`, the baseline first), with `options`.
  // Nothing starts yet; the clock of the compile wall does.
  void plan(const std::vector<Lowered>& lowered, std::vector<std::string> options, std::vector<std::size_t> order);
  // `jobs` threads, each taking the next variant of the order until none is left or stop_taking().
  void start(int jobs);

  // Variant i compiled on this thread (from the compile cache where it is there), and whether it
  // came from the cache.
  [[nodiscard]] std::pair<CompileResult, bool> compile_one(std::size_t i) const;
  // Variant i compiled on this thread and queued for the search loop.
  void compile_and_queue(std::size_t i);
  // A variant with no compile result (the journal held its record) compiled now, from the cache.
  void ensure(std::size_t i);

  // The next compiled variant; with `only`, that one (waiting for it), the rest left queued.
  std::size_t take(std::optional<std::size_t> only = std::nullopt);
  // The threads take no new variant (those in flight finish); how many of the order they had taken.
  std::size_t stop_taking() { return next_.exchange(order_.size()); }
  // The threads joined (each finishes the variant it holds).
  void join() { pool_.clear(); }

  [[nodiscard]] const CompileResult& result(std::size_t i) const { return results_[i]; }
  [[nodiscard]] bool from_cache(std::size_t i) const { return from_cache_[i] != 0; }
  [[nodiscard]] const std::vector<std::size_t>& order() const { return order_; }
  // Seconds since plan().
  [[nodiscard]] double elapsed_s() const;
  // The compile wall: from plan() to the last of the order compiled; 0 until then.
  [[nodiscard]] double wall_s() const { return wall_; }
  // A pass cut short (a stop, the time budget): its compile wall ends now, where it has not ended.
  void end_wall() {
    if (wall_ == 0) wall_ = elapsed_s();
  }

 private:
  std::optional<CompilePool> compiler_;  // first: destroyed after the threads that use it
  const std::vector<Lowered>* lowered_ = nullptr;
  std::vector<std::string> options_;
  std::vector<std::size_t> order_;  // fixed once the threads start
  std::vector<CompileResult> results_;
  std::vector<char> from_cache_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::size_t> queue_;
  std::atomic<std::size_t> next_{0};
  std::size_t compiled_ = 0;
  Clock::time_point t_start_;
  double wall_ = 0;
  std::vector<std::jthread> pool_;  // last: joined first
};

// What the search loop (search_loop.cpp) measured so far: its timing profile, the GPU's busy time,
// the variants checked and passed, the best median, and whether the harness floor is measured.
struct SearchTally {
  DeviceRunner::Options first_round;
  double measure_busy = 0;
  std::size_t checked = 0, passed = 0;
  std::optional<double> best;
  bool floor_measured = false;
};

// The outputs of a pass (outputs.cpp): the results lock, the journal and the records it gave back,
// the snapshot (<shape>.json.partial) and the results with their header that replace the earlier
// ones. The pass owns the record; each call is passed the record it reads or writes.
class Outputs {
 public:
  Outputs(const RunPlan& plan, const TuneOptions& o, LogFn log, Clock::time_point t_start)
      : plan_(plan), o_(o), log_(std::move(log)), t_start_(t_start) {}

  // Where the results go, checked writable and locked for this run (for a run in passes, in `pass`:
  // the first pass takes the lock for them all).
  void lock(Pass* pass = nullptr);

  // --resume (issue 34 #7): the shape's results, complete for this run's identity, in this device's
  // folder (or another's of the sweep, for a card of the same model) are kept as they are and nothing
  // is tuned. Not while this folder holds the shape's journal (a run to continue), nor in a later pass.
  std::optional<TuneOutcome> finished_earlier(const RunRecord& run, const Pass* pass) const;

  // The journal: a fresh one, or with --resume the records of the interrupted run it identifies,
  // taken into `run` (its variants lowered, in order); then the first snapshot.
  void open_journal(RunRecord& run, const Pass* pass);

  // A record the moment it exists, under the journal's stage ("search", kSecondRoundStage).
  void append(const char* stage, const VariantRecord& v) {
    journal_->append(stage, v);
    ++appended_;
  }

  // A run stopped before it measured anything (a stop while its first worker ran reference.py):
  // the journal and snapshot it had just created hold nothing and are removed, so that its
  // "wrote nothing" is true. A journal it resumed or appended to stays.
  void discard_unmeasured();

  // Whether the journal held variant i's final record at the start (not compiled or measured
  // again), and its second-round record.
  [[nodiscard]] bool journaled(std::size_t i) const { return journaled_[i] != 0; }
  [[nodiscard]] bool halved(std::size_t i) const { return halved_[i] != 0; }
  [[nodiscard]] const std::vector<char>& journaled() const { return journaled_; }

  // The run's snapshot, complete as far as it goes, rewritten at most every 2 s while variants
  // finish (the journal holds each record the moment it exists; rewriting the whole file per
  // variant made a 500-variant run spend seconds serializing) and at every stage boundary. It goes
  // to <shape>.json.partial: the results file and its header are replaced only when the run ends
  // with something at least as good (issue 22, item 7), so a re-run that dies keeps them as they were.
  void save(RunRecord& run, bool force = true);

  // The results and their header replace the earlier ones, unless those are worth more; a finished
  // run's journal removed.
  TuneOutcome replace(const RunRecord& run, const std::optional<std::string>& header, int gate_exit_code);

 private:
  // The folders --resume also looks in: the sweep's other devices' (TuneOptions::resume_dirs), this
  // card's own under its other folder names (device_folder_names), and outside a replica every other
  // folder of its model under --out (is_model_folder), in name order.
  [[nodiscard]] std::vector<std::string> other_folders() const;

  // How an earlier record's gate differs from this run's (--sanitize, --allow-unchecked), or "".
  [[nodiscard]] std::string gated_otherwise(const RunContext::Gate& gate) const;

  // This shape's results file in another device's folder of the sweep (TuneOptions::resume_dirs).
  [[nodiscard]] std::filesystem::path in_folder(const RunRecord& run, const std::string& dir) const;

  // --resume with --devices (issue 34 #8): the shape's journal in another device's folder of the
  // sweep (the shape ran there before the interruption), of this run but for the card, moves here
  // with its records; that folder's journal and snapshot of the shape are removed.
  void adopt_journal(const RunRecord& run, const nlohmann::ordered_json& identity);

  // Only final records of this run's variants are taken: a status the search ends with (not
  // pending, not compiled in a timed run), the same parameters and baseline flag as the variant of
  // that name, a timing where it passed. Anything else is measured again. Returns those refused.
  std::size_t take_journal(RunRecord& run, const nlohmann::ordered_json& identity);

  // The results first, then their header: the two renames are each atomic.
  void replace_results(const RunRecord& run, const std::optional<std::string>& header, TuneOutcome& out);

  const RunPlan& plan_;
  const TuneOptions& o_;
  const LogFn log_;
  const Clock::time_point t_start_;
  std::optional<ResultsLock> lock_;
  std::filesystem::path journal_path_;
  std::vector<char> journaled_, halved_;
  std::optional<Journal> journal_;
  bool created_ = false;      // the journal is this run's own (not resumed, not an earlier pass's)
  std::size_t appended_ = 0;  // records this run appended to it
  Clock::time_point last_save_;
};

// The finalists of a timed pass (finalists.cpp): the strategy's second round, the strict re-measure
// of the top few and the gate's rounds, until a winner may be named. Passed the pass's record, its
// worker, the variants' compiled items and the pass's stop check; it keeps what the gate decided
// about the exit code and the GPU time it spent.
class Finalists {
 public:
  // The worker items of variants (compiled again from the cache where the journal held them).
  using ItemsOf = std::function<std::vector<WorkerItem>(const std::vector<std::size_t>&)>;

  Finalists(const RunPlan& plan, const TuneOptions& o, LogFn log, RunRecord& run, IsolatedRunner& gpu, ItemsOf items_of,
            std::function<bool()> stop_asked, std::optional<std::size_t> baseline_index)
      : plan_(plan),
        o_(o),
        log_(std::move(log)),
        run_(run),
        gpu_(gpu),
        items_of_(std::move(items_of)),
        stop_asked_(std::move(stop_asked)),
        baseline_index_(baseline_index) {}

  // The strategy's second round (successive halving): the best of the screened variants timed again
  // with the search profile (parity already passed); the others keep their screening time.
  void second_round(const SearchStrategy& strategy, Outputs& outputs);

  // The top few (and the baseline), re-measured strictly in rounds, before a winner is named. The
  // finalists, for the gate.
  std::vector<std::size_t> strict_remeasure();

  // The correctness gate (tune/gate.hpp): the finalists' outputs on more inputs and over many
  // launches, then the sanitizers; a finalist that fails never wins, and when every gated one has
  // failed the next few are re-measured strictly and gated in turn.
  // quiet: called before a later round re-measures (the device left to the timing alone).
  void run_gate(const std::vector<std::size_t>& finalists, const std::function<void()>& quiet = {});

  // settle_unchecked: the gate could not run and nothing unchecked may win (2 or 3), else 0.
  [[nodiscard]] int gate_exit_code() const { return gate_exit_code_; }
  // The GPU's busy time in these rounds.
  [[nodiscard]] double measure_s() const { return measure_s_; }

 private:
  // The `keep` fastest passed variants (by their current cold median), fastest first.
  [[nodiscard]] std::vector<std::size_t> fastest_passed(std::size_t keep) const;

  void remeasure_strictly(const std::vector<std::size_t>& idx);

  // A gate that could not run stops (issue 34): the checks left are not worth another wait, and the
  // run ends as a run error, unless --allow-unchecked lets an unchecked finalist win.
  bool gate_stopped(const Gate& gate) const { return !gate.could_not_run().empty() && !o_.allow_unchecked; }

  // Without --allow-unchecked no variant the gate could not check wins: the results keep what was
  // measured (the finalists `unchecked`), name no winner and get no header, and the run exits 2 or 3.
  void settle_unchecked(const Gate& gate);

  std::size_t index_of(const std::string& name) const;

  void say(const std::vector<std::size_t>& idx) const;

  // One round of the gate over `batch`: the output checks of those not yet checked, the sanitizers
  // on them (--sanitize finalists), then with --sanitize winner the would-be winner alone, and the
  // next one when it fails.
  void check_outputs_with_winner(Gate& gate, const std::vector<std::size_t>& outputs);
  void gate_round(Gate& gate, int launches, const std::vector<std::size_t>& batch);

  const RunPlan& plan_;
  const TuneOptions& o_;
  const LogFn log_;
  RunRecord& run_;
  IsolatedRunner& gpu_;
  const ItemsOf items_of_;
  const std::function<bool()> stop_asked_;
  const std::optional<std::size_t> baseline_index_;
  std::vector<char> out_checked_, sanitized_;  // by the gate's rounds so far
  int gate_exit_code_ = 0;
  double measure_s_ = 0;
};

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
  // open_outputs, open_journal: the results lock, the journal, the snapshot
  Outputs outputs{plan, o, log, t_start};
  // lower_variants
  std::vector<Lowered> lowered;
  std::optional<std::size_t> baseline_index;
  std::size_t n = 0;
  // start_compiles: compile on all cores; the GPU measures each variant as soon as it is compiled
  // (one at a time).
  CompileFeed feed;
  // search
  SearchTally tally;
  // note_parameter_types: each tensor's dtype by the names launches pass it by, the notes given
  std::map<std::string, DType> tensor_dtypes;
  std::set<std::string> type_notes;

  PassRun(const RunPlan& run_plan, const TuneOptions& options, Pass* p, SearchStrategy& s, std::optional<IsolatedRunner>& g)
      : o(options),
        pass(p),
        strategy(s),
        gpu(g),
        t_start(p ? p->started : Clock::now()),
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

  // Variants the journal held at the start: not compiled or measured again.
  [[nodiscard]] std::size_t journaled_count() const { return n - feed.order().size(); }

  // The plan's device (plan_run said what it is; a later pass says it again).
  void open_device();

  // The variants, chosen before anything is written: a space too large to enumerate, or a run of
  // more variants than --max-variants, is refused in one line and leaves no file behind.
  void choose_variants();

  // A compile-only sweep says, once its variants are counted, how long it may take and where its
  // results go, before anything compiles (issue 34); with more than a sample, how to make it short.
  void say_compile_only() const;

  // Where the results go (locked for this run), and the run's context.
  void open_outputs();

  // Records for every variant up front: an interrupted run shows what was never reached.
  void lower_variants();

  // The baseline among the variants; else, in a search pass that defers it, its compile started on a
  // thread of its own (the last pass times it); else a note that no speedup will be reported.
  void find_baseline();

  // --resume: the shape's results, complete for this run, kept as they are (Outputs::finished_earlier).
  std::optional<TuneOutcome> finished_earlier() { return outputs.finished_earlier(run, pass); }

  // The journal (Outputs::open_journal).
  void open_journal() { outputs.open_journal(run, pass); }

  // The snapshot (Outputs::save).
  void save(bool force = true) { outputs.save(run, force); }

  // The worker process starts now: its data and float64 reference are prepared while compilation runs.
  // A later pass of an adaptive search keeps the worker of the first (gpu holds it).
  void start_worker();

  // The compile threads. The baseline compiles (and so is measured) first: a run cut short still has
  // its speedup. Variants the journal already holds are not compiled (unless the strict re-measure
  // needs them).
  void start_compiles();

  // The search pass's profile, the strategy's (batch and graph means of 20 launches; the top few
  // and the baseline get 100 in the strict re-measure, whose figures the report shows), and the
  // counts of the records taken from the journal, which count as done.
  void prepare_search();

  // Each variant as it comes out of the compile threads: measured, logged, journaled.
  void search();

  [[nodiscard]] bool baseline_pending() const;

  // The workers take no new variant; those in flight finish. A budget spent before any worker took
  // the baseline (a loaded machine, a large space to lower) compiles it here, else the wait for it
  // would never end.
  void stop_for_time_budget(std::size_t done);

  // A compiled variant's record: failed, compiled (no device), pruned for its spills, or evaluated
  // by the worker (the harness floor first, once a run).
  void measure(std::size_t i);

  void measure_floor();

  // A compiled variant whose kernel takes a tensor as another floating type (float* for a bfloat16
  // tensor): said once a kernel, parameter and type, before a GPU calls every such variant incorrect.
  void note_parameter_types(std::size_t i);

  // Elapsed time and the search's remaining time at this run's pace so far (resumed records took
  // none of it); on a terminal the name is cut to fit the line (TuneOptions::line_width).
  void log_progress(std::size_t done, std::size_t i);

  // The compile threads joined; what the search never reached is recorded as skipped.
  void end_search();

  // A search pass ends here: the records are in the journal; the next pass takes them and run_tune
  // chooses what follows.
  TuneOutcome end_search_pass();

  // A stop asked for after the search's last variant: the passes that follow are not started.
  bool stop_asked();

  // The worker items of variants, compiled again from the cache where the journal held them.
  std::vector<WorkerItem> items_of(const std::vector<std::size_t>& idx);

  // The second round, the strict re-measure and the gate, over this pass's record and worker.
  Finalists finalists();

  // The problem's PyTorch module at this shape (issue 36), timed after every kernel was timed and
  // gated, so the two never share the device while anything is timed; never for a run cut short or a
  // part of one (tune merge's). torch_beside_gate starts its harness before the gate: it prepares
  // (imports, compiles) while the gate runs, and times once time_torch releases it (issue 37).
  std::unique_ptr<TorchBeside> torch_beside_gate();
  void time_torch(std::unique_ptr<TorchBeside> beside = nullptr);
  [[nodiscard]] bool torch_wanted() const;
  [[nodiscard]] TorchCompare torch_options() const;

  // The record complete, then the results and their header, unless the earlier ones are worth more
  // (Outputs::replace); gate_exit_code: Finalists::gate_exit_code.
  TuneOutcome write_outputs(int gate_exit_code);
};

// A pass of the run over `plan`, all of it or (pass->search_only) up to the end of the search.
TuneOutcome run_pass(const RunPlan& plan, const TuneOptions& o, Pass* pass, SearchStrategy& strategy,
                     std::optional<IsolatedRunner>& gpu);

}  // namespace tune

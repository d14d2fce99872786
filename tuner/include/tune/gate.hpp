#pragma once
// The correctness gate (issue 20): a variant that passed parity once may still race, read out of
// bounds, misuse a barrier, read uninitialised memory, or give different bits from launch to launch.
// Before a winner is named, the finalists (the strict re-measure's top few and the baseline) are
// checked in worker processes of their own, nothing timed:
//   - outputs: parity on further inputs (more seeds, the problem's edge cases) and determinism (the
//     parity data launched again and again, the L2 flushed and the other finalists launched between,
//     in a fresh context, bitwise against the search's bits), in a fresh worker;
//   - sanitizers: each finalist's parity launch under compute-sanitizer's memcheck, racecheck,
//     synccheck and initcheck, one worker per tool, the tools side by side. A report is pinned on the
//     variant whose kernel it names (--demangle no: the lowered names); one that cannot be pinned
//     runs each variant again alone.
// A finalist with a finding or a changing output becomes `unsafe`, one that fails an input
// `incorrect`; neither wins, and the next finalist is gated in turn (tune.cpp). One on which a check
// that was asked for could not run (a sanitizer that did not start the worker, an output check whose
// worker failed) becomes `unchecked`, never `safe` (issue 34): it wins only with --allow-unchecked,
// and without that the run names no winner and exits 2 or 3 (could_not_run_exit_code).
// Verdicts are cached (issue 37, tune/verdict_cache.hpp): each check (a finalist's outputs, one tool
// on it) is looked up first and run only when its key is new; the sanitizer checks run as separate
// processes, at most GateSettings::jobs at once.
#include <atomic>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tune/record.hpp"
#include "tune/sanitize_mode.hpp"
#include "tune/shape.hpp"
#include "tune/verdict_cache.hpp"
#include "tune/worker_client.hpp"

namespace tune {

// Lines of a sanitizer report kept in the record (the rest are counted).
inline constexpr std::size_t kSanitizerReportLines = 12;

inline constexpr const char* kSanitizerTools[] = {"memcheck", "racecheck", "synccheck", "initcheck"};

struct SanitizerLocation {
  std::string path;          // empty: none found
  std::string version;       // "2025.3.0", from --version; "unknown" when it does not say
  std::string version_note;  // why the version is unknown ("" when it is known)
  std::string why_not;       // when none was found: what was looked at
};
// $TUNE_SANITIZER (a path), else compute-sanitizer on $PATH, in $CUDA_HOME/bin, /usr/local/cuda/bin.
// With `fake` (TUNE_WORKER_FAKE) only $TUNE_SANITIZER counts: a fake run never depends on the machine.
SanitizerLocation find_sanitizer(bool fake);

// One report of a sanitizer log, and the mangled kernel names it mentions.
struct SanitizerReport {
  SanitizerFinding finding;
  std::vector<std::string> kernels;
};
// The reports of a compute-sanitizer log ("========= " lines): each starts at an unindented line
// (the summaries, the banner and host-side "Program hit ..." lines are not reports), its
// continuation lines indented. Names are demangled in the stored text. *summary_errors: the count
// of the ERROR SUMMARY line, -1 when there is none.
std::vector<SanitizerReport> parse_sanitizer_log(const std::string& tool, const std::string& text,
                                                 int* summary_errors = nullptr);
// `_Z...` names in text replaced by their demangled form.
std::string demangle_names(const std::string& text);

struct GateSettings {
  SanitizeMode mode = SanitizeMode::kFinalists;
  std::string problem;  // as the worker finds it (a name or a problem file)
  Shape shape;
  std::uint64_t seed = 0;
  int device = 0;
  bool fake = false;  // TUNE_WORKER_FAKE
  int rounds = 16;    // determinism: launches of each finalist after the first
  // Also check the search's own parity input (tune check and verify: the variants were not just
  // checked on it by this run).
  bool search_input = false;
  bool allow_unchecked = false;  // --allow-unchecked (recorded in the context; the caller names the winner)
  // The verdict cache's folder (VerdictCache::beside the compile cache's); empty: no cache (--no-cache).
  std::filesystem::path verdict_cache;
  bool fresh = false;  // --fresh (tune check) / --fresh-verdicts (tune): read no verdict; new ones are stored
  int jobs = 0;        // sanitizer processes at once; 0: gate_jobs()
  // reference.py run a second time on the output checks' first input and compared bitwise (tune
  // check: no search ran it twice here); on_reference_repeated is called once it was.
  bool check_reference = false;
  std::function<void()> on_reference_repeated;
  std::function<void(const std::string&)> log;
};

// The verdict cache's folder for a run's compile cache settings: empty (no cache) with --no-cache,
// else VerdictCache::beside(cache_dir or CompileCache::default_dir()).
std::filesystem::path verdict_cache_for(bool no_cache, const std::optional<std::filesystem::path>& cache_dir);

// How a tune gates its baseline (context.gate.baseline_rule, docs/gate.md).
inline constexpr const char* kGateBaselineRule =
    "the baseline is gated for what its speedup needs: its outputs (further inputs, determinism) like every "
    "finalist; the sanitizers run on it only when it could win (it is among the --top fastest, or the would-be winner)";

// One line on the gate's wall and its parts: "gate 3.1 s: 4 finalists, 20 checks (9 cached), outputs
// 0.4 s (reference 0.2 s), memcheck 1.2 s, ...". Empty when nothing was gated.
std::string describe_gate(const RunContext::Gate& gate);

// Sanitizer processes at once by default: $TUNE_GATE_JOBS (1 to 64), else 4. Throws InputError for
// a value that is not such a number.
int gate_jobs();

// How long a worker under compute-sanitizer may take to start (answer init): 60 s, or
// $TUNE_SANITIZER_START_S. Shorter than a plain worker's 300 s: a sanitizer that never starts its
// worker costs this much per gate round, not 300 s.
double sanitizer_start_deadline_s();

class Gate {
 public:
  // Finds the sanitizer (one line in the log when it is wanted but missing) and records the
  // settings in ctx.
  Gate(GateSettings settings, RunContext::Gate& ctx);

  // Whether the sanitizers run for this mode.
  // Also when the sanitizer is wanted but missing: sanitize() then leaves every tool not run, and
  // the finalists are unchecked (issue 34: the gate never fails open).
  [[nodiscard]] bool sanitizing() const {
    return (!sanitizer_.path.empty() || sanitizer_missing_) && settings_.mode != SanitizeMode::kOff;
  }
  [[nodiscard]] SanitizeMode mode() const { return settings_.mode; }

  // Output checks (further inputs, determinism) in a fresh worker, of the items the verdict cache
  // has no verdict for. Fills each record's gate.
  void check_outputs(const std::vector<WorkerItem>& items);
  // Every tool on the items (those that failed the output checks too: a report says why). Adds the
  // tools and findings to their gate.
  void sanitize(const std::vector<WorkerItem>& items);
  // check_outputs(outputs) while sanitize(sanitized) runs in its own processes beside it, sharing
  // the GPU (issue 37). After the output checks, keep() says whether the serial order would now
  // sanitize them; if not, their sanitizers' results are dropped (never recorded nor cached), so
  // the verdicts are those of the serial order. Returns whether they were kept.
  bool check_outputs_while_sanitizing(const std::vector<WorkerItem>& outputs, const std::vector<WorkerItem>& sanitized,
                                      const std::function<bool()>& keep);
  // Sets each record's verdict, reason and status from its gate: unsafe, incorrect, unchecked or safe.
  static void apply_verdict(VariantRecord& rec);

  // The first check the gate could not run (also context.gate.could_not_run); empty: every one ran.
  [[nodiscard]] const std::string& could_not_run() const { return ctx_.could_not_run; }
  // The exit code of a run stopped by could_not_run: 2 when the problem is at fault (its reference
  // failed, it is not found), 3 when the machine is (the sanitizer, the device); 0 when all ran.
  [[nodiscard]] int could_not_run_exit_code() const;

 private:
  void record_could_not_run(const std::string& why, bool input);
  void run_output_checks(const std::vector<WorkerItem>& items);
  // The cached verdict of a check ("outputs" or a tool) of the item; nullopt: none, or no cache.
  std::optional<GateRecord> lookup(const std::string& check, const WorkerItem& item);
  void store(const std::string& check, const WorkerItem& item, const GateRecord& verdict);
  [[nodiscard]] std::string key_of(const std::string& check, const WorkerItem& item) const;
  void open_cache();
  void find_tools();
  void add_seconds(const std::string& name, double s);
  void add_tool_seconds(const std::string& tool, double s, double start_s);
  // What one tool gave one item: a cached verdict, or its own pass's outcome (passed: it had one).
  struct ToolResult {
    std::optional<GateRecord> cached;
    bool passed = false, ran = false, skipped = false;
    std::vector<SanitizerFinding> findings;
    std::string failure;
    double seconds = 0;
    double start_s = 0;  // of `seconds`, waiting for the sanitized workers to start
  };
  struct SanitizeJob;  // the passes of one sanitize(), from the cache's answers to their results
  std::unique_ptr<SanitizeJob> prepare_sanitize(const std::vector<WorkerItem>& items);
  void run_sanitize(SanitizeJob& job) const;
  void merge_sanitize(SanitizeJob& job);
  void merge_tool(std::size_t t, const std::vector<WorkerItem>& items, std::vector<ToolResult>& result);

  GateSettings settings_;
  RunContext::Gate& ctx_;
  SanitizerLocation sanitizer_;
  std::vector<std::uint64_t> seeds_;
  std::atomic<int> logs_{0};
  bool could_not_run_input_ = false;
  bool sanitizer_failed_ = false;   // a tool could not run: later rounds do not wait for it again
  bool sanitizer_missing_ = false;  // wanted, not found: no tool runs, the finalists are unchecked
  std::optional<VerdictCache> cache_;
  std::vector<std::string> outputs_context_, tool_context_;  // the key parts beyond the variant
};

// Counts a gated record into ctx (gated, unsafe, incorrect, unchecked); a record without a gate is not counted.
void count_gated(const VariantRecord& rec, RunContext::Gate& ctx);

// A variant to gate outside a tune (tune check, tune verify): its CUBIN, launches and record.
struct GateVariant {
  CompileResult compiled;
  Lowered lowered;
  VariantRecord record;
};
// Gates the variants once (the output checks, every sanitizer beside them) at settings' problem, shape, seed and
// device, the search's own parity input included; fills their records and counts them into ctx.
// Returns Gate::could_not_run_exit_code: 0 when every check ran, else 2 or 3 (ctx.could_not_run
// says why; the variants it left out are `unchecked`).
int gate_variants(std::vector<GateVariant>& variants, GateSettings settings, RunContext::Gate& ctx);
// Compiles the variants (lowered from their records; the compile cache is used) for `arch` and
// gates them; returns them with their records filled. Throws InputError for a variant that does
// not compile. *could_not_run_exit: gate_variants' return.
std::vector<GateVariant> gate_records(const std::string& problem, const Shape& shape, std::uint64_t seed, int device,
                                      int arch, std::vector<GateVariant> variants, GateSettings settings,
                                      RunContext::Gate& ctx, int* could_not_run_exit = nullptr);

// tune check RESULTS.json: the gate on variants of a result of record.
struct CheckOptions {
  std::filesystem::path results;
  std::vector<std::string> variants;  // by name; empty: the winner (or the finalists with all_finalists)
  bool all_finalists = false;         // every variant re-measured strictly, and the baseline
  bool write = false;                 // write the verdicts (and a new winner) back into the file and its header
  SanitizeMode sanitize = SanitizeMode::kFinalists;
  int device = 0;
  bool fresh = false;  // --fresh: no verdict read from the cache (the new ones are stored)
  std::function<void(const std::string&)> log;
};
// True when every variant checked is safe. Throws InputError (unreadable file, unknown variant,
// nothing to check, a problem that is not the results', sources changed since with --write, a tune
// writing the file with --write, a gate that could not run because of the problem), DeviceError (no
// device, a gate that could not run because of the sanitizer or the device). Nothing is written
// unless every check ran and the updated record validates.
bool run_check(const CheckOptions& options);

}  // namespace tune

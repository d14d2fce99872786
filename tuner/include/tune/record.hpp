#pragma once
// What a tune records: versioned, self-describing, a status on every variant. The JSON
// converters for all of these live in one file (src/record/json.cpp).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tune/compile.hpp"
#include "tune/device.hpp"
#include "tune/shape.hpp"

namespace tune {

inline constexpr int kResultSchemaVersion = 1;
// Additions a reader of the same major version may ignore. 1: per-variant `fault`, context
// `isolation`, `journal` (GPU work in a worker process, the run journal, --resume) and `shard`
// (--shard runs). 2: context `reference` (which float64 reference the parity checks used: the
// built-in C++ fast path or the problem folder's reference.py and its backend). 3: status `unsafe`,
// per-variant `gate` and parity `output_hash`, context `gate` (the correctness gate, issue 20).
// 4: context `search.space_configurations` and `draws`. 5: gate verdict `unchecked` and its
// `not_run`, context `gate.allow_unchecked`, `gate.could_not_run`, `gate.unchecked` and
// `source_hash` (issue 34). 6: per-variant gate `cached`, context gate `cache`, `fresh`, `checks`,
// `cache_hits`, `cache_misses`, `jobs`, `outputs_s`, `reference_s`, `tool_s`, `finalist_s` and
// `baseline_rule` (issue 37); parity `dtype`, `rule`, `tolerance_passed`, `module_max_abs_error`,
// `module_k`, `module_atol`, `module_passed`; context `tensors`; dtype variables in shapes (issue 35).
// 7: `torch`, the problem's PyTorch module timed beside the tune (issue 36).
inline constexpr int kResultSchemaMinorVersion = 7;

enum class Status {
  kPending,        // not reached yet (the run was interrupted or is in progress)
  kCompiled,       // compile-only run: compiled, nothing measured
  kPassed,         // parity passed and timed
  kIncorrect,      // parity failed; recorded with its errors, not timed
  kCompileFailed,  // NVRTC rejected it; the log excerpt says why
  kLaunchFailed,   // the driver refused the launch (resources, configuration)
  kCrashed,        // it faulted the context (illegal address, trap, ...) or killed its worker process
  kTimeout,        // it did not finish before its deadline; its worker process was killed
  kSkipped,        // not measured on purpose; the reason says why
  kUnsafe,         // passed parity and was timed, but the gate found a hazard: a sanitizer report (race,
                   // out-of-bounds access, barrier misuse, uninitialised read) or an output that changed
                   // from launch to launch. Never wins; the record's gate says what was found.
};
std::string to_string(Status s);
Status status_from_string(const std::string& s);  // throws InputError

struct ParityRecord {
  double max_abs_error = 0;
  double max_rel_error = 0;
  std::int64_t worst_index = -1;      // the element furthest beyond the tolerance (or closest to it)
  std::optional<double> worst_value;  // null when NaN/Inf
  double worst_reference = 0;
  // An integer or bool output's worst element exactly (written for worst_value and worst_reference
  // as JSON integers): an int64's doubles are only the nearest past 2^53. Null for float outputs.
  std::optional<std::int64_t> worst_value_exact, worst_reference_exact;
  std::int64_t mismatches = 0;  // elements outside tolerance (NaN and Inf included)
  std::int64_t non_finite = 0;
  std::int64_t elements = 0;
  double atol = 1e-4, rtol = 1e-4;
  // Issue 35: the output's dtype and the rules it was judged by. The module rule holds when
  // max_abs_error <= module_k * module_max_abs_error + module_atol, where module_max_abs_error is
  // the user's module run in the output's dtype against the float64 reference (null: not run, e.g.
  // a float32 output, no make_model, or no torch). `rule`: "both", "tolerance" or "module" (the
  // problem's tolerance.rule); a variant passes when each rule that applies holds.
  std::string dtype = "float32";
  std::optional<double> module_max_abs_error;
  double module_k = 2.0, module_atol = 1e-4;
  std::string rule = "both";
  bool tolerance_passed = false;      // every element within atol + rtol * |ref|
  std::optional<bool> module_passed;  // null when the module rule could not be applied
  std::uint64_t seed = 0;
  // XXH3-64 of the output's bytes (16 hex digits; empty when unknown): the gate compares the bits a
  // fresh context gives with these.
  std::string output_hash;
};

// One report of a compute-sanitizer tool on a variant.
struct SanitizerFinding {
  std::string tool;                 // memcheck, racecheck, synccheck, initcheck
  std::string kind;                 // the report's first line: "Error: Race reported between Write access at ...", ...
  std::vector<std::string> report;  // its first lines, as the tool wrote them (names demangled)
};

// A finalist's gate verdict (GateRecord::verdict; its record string is to_string's).
enum class GateVerdict {
  kNone,       // "": not given yet (one check's findings, as the verdict cache keeps them)
  kSafe,       // "safe"
  kUnsafe,     // "unsafe": a finding or a changing output
  kIncorrect,  // "incorrect": an input failed
  kUnchecked,  // "unchecked": nothing found, but a check that was asked for could not run (not_run)
};
std::string to_string(GateVerdict v);
GateVerdict gate_verdict_from_string(const std::string& s);  // throws InputError
// The verdicts a record may hold (not kNone's ""), in table order: the validator's choices.
std::vector<std::string> gate_verdict_names();

// A finalist's gate (issue 20): sanitizers on its parity launch, its output over repeated launches
// and from a fresh context, and parity on more inputs than the search used.
struct GateRecord {
  // An unchecked variant wins only with --allow-unchecked (context.gate.allow_unchecked).
  GateVerdict verdict = GateVerdict::kNone;
  std::string reason;              // one line: what was found, or what was checked
  std::vector<std::string> tools;  // the sanitizer tools that ran on it
  // The checks asked for that could not run on it: "outputs", or a sanitizer tool's name.
  std::vector<std::string> not_run;
  std::vector<SanitizerFinding> findings;  // the first few of each tool
  int findings_left_out = 0;               // reports beyond those (a kernel may have hundreds)
  struct Input {
    std::string name;  // "seed 2", "large magnitudes", ...
    ParityRecord parity;
  };
  std::vector<Input> inputs;
  int launches = 0;           // launches compared for determinism (fresh context included)
  bool deterministic = true;  // false: the bits (or, for a problem that declares itself non-deterministic,
                              // the values beyond tolerance) changed between launches
  std::string determinism;    // what was compared, or what changed
  double seconds = 0;         // wall time of this variant's checks (sanitizer runs shared with others)
  // The checks ("outputs", a tool's name) whose verdict came from the verdict cache (issue 37).
  std::vector<std::string> cached;
};

struct ClockRecord {
  bool available = false;
  int sm_mhz_start = 0, sm_mhz_end = 0;
  std::vector<std::string> reasons;  // union over the measurement
  bool throttled = false;
};

struct TimingRecord {
  std::string profile;  // "search" or "strict"
  int samples = 0;
  double min_us = 0, q1_us = 0, median_us = 0, mean_us = 0, q3_us = 0, max_us = 0, stddev_us = 0;
  double noise = 0;  // stddev / mean
  // 1.4826 * median absolute deviation / median: the spread of the bulk of the samples, blind to
  // the rare slow outlier (a preempted launch). The stopping rules test this one.
  double robust_noise = 0;
  std::string stop_reason;
  double gpu_seconds = 0;
  double batch_mean_us = 0;  // back-to-back launches between one event pair, per launch
  int batch_launches = 0;
  double graph_mean_us = 0;  // the same launches replayed from a CUDA graph, per launch
  ClockRecord clocks;
  int throttle_retries = 0;  // measurements discarded because the clocks throttled
  // Where the measurement's wall time went (ms): warm-up, cold samples, batch, graph, clock reads.
  double warmup_ms = 0, cold_ms = 0, batch_ms = 0, graph_ms = 0, clocks_ms = 0;
};

// An empty kernel measured by the harness's own methods: no variant can be timed below these.
struct HarnessFloor {
  double empty_cold_us = 0;   // cold method (L2 flush, events around one launch)
  double empty_batch_us = 0;  // back-to-back launches on the stream, per launch
  double empty_graph_us = 0;  // CUDA graph replay, per launch
};

// What is known of a variant that crashed or hung its worker process (or faulted its context).
// How a worker process lost a variant (FaultRecord::kind; its record string is to_string's).
enum class FaultKind {
  kSignal,     // "signal": a signal ended the worker
  kExit,       // "exit": the worker exited on its own
  kCudaError,  // "cuda_error": the worker reported a sticky CUDA error
  kTimeout,    // "timeout": no answer before the deadline; the worker was killed
  kError,      // "error": the worker reported a failure before it was stopped
};
std::string to_string(FaultKind k);
FaultKind fault_kind_from_string(const std::string& s);  // throws InputError

struct FaultRecord {
  FaultKind kind = FaultKind::kError;
  std::string signal;      // "SIGSEGV", when a signal ended the worker
  std::string cuda_error;  // "CUDA_ERROR_ILLEGAL_ADDRESS", when the worker reported one
  std::string phase;       // the last phase the worker announced: load, parity, warm-up, timing, ...
  int exit_code = 0;       // when the worker exited on its own
  double deadline_s = 0;   // the deadline it had
  std::string message;     // kind "error": what the worker reported before it was stopped
};

struct VariantRecord {
  std::string name;
  nlohmann::ordered_json params;
  bool baseline = false;
  Status status = Status::kPending;
  std::string reason;  // why it failed or was skipped
  double compile_seconds = 0;
  bool compile_cached = false;  // the CUBIN came from the compile cache
  double load_seconds = 0;
  double first_launch_ms = 0;
  // Wall time of the whole evaluation as the orchestrator saw it (worker round trip included).
  double evaluate_ms = 0;
  double parity_ms = 0;                          // the parity check: poison, launch, download, compare
  double unload_ms = 0;                          // unloading the module after the evaluation
  std::vector<nlohmann::ordered_json> launches;  // kernel, grid, block, dynamic smem
  std::map<std::string, Resources> resources;    // per kernel (lowered name)
  std::string log_excerpt;
  std::optional<ParityRecord> parity;
  std::optional<TimingRecord> timing;         // the ranking measurement (strict when re-measured)
  std::optional<TimingRecord> search_timing;  // the cheap first pass, when a strict one followed
  // Throughput from the problem's counts at the median cold time.
  std::optional<double> gbytes_per_s, gflop_per_s;
  std::optional<FaultRecord> fault;  // crashed or timeout: how it ended
  std::optional<GateRecord> gate;    // the correctness gate, for finalists

  [[nodiscard]] int max_registers() const;
  [[nodiscard]] int spill_bytes() const;
};

// How a sharded run splits its work (ShardRecord::split; its record string is to_string's).
enum class ShardSplit {
  kItems,     // "items": whole shapes per shard
  kVariants,  // "variants": one shape's variants
};
std::string to_string(ShardSplit s);
ShardSplit shard_split_from_string(const std::string& s);  // throws InputError
std::vector<std::string> shard_split_names();

// A result of a sharded run (--shard K/N): enough for `tune merge` to check the set and rebuild
// the unsharded order. See tune/sweep.hpp.
struct ShardRecord {
  int index = 0;
  int count = 1;
  ShardSplit split = ShardSplit::kItems;
  std::int64_t items = 1;            // work items in the whole sweep
  std::int64_t item = 0;             // this result's item
  std::string run_key;               // sweep_run_key: equal for all shards of one run
  std::int64_t variants = 0;         // split "variants": the unsharded variant count
  std::int64_t baseline_index = -1;  // split "variants": the baseline's unsharded index (-1: none)
};

// How the variants were chosen (RunContext::search, context.search.strategy; its record string is
// to_string's): the choice, and "+halving" where successive halving timed it.
enum class SearchLabel {
  kExhaustive,     // "exhaustive": every valid configuration
  kRandom,         // "random": a sample (--budget)
  kHalving,        // "halving": every valid configuration, screened then halved
  kRandomHalving,  // "random+halving"
  kWarm,           // "warm": --warm-start's promising configurations and some explored
  kWarmHalving,    // "warm+halving"
  kModel,          // "model": the surrogate model from a random initial design
  kWarmModel,      // "warm+model": the model from the warm choice
};
std::string to_string(SearchLabel l);
SearchLabel search_label_from_string(const std::string& s);  // throws InputError
std::vector<std::string> search_label_names();
// The label of `choice` timed by successive halving (the model is never halved: it stays as it is).
SearchLabel with_halving(SearchLabel choice);

// A tensor of the problem as the run bound it (context.tensors, minor version 6).
struct TensorRecord {
  std::string name;
  std::string role;   // "parameter", "input", "output"
  std::string dtype;  // dtype_name
  std::vector<std::int64_t> shape;
};

struct RunContext {
  std::vector<TensorRecord> tensors;  // empty in results of an earlier version
  std::string tool_version;
  std::string git_commit;
  std::string command_line;
  std::string started_at;  // ISO 8601 UTC
  std::string finished_at;
  std::string host;
  std::string nvrtc_version;
  std::string cuda_header_version;
  std::vector<std::string> compile_options;
  std::string arch;
  std::string config_file;
  // content_hash of the search space with its kernel templates and of the problem file: what the
  // journal's identity holds. tune check --write refuses a record whose sources changed since.
  // Empty in results of an earlier version.
  std::string source_hash;
  // How the float64 reference was computed, as the worker reported it: "built-in C++ (contact)",
  // "reference.py (torch 2.11.0)", "reference.py (numpy)"; empty when nothing was timed.
  std::string reference;
  // Which reference the run checks against, as its identity holds it (--resume refuses another):
  // "built-in C++ (contact)", "reference.py xxh3:<hash> (numpy or torch)"; "none" for compile only.
  std::string reference_identity;
  std::string compile_cache;  // its directory, or "off"
  int jobs = 1;
  SearchLabel search = SearchLabel::kExhaustive;  // how the variants were chosen
  int budget = 0;                                 // random: the sample size asked for
  // Configurations that pass the constraints at this shape; -1: not counted (a space larger than
  // --max-space, sampled by drawing configurations instead of enumerating it).
  std::int64_t valid_configs = 0;
  std::uint64_t space_configurations = 0;  // the product of the parameters' values (minor version 4)
  std::uint64_t draws = 0;                 // configurations drawn when the space was sampled, not enumerated (4)
  // The valid configurations the search chose among when there were more than --max-candidates (a
  // uniform sample of them); 0: every valid one.
  std::uint64_t candidates = 0;
  double time_budget_s = 0;  // --time-budget (0: none)
  // "warm": --warm-start's files, its keep ratio, how many configurations were promising there
  // (and are valid here), and how many others were explored (empty: no warm start; an optional
  // object, so no new minor version).
  std::vector<std::string> warm_files;
  double warm_keep = 0;
  int warm_promising = 0;
  int warm_explored = 0;
  // --warm-refine: the local search after the warm choice (0 rounds: none), how many of the
  // fastest its neighbourhoods were taken around, and how many configurations it added.
  int warm_refine_top = 0;
  int warm_refine_rounds = 0;
  int warm_refine_added = 0;
  // --search model (context.search.model, an optional object): the surrogate's library, the initial
  // design, the model's rounds and what they added, and why it stopped.
  std::string model_library;
  int model_initial = 0;
  int model_rounds = 0;
  int model_added = 0;
  std::string model_stop;
  bool stopped_by_time_budget = false;
  bool interrupted = false;  // the first Ctrl-C (SIGINT) ended the search early
  // Loading, parity and timing run in a worker process (empty in a compile-only run).
  struct Isolation {
    std::string worker;                  // "process", or "fake (TUNE_WORKER_FAKE: synthetic results, nothing measured)"
    double first_variant_timeout_s = 0;  // the deadline of each variant before the baseline is timed
    double variant_timeout_s = 0;        // the deadline used after it
    std::string timeout_rule;
    int worker_starts = 0;
    std::vector<std::string> test_hooks;  // TUNE_WORKER_* variables in effect
  } isolation;
  std::string journal;       // the journal file of this run
  int resumed_variants = 0;  // records taken from the journal by --resume
  // The journal's first line: what --resume matches. A finished run keeps it here once its journal
  // is gone, so a resumed sweep skips the shape (context.journal.identity; null in older files).
  nlohmann::ordered_json run_identity;
  std::optional<ShardRecord> shard;  // null: not a shard
  // The correctness gate (issue 20): which checks ran on the finalists and what they cost.
  struct Gate {
    std::string mode = "off";  // off, winner, finalists
    std::string sanitizer;     // the compute-sanitizer that ran, or "" when none did
    std::string sanitizer_version;
    std::vector<std::string> tools;  // sanitizer tools run
    std::string note;                // why a part did not run (no compute-sanitizer, ...), or ""
    // The first check the gate could not run (a sanitizer that did not start the worker, an output
    // check whose worker failed), or "": the finalists it left out are `unchecked`.
    std::string could_not_run;
    bool allow_unchecked = false;     // --allow-unchecked: an unchecked finalist may win
    std::vector<std::string> inputs;  // extra parity inputs: seeds and the problem's edge cases
    int launches = 0;                 // launches per finalist compared for determinism
    int rounds = 0;                   // a round gates the next finalists when every gated one failed
    int gated = 0, unsafe = 0, incorrect = 0, unchecked = 0;
    double wall_s = 0;  // wall time of the gate
    double share = 0;   // wall_s / the run's total wall time
    // The wall the gate added to the run: wall_s, less what the PyTorch module's preparation beside it
    // (TorchBeside) covered; and its share of the run.
    double added_s = 0, added_share = 0;
    // The verdict cache (issue 37): its folder, or "off (...)"; fresh: none read (--fresh).
    std::string cache = "off";
    bool fresh = false;
    int checks = 0, cache_hits = 0, cache_misses = 0;        // one check: a finalist's outputs, or one tool on it
    int jobs = 0;                                            // sanitizer processes at once
    double outputs_s = 0;                                    // wall of the output checks' workers
    double reference_s = 0;                                  // wall of the further inputs' float64 references (side by side)
    std::vector<std::pair<std::string, double>> tool_s;      // per tool: the seconds of its processes
    std::vector<std::pair<std::string, double>> finalist_s;  // per gated variant: its checks' seconds
    // Where the seconds went (summed over processes): "outputs start" (the output checks' worker
    // until ready), "outputs draw" (the further inputs drawn), "outputs launches" (the launches and
    // comparisons, the references aside), "<tool> start" (that tool's sanitized workers until ready:
    // compute-sanitizer's start, the CUDA context under it, the data drawn), "<tool> run" (the
    // launches under it, the report read).
    std::vector<std::pair<std::string, double>> parts_s;
    std::string baseline_rule;  // how the baseline is gated
  } gate;
};

// PyTorch's times of one call, as report/torch_baseline.py writes them (µs, over `samples`).
struct TorchTimes {
  int samples = 0;
  double median_us = 0, q1_us = 0, q3_us = 0, min_us = 0, mean_us = 0;
};
// One way of running the module (eager, torch.compile): both methods' times, or why not.
struct TorchModeRecord {
  std::optional<TorchTimes> graph;        // CUDA graph of graph_calls calls, replayed; per call
  std::optional<TorchTimes> events;       // L2 flushed, CUDA events around one call
  std::string error;                      // empty: both measured
  std::optional<double> compile_seconds;  // torch.compile's first call
};
// The problem's PyTorch module (make_model of its reference.py) timed at the run's shape on the
// run's timing inputs, in a process of its own after the gate (issue 36; docs/results-format.md).
struct TorchRecord {
  std::string status;  // "measured", "cached" (an earlier measurement), "skipped", "failed"
  std::string reason;  // why skipped or failed
  std::string torch_version, cuda_version, device, module_dtype;
  std::vector<std::string> modes;                                    // asked for: "eager", "compile"
  bool tf32 = false;                                                 // TF32 allowed in matmul and cuDNN
  nlohmann::ordered_json method = nlohmann::ordered_json::object();  // the harness's settings
  std::optional<TorchModeRecord> eager, compile;
  double seconds = 0;  // wall time of the harness (0 when cached or skipped)
  double held_s = -1;  // not recorded: how long it waited for TorchBeside::release (-1: it did not wait)
};

struct RunRecord {
  int schema_version = kResultSchemaVersion;
  int schema_minor_version = kResultSchemaMinorVersion;
  RunContext context;
  std::optional<DeviceInfo> device;  // null in a compile-only run
  std::string problem;
  Shape shape;
  std::uint64_t seed = 0;
  bool timed = false;  // false: compile-only, nothing measured
  std::string untimed_reason;
  double flop = 0, bytes = 0;                 // per call, from the problem's counts
  std::optional<HarnessFloor> harness_floor;  // measured at the start of a timed run
  std::vector<VariantRecord> variants;
  std::optional<std::string> winner;  // variant name
  std::string winner_rule;
  std::optional<std::string> baseline;
  std::optional<double> speedup;     // baseline median / winner median
  bool complete = false;             // false while running or when interrupted
  std::optional<TorchRecord> torch;  // null: not asked for (--torch off, untimed or interrupted run)
  struct Timings {
    double compile_wall_s = 0, measure_wall_s = 0, total_wall_s = 0;
  } wall;

  [[nodiscard]] const VariantRecord* find(const std::string& name) const;
  // The limits its variants were lowered with, for a reader that lowers them again (header, check):
  // its device's ("device": sm_count, max_threads_per_block, max_shared_memory_per_block_optin_bytes,
  // compute_capability); a compile-only run's, those of its target arch (context.arch).
  [[nodiscard]] DeviceLimits limits() const;
};

nlohmann::ordered_json to_json(const RunRecord& run);
// One variant, as in the result's "variants" array (the journal and the worker protocol use it).
nlohmann::ordered_json to_json(const VariantRecord& variant);
// Throws InputError naming what is wrong.
VariantRecord variant_from_json(const nlohmann::ordered_json& json);
// A variant's gate alone (the verdict cache stores it).
nlohmann::ordered_json to_json(const GateRecord& gate);
GateRecord gate_from_json(const nlohmann::ordered_json& json);
nlohmann::ordered_json to_json(const HarnessFloor& floor);
nlohmann::ordered_json to_json(const TorchRecord& torch);
TorchRecord torch_from_json(const nlohmann::ordered_json& json);  // validated first (validate_result_json)
// A shape as results, journals, the worker protocol and the reference request write it: each
// dimension a number, then each dtype variable its name ({"B": 4, "N": 64, "T": "bfloat16"}).
nlohmann::ordered_json shape_to_json(const Shape& shape);
// Throws InputError naming the entry that is neither an integer nor a dtype's name.
Shape shape_from_json(const nlohmann::ordered_json& json);
HarnessFloor harness_floor_from_json(const nlohmann::ordered_json& json);
// Validates (validate_result_json), then reads. Throws InputError naming what is wrong.
RunRecord run_from_json(const nlohmann::ordered_json& json);

// The one validation of a results file, for every reader of one (src/record/validate.cpp; issue 22,
// item 11): the schema version; every field typed and in range as the format's table holds it
// (src/record/result_schema.cpp, issue 38) (shape dims
// positive integers, the problem's dims where the problem is found); each record's status borne
// out by its record (passed and unsafe: a passing parity check and a timing with a positive,
// finite median; a gate's verdict is its status); variant names unique; the summary's baseline the
// variant marked baseline, its winner a passed variant within the rule's tie band of the fastest,
// its speedup the baseline's median over the winner's. Throws InputError
// "<JSON path>: <what is wrong>; <what to do>".
void validate_result_json(const nlohmann::ordered_json& json);
// One variant record (a results file's variants[i], a journal line's record), `at` its JSON path;
// `remedy` ends the message.
// A torch record (a results file's "torch", a cached one), `at` its JSON path.
void validate_torch_record(const nlohmann::ordered_json& json, const std::string& at = "torch");
void validate_variant_json(const nlohmann::ordered_json& json, const std::string& at, const std::string& remedy);
// The results format's table (each field's path, type, whether required, the minor version that
// added it, its values, what it is) as the markdown table of docs/results-format.md.
std::string result_schema_doc();

}  // namespace tune

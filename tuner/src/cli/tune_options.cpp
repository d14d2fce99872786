// The main options of tune (tune_command.hpp), registered in groups in the order --help lists them.
#include <cstdint>
#include <limits>
#include <string>

#include "cli/tune_command.hpp"

namespace tune::cli {

namespace {

// What to tune and where its results go.
void add_problem_options(CLI::App& app, TuneArgs& args) {
  app.add_option("--problem", args.opt.problem,
                 "problem to tune: a name (tune list shows them) or a problem folder; its dimensions are options: "
                 "--B 4 --N 64, a comma list sweeps (--N 64,256)");
  app.add_option("--problem-path", args.problem_path,
                 "folder of problem folders, searched before $TUNE_PROBLEM_PATH and the built-in problems (repeatable)")
      // One folder an occurrence: `tune header --problem-path DIR results.json` took results.json for a
      // second folder and then asked for the results (round 9).
      ->allow_extra_args(false);
  app.add_option(
      "--sweep", args.sweep_file,
      R"(sweep file: {"items": [{"problem": "contact", "B": [1, 4], "N": [64, 256]}, ...]}, instead of --problem)");
  app.add_option("--shard", args.shard_text,
                 "K/N: run part K of N (whole shapes of a sweep, or the variants of a single shape); "
                 "tune merge puts the parts together");
  args.seed_text = std::to_string(args.opt.seed);
  app.add_option("--seed", args.seed_text, "seed of the inputs and parameters (0 to 2^64 - 1)")->capture_default_str();
  app.add_option("--out", args.out_dir, "results folder (results/<gpu>/<problem>/<shape>.json)")->capture_default_str();
  app.add_option("--header", args.header, "where to write the generated header (default: beside the JSON)");
  app.add_option("--config", args.config, "search-space file (default: the problem's own problem.json)");
}

// Where it runs: compile threads, devices and the target arch (--transfer sits among them in --help).
void add_device_options(CLI::App& app, TuneArgs& args) {
  app.add_option("--jobs,-j", args.opt.jobs, "parallel NVRTC compiles, 1 to 1024 (default: all cores)");
  auto* device_opt = add_device_option(app, args.opt.device);
  app.add_option("--devices", args.devices_text,
                 "all, or a comma list of ordinals (0,2): one worker per device, taking the sweep's shapes from one "
                 "queue; compiles share --jobs; a device that fails hands its work to the others")
      ->excludes(device_opt);
  app.add_flag("--transfer", args.transfer,
               "in a sweep: each problem's shapes cheapest first (by its work counts), each tuned with --warm-start on "
               "the results of the earlier ones (and any --warm-start files); the first is tuned without");
  app.add_flag("--replicate", args.replicate,
               "with --devices: run every shape on every device (card-to-card comparisons; tune report shows the spread)");
  app.add_option("--arch", args.opt.arch,
                 "compute capability to compile for when there is no device, e.g. 90 or sm_90; the variants are "
                 "lowered for its limits (90: an H200's 132 SMs and 227 KiB)")
      ->capture_default_str()
      ->transform(arch_value());
}

// Which variants are timed: the strict re-measure, sampling, the warm start and the limits.
void add_sampling_options(CLI::App& app, TuneOptions& opt) {
  app.add_option("--top", opt.top_k,
                 "variants re-measured strictly (in rounds of a block of samples each) before naming the winner")
      ->capture_default_str();
  app.add_option("--budget", opt.budget,
                 "time a random sample of N valid configurations (drawn from --seed) plus the baseline, not all")
      ->check(CLI::Range(0, 1 << 30));
  app.add_option("--warm-start", opt.warm_start,
                 "results of other shapes of the problem (.json or .json.gz): time only the configurations within "
                 "--warm-keep of the best at the nearest of those shapes, --warm-explore others and the baseline")
      ->expected(1, -1);
  app.add_option("--warm-keep", opt.warm_keep,
                 "with --warm-start: a configuration within this ratio of the best there is promising (>= 1)")
      ->check(finite_value())
      ->check(CLI::Range(1.0, 1e6))
      ->capture_default_str();
  app.add_option("--warm-explore", opt.warm_explore, "with --warm-start: others timed, drawn at random from --seed")
      ->check(CLI::Range(0, 1 << 30))
      ->capture_default_str();
  app.add_option("--warm-refine", opt.warm_refine,
                 "with --warm-start or --search model: then time the configurations one parameter away from this "
                 "many of the fastest here, round after round while a round finds a faster one (0: no local search)")
      ->check(CLI::Range(0, 1 << 20))
      ->capture_default_str();
  app.add_option("--warm-refine-rounds", opt.warm_refine_rounds, "with --warm-refine: at most this many rounds")
      ->check(CLI::Range(0, 1 << 20))
      ->capture_default_str();
  app.add_option("--max-space", opt.max_space,
                 "the most configurations (the product of the parameters' values) a space is enumerated up to; a "
                 "larger one is refused, or with --budget sampled without enumerating it")
      ->transform(count_value())
      ->capture_default_str();
  app.add_option("--max-candidates", opt.max_candidates,
                 "with --budget, --warm-start or --search model: the most valid configurations held to choose "
                 "among; past it, a uniform sample of that many from --seed (the baseline kept)")
      ->transform(count_value())
      ->check(CLI::Range(std::size_t{1}, std::numeric_limits<std::size_t>::max()))
      ->capture_default_str();
  app.add_option("--max-variants", opt.max_variants,
                 "the most variants a run compiles and times (after --budget and --shard); more is refused")
      ->transform(count_value())
      ->check(CLI::Range(std::size_t{1}, std::numeric_limits<std::size_t>::max()))
      ->capture_default_str();
  app.add_option("--time-budget", opt.time_budget_s,
                 "stop compiling and measuring after SECONDS; the rest is recorded as skipped, a winner is still named");
}

// --search and the surrogate model's knobs.
void add_search_options(CLI::App& app, TuneOptions& opt) {
  app.add_option_function<std::string>(
         "--search", [&opt](const std::string& mode) { opt.search = search_mode_from_string(mode); },
         "exhaustive: time every variant with the search profile; halving: screen every variant cheaply, "
         "time the best third again; model: a surrogate (gradient-boosted trees, XGBoost) chooses what to "
         "compile next, from an initial design (or the --warm-start choice), round after round while it "
         "predicts a gain, then the local search of --warm-refine")
      ->check(CLI::IsMember(search_mode_names()))
      ->default_str(to_string(opt.search));
  app.add_option("--model-init", opt.model_init,
                 "with --search model: configurations of the random initial design (0: twice the batch or 5 % of the "
                 "valid configurations, the larger)")
      ->check(CLI::Range(0, 1 << 30))
      ->capture_default_str();
  app.add_option("--model-batch", opt.model_batch,
                 "with --search model: configurations the model proposes per round (0: the compile jobs, at least 8)")
      ->check(CLI::Range(0, 1 << 20))
      ->capture_default_str();
  app.add_option("--model-rounds", opt.model_rounds, "with --search model: at most this many rounds")
      ->check(CLI::Range(0, 1 << 20))
      ->capture_default_str();
  app.add_option("--model-gain", opt.model_gain,
                 "with --search model: stop when no configuration left is predicted (its lower bound) to beat the "
                 "best by this fraction")
      ->check(finite_value())
      ->check(CLI::Range(0.0, 0.99))
      ->capture_default_str();
}

// How each variant is run and kept: spills, compile-only, deadlines, resume, the cache, the gate.
void add_run_options(CLI::App& app, TuneArgs& args) {
  TuneOptions& opt = args.opt;
  app.add_flag("--keep-spills", opt.keep_spills, "time variants that spill registers too (pruned by default)");
  app.add_flag("--compile-only", opt.compile_only, "compile every variant and record resources; time nothing");
  app.add_option("--variant-timeout", opt.variant_timeout_s,
                 "deadline of each variant in the worker process, in seconds; a variant past it is killed and "
                 "recorded as timeout (default: 10 s until the baseline is timed, then derived from its median, "
                 "at least 5 s)");
  app.add_option("--reference-timeout", args.reference_timeout_s,
                 "deadline of the problem's reference.py, in seconds (every command that runs it); past it the "
                 "reference and every process it started are killed and the run stops with one line (default: "
                 "$TUNE_REFERENCE_TIMEOUT, else 240 s)");
  app.add_flag("--resume", opt.resume,
               "continue the interrupted run recorded in <shape>.journal.jsonl beside the results (same device, "
               "sources, options, shape and seed, or it refuses and names the field); journaled variants are "
               "not measured again; without a journal, start a fresh run. A finished run removes its journal, an "
               "interrupted one keeps it");
  app.add_option("--cache-dir", args.cache_dir, "compile cache directory (default: $XDG_CACHE_HOME/tune or ~/.cache/tune)");
  app.add_flag("--no-cache", opt.no_cache,
               "compile and gate everything, neither reading nor writing the compile cache or the gate's verdicts");
  app.add_flag("--fresh-verdicts", opt.fresh_verdicts,
               "run every gate check again instead of reusing a cached verdict (the new verdicts are stored)");
  add_sanitize_option(app, opt.sanitize,
                      "the correctness gate's compute-sanitizer runs (memcheck, racecheck, synccheck, initcheck): on "
                      "every finalist, on the would-be winner only (and the next when it fails), or off; the "
                      "finalists' outputs are checked on more inputs and over many launches either way");
  app.add_option_function<std::string>(
         "--torch", [&opt](const std::string& modes) { opt.torch = torch_modes_from_string(modes); },
         "time the problem's PyTorch module (make_model of its reference.py) at the shape on the run's inputs, after "
         "the search and the gate, in a process of its own: eager, torch.compile, all (both) or off; recorded in the "
         "results and cached (--no-cache times it again); skipped in one line where torch, CUDA or make_model is missing")
      ->check(CLI::IsMember(torch_mode_names()))
      ->default_str(to_string(opt.torch));
  app.add_flag("--allow-unchecked", opt.allow_unchecked,
               "let a finalist win that the gate could not check in full (a sanitizer that did not run, output checks "
               "that could not run): it is recorded `unchecked`; without this such a run names no winner and exits 2 or 3");
}

}  // namespace

void add_tune_options(CLI::App& app, TuneArgs& args) {
  add_problem_options(app, args);
  add_device_options(app, args);
  add_sampling_options(app, args.opt);
  add_search_options(app, args.opt);
  add_run_options(app, args);
}

}  // namespace tune::cli

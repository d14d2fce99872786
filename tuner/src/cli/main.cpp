// tune: the command line. It parses arguments and calls the library, nothing more.
#include <sys/ioctl.h>
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <limits>
#include <cstdio>
#include <ranges>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "tune/compile.hpp"
#include "tune/devices.hpp"
#include "tune/errors.hpp"
#include "tune/gate.hpp"
#include "tune/io.hpp"
#include "tune/problem.hpp"
#include "tune/report.hpp"
#include "tune/sweep.hpp"
#include "tune/tune.hpp"
#include "tune/verify.hpp"
#include "tune/worker_protocol.hpp"
#include "tune/worker_server.hpp"

namespace {

std::string joined_command_line(int argc, char** argv) {
  std::string s;
  for (int i = 0; i < argc; ++i) s += (i ? " " : "") + std::string(argv[i]);
  return s;
}

// 128 + the signal that interrupted the run, as a shell reports it: 130 (SIGINT), 143 (SIGTERM).
int interrupted_exit_code() {
  const int signal = tune::interrupt_signal();
  return 128 + (signal > 0 ? signal : SIGINT);
}

// Exit 5 (docs/cli.md): a timed run in which no variant passed; its results are written, no header.
constexpr int kNothingPassed = 5;

// Says so in one line when no variant of a finished timed run passed (none has a usable median);
// true then.
bool say_nothing_passed(const tune::RunRecord& run, const std::filesystem::path& json_path) {
  if (!run.timed || run.winner || run.context.interrupted) return false;
  std::map<std::string, int> by_status;
  for (const auto& v : run.variants) ++by_status[tune::to_string(v.status)];
  std::string counts;
  for (const auto& [k, n] : by_status) counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", n, k);
  fmt::print(stderr, "tune: no variant of {} {} passed ({}): no winner, no header; the results are in {}{}\n", run.problem,
             run.shape.describe(), counts, json_path.string(),
             run.context.shard ? " (a --shard part exits 0: tune merge exits 5 if the merged run has no winner)" : "");
  return true;
}

// True when the run counts for exit 5: nothing passed, and it is not a --shard part (whose verdict
// is the merge's, so that a Slurm merge queued afterok still runs).
bool print_summary(const tune::TuneOutcome& out) {
  const auto& run = out.run;
  std::vector<const tune::VariantRecord*> ranked;
  for (const auto& v : run.variants)
    if (tune::has_usable_timing(v)) ranked.push_back(&v);
  std::sort(ranked.begin(), ranked.end(), [](auto a, auto b) { return a->timing->median_us < b->timing->median_us; });
  std::map<std::string, int> by_status;
  for (const auto& v : run.variants) ++by_status[tune::to_string(v.status)];
  std::string counts;
  for (const auto& [k, n] : by_status) counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", n, k);
  fmt::print("\n{} {}: {} variants ({})\n", run.problem, run.shape.describe(), run.variants.size(), counts);
  fmt::print("compile wall {:.1f} s, measure {:.1f} s, total {:.1f} s\n", run.wall.compile_wall_s, run.wall.measure_wall_s,
             run.wall.total_wall_s);
  if (!ranked.empty()) {
    fmt::print("\n{:>4}  {:>11}  {:>9}  {:>9}  {:>7}  {:>5}  {}\n", "rank", "cold med us", "batch us", "graph us", "noise",
               "regs", "config");
    for (std::size_t i = 0; i < std::min<std::size_t>(ranked.size(), 8); ++i) {
      const auto* v = ranked[i];
      fmt::print("{:>4}  {:>11.3f}  {:>9.3f}  {:>9.3f}  {:>6.2f}%  {:>5}  {}{}{}\n", i + 1, v->timing->median_us,
                 v->timing->batch_mean_us, v->timing->graph_mean_us, v->timing->noise * 100, v->max_registers(), v->name,
                 v->baseline ? "  [baseline]" : "", run.winner && *run.winner == v->name ? "  [winner]" : "");
    }
  }
  if (run.baseline) {
    const auto* b = run.find(*run.baseline);
    if (b && b->timing) fmt::print("\nbaseline {:.3f} us", b->timing->median_us);
    if (run.speedup) fmt::print(", winner {:.3f} us: {:.2f}x faster\n", run.find(*run.winner)->timing->median_us, *run.speedup);
    else fmt::print("\n");
  }
  fmt::print("results: {}\n", out.json_path.string());
  if (out.header_path) fmt::print("header:  {}\n", out.header_path->string());
  std::fflush(stdout);
  return say_nothing_passed(run, out.json_path) && !run.context.shard;
}

// The shape options: every `--NAME V[,V...]` (or `--NAME=V,...`) left after the known options.
// Which names are dimensions is the problem's to say (resolve_shape, expand_dims).
std::vector<std::pair<std::string, std::vector<std::int64_t>>> shape_lists(const std::vector<std::string>& extras) {
  std::vector<std::pair<std::string, std::vector<std::int64_t>>> out;
  for (std::size_t i = 0; i < extras.size(); ++i) {
    const std::string& t = extras[i];
    if (t.size() < 3 || t.compare(0, 2, "--") != 0)
      throw tune::InputError(fmt::format("unexpected argument '{}' (shape dimensions are given as --NAME VALUE, e.g. --B 4)", t));
    std::string name = t.substr(2), text;
    if (const auto eq = name.find('='); eq != std::string::npos) {
      text = name.substr(eq + 1);
      name.resize(eq);
    } else if (i + 1 < extras.size()) {
      text = extras[++i];
    } else {
      throw tune::InputError(fmt::format("--{} needs a value (an integer, or a comma list to sweep)", name));
    }
    std::vector<std::int64_t> values;
    for (std::size_t pos = 0; pos <= text.size();) {
      const auto comma = text.find(',', pos);
      const std::string item = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
      std::int64_t v = 0;
      const auto r = std::from_chars(item.data(), item.data() + item.size(), v);
      if (item.empty() || r.ec != std::errc() || r.ptr != item.data() + item.size())
        throw tune::InputError(fmt::format("--{} {}: '{}' is not an integer (an unknown option? tune --help lists them; "
                                           "the problem's dimensions are shape options)",
                                           name, text, item));
      values.push_back(v);
      if (comma == std::string::npos) break;
      pos = comma + 1;
    }
    for (auto& [k, v] : out)
      if (k == name) throw tune::InputError(fmt::format("--{} is given twice; give one comma list", name));
    out.emplace_back(name, std::move(values));
  }
  return out;
}

// An option given an empty value (--out '', --cache-dir '') means nothing, whatever the command:
// refused in one line rather than taken for the default.
void check_no_empty_values(const CLI::App& app) {
  std::vector<const CLI::App*> apps{&app};
  for (const CLI::App* sub : app.get_subcommands()) apps.push_back(sub);
  for (const CLI::App* a : apps)
    for (const CLI::Option* o : a->get_options())
      if (o->get_type_size() > 0)
        for (const std::string& v : o->results())
          if (v.empty())
            throw tune::InputError(fmt::format("{} is given an empty value; give one, or leave the option out", o->get_name()));
}

// A tune's options that parse but cannot be run: refused in one line (exit 2) before anything runs.
void check_options(const CLI::App& app, tune::TuneOptions& opt, const std::string& seed_text) {
  if (app.count("--arch") > 0) tune::check_arch(opt.arch, fmt::format("--arch {}", opt.arch));
  // Parsed here: CLI11 wraps -1 and values past 2^64 - 1 into a seed.
  const auto r = std::from_chars(seed_text.data(), seed_text.data() + seed_text.size(), opt.seed);
  if (seed_text.empty() || r.ec != std::errc() || r.ptr != seed_text.data() + seed_text.size())
    throw tune::InputError(fmt::format("--seed {}: expected an integer from 0 to {}", seed_text,
                                       std::numeric_limits<std::uint64_t>::max()));
  constexpr int kMaxJobs = 1024;  // threads of NVRTC compiles; far more than any machine's cores
  if (app.count("--jobs") > 0 && (opt.jobs < 1 || opt.jobs > kMaxJobs))
    throw tune::InputError(fmt::format("--jobs {}: expected 1 to {} parallel compiles (leave it out for one per hardware "
                                       "thread)", opt.jobs, kMaxJobs));
  if (app.count("--max-space") > 0 && opt.max_space < 1)
    throw tune::InputError("--max-space 0: expected at least 1 configuration to enumerate");
  if (opt.top_k < 0)
    throw tune::InputError(fmt::format("--top {}: expected 0 or more variants to re-measure strictly", opt.top_k));
  if (opt.device < 0)
    throw tune::InputError(fmt::format("--device {}: expected a CUDA device ordinal, 0 or more", opt.device));
  for (const auto& [name, seconds] : {std::pair{"--time-budget", opt.time_budget_s}, std::pair{"--variant-timeout", opt.variant_timeout_s}})
    if (app.count(name) > 0 && !(std::isfinite(seconds) && seconds > 0))
      throw tune::InputError(fmt::format("{} {}: expected a positive number of seconds", name, seconds));
}

// The columns of the terminal on fd (the progress lines fit them), 0 when fd is not a terminal.
std::size_t terminal_width(int fd) {
  winsize w{};
  if (!isatty(fd) || ioctl(fd, TIOCGWINSZ, &w) != 0) return 0;
  return w.ws_col > 0 ? w.ws_col : 80;
}

void print_problem_list() {
  const auto found = tune::list_problems();
  if (found.empty())
    fmt::print("no problems found (pass --problem-path DIR or set TUNE_PROBLEM_PATH; an installed tune has the built-in "
               "ones in <prefix>/share/tune/configs)\n");
  for (const auto& l : found) {
    fmt::print("{}  ({}: {})\n", l.name, l.origin, l.file.parent_path().string());
    try {
      const tune::Problem& p = tune::find_problem(l.file.string());
      const tune::Space space = tune::load_space(l.file.string(), std::nullopt);
      std::vector<std::string> dims;
      for (const auto& d : p.dims()) {
        const auto def = space.default_dims().find(d);
        dims.push_back(def == space.default_dims().end() ? "--" + d + " N" : fmt::format("--{} {}", d, def->second));
      }
      fmt::print("    dims: {}\n", fmt::join(dims, " "));
      if (!p.description().empty()) fmt::print("    {}\n", p.description());
    } catch (const std::exception& e) {
      fmt::print("    cannot be loaded: {}\n", e.what());
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  // The worker process (GPU work of a tune, see tune/worker_server.hpp): a hidden subcommand.
  if (argc > 1 && std::string(argv[1]) == tune::kWorkerCommand) return tune::run_worker(argc, argv);
  CLI::App app{"tune: autotune CUDA kernels for this GPU and shape, with evidence"};
  app.set_version_flag("--version", tune::tool_version() + " (" + tune::tool_git_commit() + ")");

  tune::TuneOptions opt;
  opt.command_line = joined_command_line(argc, argv);
  std::string out_dir = "results", header, config;
  app.add_option("--problem", opt.problem,
                 "problem to tune: a name (tune list shows them) or a problem folder; its dimensions are options: "
                 "--B 4 --N 64, a comma list sweeps (--N 64,256)");
  std::vector<std::string> problem_path;
  app.add_option("--problem-path", problem_path,
                 "folder of problem folders, searched before $TUNE_PROBLEM_PATH and the built-in problems (repeatable)");
  std::string sweep_file, shard_text;
  app.add_option("--sweep", sweep_file,
                 R"(sweep file: {"items": [{"problem": "contact", "B": [1, 4], "N": [64, 256]}, ...]}, instead of --problem)");
  app.add_option("--shard", shard_text,
                 "K/N: run part K of N (whole shapes of a sweep, or the variants of a single shape); "
                 "tune merge puts the parts together");
  std::string seed_text = std::to_string(opt.seed);
  app.add_option("--seed", seed_text, "seed of the inputs and parameters (0 to 2^64 - 1)")->capture_default_str();
  app.add_option("--out", out_dir, "results folder (results/<gpu>/<problem>/<shape>.json)")->capture_default_str();
  app.add_option("--header", header, "where to write the generated header (default: beside the JSON)");
  app.add_option("--config", config, "search-space file (default: the problem's own problem.json)");
  app.add_option("--jobs,-j", opt.jobs, "parallel NVRTC compiles, 1 to 1024 (default: all cores)");
  auto* device_opt = app.add_option("--device", opt.device, "CUDA device ordinal")->capture_default_str();
  std::string devices_text;
  bool replicate = false, transfer = false;
  app.add_option("--devices", devices_text,
                 "all, or a comma list of ordinals (0,2): one worker per device, taking the sweep's shapes from one "
                 "queue; compiles share --jobs; a device that fails hands its work to the others")
      ->excludes(device_opt);
  app.add_flag("--transfer", transfer,
               "in a sweep: each problem's shapes cheapest first (by its work counts), each tuned with --warm-start on "
               "the results of the earlier ones (and any --warm-start files); the first is tuned without");
  app.add_flag("--replicate", replicate,
               "with --devices: run every shape on every device (card-to-card comparisons; tune report shows the spread)");
  app.add_option("--arch", opt.arch, "compute capability to compile for when there is no device, e.g. 90")->capture_default_str();
  app.add_option("--top", opt.top_k, "variants re-measured strictly (in rounds of a block of samples each) before naming the winner")->capture_default_str();
  app.add_option("--budget", opt.budget,
                 "time a random sample of N valid configurations (drawn from --seed) plus the baseline, not all")
      ->check(CLI::Range(0, 1 << 30));
  app.add_option("--warm-start", opt.warm_start,
                 "results of other shapes of the problem (.json or .json.gz): time only the configurations within "
                 "--warm-keep of the best at the nearest of those shapes, --warm-explore others and the baseline")
      ->expected(1, -1);
  app.add_option("--warm-keep", opt.warm_keep,
                 "with --warm-start: a configuration within this ratio of the best there is promising (>= 1)")
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
      ->capture_default_str();
  app.add_option("--max-variants", opt.max_variants,
                 "the most variants a run compiles and times (after --budget and --shard); more is refused")
      ->check(CLI::Range(std::size_t{1}, std::numeric_limits<std::size_t>::max()))
      ->capture_default_str();
  app.add_option("--time-budget", opt.time_budget_s,
                 "stop compiling and measuring after SECONDS; the rest is recorded as skipped, a winner is still named");
  app.add_option_function<std::string>(
         "--search", [&opt](const std::string& mode) { opt.search = tune::search_mode_from_string(mode); },
         "exhaustive: time every variant with the search profile; halving: screen every variant cheaply, "
         "time the best third again; model: a surrogate (gradient-boosted trees, XGBoost) chooses what to "
         "compile next, from an initial design (or the --warm-start choice), round after round while it "
         "predicts a gain, then the local search of --warm-refine")
      ->check(CLI::IsMember(tune::search_mode_names()))
      ->default_str(tune::to_string(opt.search));
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
      ->check(CLI::Range(0.0, 0.99))
      ->capture_default_str();
  app.add_flag("--keep-spills", opt.keep_spills, "time variants that spill registers too (pruned by default)");
  app.add_flag("--compile-only", opt.compile_only, "compile every variant and record resources; time nothing");
  app.add_option("--variant-timeout", opt.variant_timeout_s,
                 "deadline of each variant in the worker process, in seconds; a variant past it is killed and "
                 "recorded as timeout (default: 10 s until the baseline is timed, then derived from its median, "
                 "at least 5 s)");
  app.add_flag("--resume", opt.resume,
               "continue the interrupted run recorded in <shape>.journal.jsonl beside the results (same device, "
               "sources, options, shape and seed, or it refuses and names the field); journaled variants are "
               "not measured again; without a journal, start a fresh run. A finished run removes its journal, an "
               "interrupted one keeps it");
  std::string cache_dir;
  app.add_option("--cache-dir", cache_dir, "compile cache directory (default: $XDG_CACHE_HOME/tune or ~/.cache/tune)");
  app.add_flag("--no-cache", opt.no_cache, "compile everything, neither reading nor writing the compile cache");
  app.add_option("--sanitize", opt.sanitize,
                 "the correctness gate's compute-sanitizer runs (memcheck, racecheck, synccheck, initcheck): on every "
                 "finalist, on the would-be winner only (and the next when it fails), or off; the finalists' outputs "
                 "are checked on more inputs and over many launches either way")
      ->check(CLI::IsMember({"off", "winner", "finalists"}))
      ->capture_default_str();

  tune::VerifyOptions vopt;
  auto* verify = app.add_subcommand("verify", "check the CPU reference (and, on a GPU, tuned variants) against golden files");
  verify->add_option("golden", vopt.golden, "golden JSON files (format of shared/golden)")->required()->check(CLI::ExistingFile);
  verify->add_option("--results", vopt.results_dir, "results folder to find the matching tune results in")->capture_default_str();
  verify->add_flag("--all", vopt.all, "check every variant of the matching results file, not just baseline and winner");
  verify->add_option("--device", vopt.device, "CUDA device ordinal")->capture_default_str();
  std::string verify_cache_dir;
  verify->add_option("--jobs,-j", vopt.jobs, "parallel NVRTC compiles, 1 to 1024 (default: all cores)")
      ->check(CLI::Range(1, 1024));
  verify->add_option("--cache-dir", verify_cache_dir,
                     "compile cache directory, shared with tune (default: $XDG_CACHE_HOME/tune or ~/.cache/tune)");
  verify->add_flag("--no-cache", vopt.no_cache, "compile everything, neither reading nor writing the compile cache");
  verify->add_option("--max-space", vopt.max_space,
                     "--all without a results file: the most configurations the problem's space is enumerated up to")
      ->check(CLI::Range(std::uint64_t{1}, std::numeric_limits<std::uint64_t>::max()))
      ->capture_default_str();
  verify->add_option("--max-variants", vopt.max_variants, "--all without a results file: the most valid configurations checked")
      ->check(CLI::Range(std::size_t{1}, std::numeric_limits<std::size_t>::max()))
      ->capture_default_str();
  verify->add_option("--sanitize", vopt.sanitize,
                     "the correctness gate's compute-sanitizer runs on the variants checked: finalists (all), winner, off")
      ->check(CLI::IsMember({"off", "winner", "finalists"}))
      ->capture_default_str();

  tune::ReportOptions ropt;
  auto* report = app.add_subcommand("report", "write report.md, report.html and charts comparing GPUs, shapes, "
                                              "baselines and floors (runs report/report.py)");
  report->add_option("results", ropt.results_dir, "results folder (<gpu>/<problem>/<shape>.json)")->required();
  report->add_option("-o,--out", ropt.out_dir, "output folder")->required();
  report->add_option("--peaks", ropt.peaks, "device peaks, JSON keyed by GPU slug (copy_gb_per_s, fp32_gflop_per_s)");
  report->add_option("--torch", ropt.torch, "torch baseline files (report/torch_baseline.py) besides RESULTS/<gpu>/");
  report->add_flag("--allow-synthetic", ropt.allow_synthetic,
                   "report results not measured on a GPU (fake GPU, compile-only), marked synthetic");

  std::vector<std::string> header_inputs;
  std::string header_out, header_config;
  auto* merge = app.add_subcommand("header", "merge result files of one problem (several GPUs and shapes) into one header");
  merge->add_option("results", header_inputs, "results JSON files written by tune")->required();
  merge->add_option("-o,--output", header_out, "the header to write")->required();
  merge->add_option("--config", header_config, "search-space file (default: the problem's own problem.json)");
  bool header_allow_synthetic = false;
  merge->add_flag("--allow-synthetic", header_allow_synthetic,
                  "merge results not measured on a GPU (fake GPU, TUNE_WORKER_FAKE), marked synthetic in the header");

  std::vector<std::string> export_inputs;
  std::string export_out, export_config;
  tune::TorchExportOptions xopt;
  int export_arch = 0;
  auto* export_cmd = app.add_subcommand("export", "ship results where their users live (export torch: a PyTorch extension)");
  export_cmd->require_subcommand(1);
  auto* export_torch = export_cmd->add_subcommand(
      "torch", "write a PyTorch extension project from results of one arch: one op per problem dispatching on (device, "
               "shape) to the tuned kernels, a ModelNew per problem, setup.py and a JIT load()");
  export_torch->add_option("results", export_inputs, "results JSON files written by tune (any problems, one arch)")->required();
  export_torch->add_option("-o,--out", export_out, "the folder to write the project into")->required();
  export_torch->add_option("--name", xopt.package, "the Python package and torch.ops namespace")->capture_default_str();
  export_torch->add_option("--arch", export_arch, "export only the results of this arch (needed when they span several)");
  export_torch->add_option("--config", export_config, "search-space file (default: each problem's own problem.json)");
  export_torch->add_flag("--allow-synthetic", xopt.allow_synthetic,
                         "export results not measured on a GPU (fake GPU), marked synthetic in the headers");

  std::vector<std::string> merge_inputs;
  std::string merge_out = "results", merge_config;
  auto* shard_merge = app.add_subcommand("merge", "combine the results of a --shard run's shards into the files the "
                                                  "unsharded run writes (results JSON, header of a timed run)");
  shard_merge->add_option("shards", merge_inputs, "the shards' result files or --out folders")->required();
  shard_merge->add_option("--out", merge_out, "results folder to write (<gpu>/<problem>/<shape>.json)")->capture_default_str();
  shard_merge->add_option("--config", merge_config, "search-space file for the header (default: the one the run used)");

  tune::CheckOptions copt;
  std::string check_results;
  auto* check = app.add_subcommand("check", "run the correctness gate (more inputs, determinism, compute-sanitizer) on "
                                            "variants of a result of record; exit 1 when one is unsafe or incorrect");
  check->add_option("results", check_results, "a results JSON written by tune")->required()->check(CLI::ExistingFile);
  check->add_option("--variant", copt.variants, "a variant by name (repeatable; default: the winner)");
  check->add_flag("--all-finalists", copt.all_finalists, "every variant re-measured strictly, and the baseline");
  check->add_flag("--write", copt.write, "write the verdicts (and a new winner) into the results file and its header");
  check->add_option("--sanitize", copt.sanitize, "compute-sanitizer runs: finalists (every variant checked), winner, off")
      ->check(CLI::IsMember({"off", "winner", "finalists"}))
      ->capture_default_str();
  check->add_option("--device", copt.device, "CUDA device ordinal")->capture_default_str();

  auto* list = app.add_subcommand("list", "list the problems found (--problem-path, $TUNE_PROBLEM_PATH, built-in): "
                                          "where each comes from, its dims and defaults");
  // Shape dimensions are the problem's: whatever is left after the known options.
  app.allow_extras();
  // A subcommand takes the main options too (tune list --problem-path DIR); what none of them knows
  // is refused below (only a tune takes shape options).
  for (auto* sub : {verify, report, merge, shard_merge, list, check, export_cmd, export_torch}) sub->fallthrough();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;  // --help and --version exit 0; every usage error is exit 2
  }

  auto log = [](const std::string& line) { fmt::print(stderr, "{}\n", line); };
  try {
    check_no_empty_values(app);
    tune::set_problem_path({problem_path.begin(), problem_path.end()});
    for (auto* sub : {verify, report, merge, shard_merge, list, check, export_torch})
      if (sub->parsed() && !app.remaining().empty())
        throw tune::InputError(fmt::format("tune {}: unexpected argument '{}' (tune {} --help lists its options)", sub->get_name(),
                                           app.remaining().front(), sub->get_name()));
    if (list->parsed()) {
      print_problem_list();
      return 0;
    }
    if (verify->parsed()) {
      if (vopt.device < 0)
        throw tune::InputError(fmt::format("--device {}: expected a CUDA device ordinal, 0 or more", vopt.device));
      if (!verify_cache_dir.empty()) vopt.cache_dir = verify_cache_dir;
      vopt.arch = opt.arch;
      vopt.log = log;
      return tune::run_verify(vopt) ? 0 : 1;
    }
    if (report->parsed()) return tune::run_report(ropt);
    if (check->parsed()) {
      if (copt.variants.size() > 0 && copt.all_finalists)
        throw tune::InputError("tune check: give --variant NAME or --all-finalists, not both");
      if (copt.device < 0)
        throw tune::InputError(fmt::format("--device {}: expected a CUDA device ordinal, 0 or more", copt.device));
      copt.results = check_results;
      copt.log = log;
      return tune::run_check(copt) ? 0 : 1;
    }
    if (merge->parsed()) {
      std::optional<std::filesystem::path> space_file;
      if (!header_config.empty()) space_file = header_config;
      const std::vector<std::filesystem::path> files(header_inputs.begin(), header_inputs.end());
      tune::write_file_atomic(header_out, tune::merge_result_files(files, space_file, header_allow_synthetic));
      fmt::print("header: {} ({} result files)\n", header_out, files.size());
      return 0;
    }
    if (export_torch->parsed()) {
      if (export_arch < 0) throw tune::InputError(fmt::format("--arch {}: expected a compute capability such as 90", export_arch));
      if (export_arch > 0) xopt.arch = export_arch;
      if (!export_config.empty()) xopt.config = export_config;
      const std::vector<std::filesystem::path> files(export_inputs.begin(), export_inputs.end());
      const auto written = tune::export_torch(files, export_out, xopt);
      fmt::print("export: {} files under {} (pip install --no-build-isolation {}, or import {} from there)\n", written.size(),
                 export_out, export_out, xopt.package);
      return 0;
    }
    if (shard_merge->parsed()) {
      std::optional<std::filesystem::path> space_file;
      if (!merge_config.empty()) space_file = merge_config;
      const std::vector<std::filesystem::path> inputs(merge_inputs.begin(), merge_inputs.end());
      const auto written = tune::merge_shards(inputs, merge_out, space_file, log);
      fmt::print("merged: {} files under {}\n", written.size(), merge_out);
      std::fflush(stdout);
      bool nothing_passed = false;
      for (const auto& f : written)
        if (f.extension() == ".json") nothing_passed = say_nothing_passed(tune::read_result(f), f) || nothing_passed;
      return nothing_passed ? kNothingPassed : 0;
    }
    check_options(app, opt, seed_text);
    const auto lists = shape_lists(app.remaining());
    std::vector<tune::SweepItem> items;
    if (!sweep_file.empty()) {
      if (!opt.problem.empty() || !lists.empty()) {
        fmt::print(stderr, "tune: --sweep lists the problems and shapes; leave out --problem and the dimension options\n");
        return 2;
      }
      items = tune::load_sweep_file(sweep_file);
    } else {
      if (opt.problem.empty()) {
        fmt::print(stderr, "tune: --problem is required (try: tune --problem contact --B 4 --N 64)\n");
        return 2;
      }
      items = tune::expand_dims(opt.problem, lists);
    }
    const tune::ShardSpec shard = shard_text.empty() ? tune::ShardSpec{} : tune::parse_shard(shard_text);
    opt.out_dir = out_dir;
    if (!header.empty()) opt.header = header;
    if (!config.empty()) opt.config = config;
    if (!cache_dir.empty()) opt.cache_dir = cache_dir;
    opt.log = log;
    opt.line_width = terminal_width(STDERR_FILENO);
    if (replicate && devices_text.empty()) {
      fmt::print(stderr, "tune: --replicate runs each shape on every device of --devices; add --devices all or a list\n");
      return 2;
    }
    std::vector<tune::SweepDevice> devices;
    if (!devices_text.empty()) {
      const tune::DeviceSelection selection = tune::parse_devices(devices_text);
      if (opt.compile_only) log("--compile-only: nothing is timed, so the sweep runs once, not per device");
      else devices = tune::resolve_devices(selection, opt.arch);
      if (devices.empty() && !opt.compile_only)
        log("--devices all: no CUDA device; running the compile-only sweep once");
      if (opt.header && devices.size() > 1) {
        fmt::print(stderr, "tune: --header names one file, but {} devices write results; leave it out (each header is "
                           "written beside its results)\n", devices.size());
        return 2;
      }
    }
    if (items.size() == 1 && shard.count == 1 && devices.empty()) {
      opt.problem = items.front().problem;
      opt.dims = items.front().dims;
      const tune::TuneOutcome outcome = tune::run_tune(opt);
      const bool nothing_passed = print_summary(outcome);
      if (outcome.run.context.interrupted) return interrupted_exit_code();
      return nothing_passed ? kNothingPassed : 0;
    }
    if (opt.header && items.size() > 1) {
      fmt::print(stderr, "tune: --header names one file, but the sweep has {} shapes; leave it out (each header is "
                         "written beside its results)\n", items.size());
      return 2;
    }
    if (items.size() > 1) tune::validate_sweep(items, opt.config);
    if (transfer) {
      // Each shape learns from the ones before it: one sequence, on one device, choosing its variants itself.
      const char* clash = !devices.empty() ? "--devices (the shapes run side by side there)"
                          : shard.count > 1 ? "--shard (a shard does not see the others' results)"
                          : opt.budget > 0  ? "--budget (the warm start chooses the variants)"
                                            : nullptr;
      if (clash) {
        fmt::print(stderr, "tune: --transfer tunes the sweep's shapes in one sequence; leave out {}\n", clash);
        return 2;
      }
      items = tune::order_for_transfer(items, opt.config);
      log(fmt::format("transfer: {} shapes, cheapest first per problem: {}", items.size(),
                      fmt::join(items | std::views::transform([](const tune::SweepItem& i) { return i.describe(); }), "; ")));
    }
    const auto work = tune::plan_sweep(items, shard, tune::sweep_run_key(opt, items));
    if (shard.count > 1)
      log(fmt::format("shard {}/{}: {} of the sweep's {} items{}", shard.index, shard.count, work.size(), items.size(),
                      items.size() == 1 ? " (one shape: its variants are split)" : ""));
    bool interrupted = false, nothing_passed = false;
    if (!devices.empty()) {
      for (const auto& d : devices)
        log(fmt::format("{} -> {}/{}/", tune::describe_device(d.info), out_dir, d.dir));
      const auto t0 = std::chrono::steady_clock::now();
      const auto result = tune::run_sweep_on_devices(
          work, opt, devices, replicate,
          [&](const tune::SweepWork& w, const tune::SweepDevice& d, const tune::TuneOutcome& outcome) {
            fmt::print("\n== sweep item {} of {} on device {}: {}", w.index + 1, items.size(), d.info.ordinal,
                       w.item.describe());
            nothing_passed = print_summary(outcome) || nothing_passed;
          });
      fmt::print("\nsweep: {} {} run on {} devices in {:.1f} s{}{}\n", result.ran, replicate ? "item runs" : "items",
                 devices.size(), std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
                 result.failed.empty() ? std::string() : fmt::format("; failed: device {}", fmt::join(result.failed, ", ")),
                 result.not_run ? fmt::format("; {} not run", result.not_run) : std::string());
      return result.interrupted ? interrupted_exit_code() : nothing_passed ? kNothingPassed : 0;
    }
    const auto t_sweep = std::chrono::steady_clock::now();
    const std::size_t ran = tune::run_sweep(
        work, opt,
        [&](const tune::SweepWork& w, const tune::TuneOutcome& outcome) {
          fmt::print("\n== sweep item {} of {}: {}", w.index + 1, items.size(), w.item.describe());
          nothing_passed = print_summary(outcome) || nothing_passed;
          interrupted = interrupted || outcome.run.context.interrupted;
        },
        transfer);
    fmt::print("\nsweep: {} of {} items run in {:.1f} s{}{}\n", ran, items.size(),
               std::chrono::duration<double>(std::chrono::steady_clock::now() - t_sweep).count(),
               transfer ? " (with --transfer)" : "",
               shard.count > 1 ? fmt::format(" by shard {}/{}; combine the shards with tune merge", shard.index, shard.count)
                               : std::string());
    return interrupted ? interrupted_exit_code() : nothing_passed ? kNothingPassed : 0;
  } catch (const tune::InputError& e) {
    fmt::print(stderr, "tune: {}\n", e.what());
    return 2;
  } catch (const tune::DeviceError& e) {
    fmt::print(stderr, "tune: {}\n", e.what());
    return 3;
  } catch (const std::exception& e) {
    fmt::print(stderr, "tune: internal error: {}\n", e.what());
    return 4;
  }
}

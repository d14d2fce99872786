// The subcommands: each one's options and its run. The help texts are docs/cli.md's.
#include "cli/subcommands.hpp"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "cli/summary.hpp"
#include "cli/tune_command.hpp"
#include "tune/errors.hpp"
#include "tune/export_nvrtc.hpp"
#include "tune/gate.hpp"
#include "tune/io.hpp"
#include "tune/problem.hpp"
#include "tune/report.hpp"
#include "tune/sweep.hpp"
#include "tune/tune.hpp"
#include "tune/verify.hpp"

namespace tune::cli {

namespace {

std::vector<std::filesystem::path> paths(const std::vector<std::string>& files) {
  return std::vector<std::filesystem::path>(files.begin(), files.end());
}

// An output that is one of the command's own inputs would be replaced by what is made of it (the
// results of a GPU run by their header): refused before anything is read.
void check_output_not_an_input(const std::string& command, const std::string& out, const std::vector<std::string>& inputs) {
  for (const auto& in : inputs) {
    std::error_code ec;
    if (std::filesystem::equivalent(out, in, ec))
      throw InputError(fmt::format("{}: -o {} is one of the results files it reads; name another file", command, out));
  }
}

std::optional<std::filesystem::path> optional_path(const std::string& file) {
  if (file.empty()) return std::nullopt;
  return file;
}

class VerifyCommand final : public Subcommand {
 public:
  VerifyCommand(CLI::App& root, const TuneOptions& main_options) : main_options_(main_options) {
    app_ = root.add_subcommand("verify", "check the CPU reference (and, on a GPU, tuned variants) against golden files");
    app_->add_option("golden", opt_.golden,
                     "golden JSON files (<problem folder>/golden/*.json: docs/problem-format.md, scripts/make_goldens.py)")
        ->required()
        ->check(CLI::ExistingFile);
    app_->add_option("--results", opt_.results_dir, "results folder to find the matching tune results in")
        ->capture_default_str();
    app_->add_flag("--all", opt_.all,
                   "golden parity on every variant of the matching results file, not just baseline and winner "
                   "(the gate still takes only those two)");
    app_->add_flag("--gate-all", opt_.gate_all,
                   "the correctness gate (more inputs, determinism, compute-sanitizer) on every variant whose parity "
                   "passed, not just baseline and winner: minutes per variant");
    add_device_option(*app_, opt_.device);
    app_->add_option("--jobs,-j", opt_.jobs, "parallel NVRTC compiles, 1 to 1024 (default: all cores)")
        ->check(CLI::Range(1, 1024));
    app_->add_option("--cache-dir", cache_dir_,
                     "compile cache directory, shared with tune (default: $XDG_CACHE_HOME/tune or ~/.cache/tune)");
    app_->add_flag("--no-cache", opt_.no_cache, "compile everything, neither reading nor writing the compile cache");
    add_limits();
    add_sanitize_option(*app_, opt_.sanitize,
                        "the correctness gate's compute-sanitizer runs on the variants gated: finalists (all of them), "
                        "winner, off");
  }

  int run(const Log& log) override {
    check_device_ordinal(opt_.device);
    if (!cache_dir_.empty()) opt_.cache_dir = cache_dir_;
    opt_.arch = main_options_.arch;  // the main --arch (a subcommand falls through to it)
    opt_.log = log;
    return run_verify(opt_) ? 0 : 1;
  }
  [[nodiscard]] std::vector<std::string> main_options_read() const override { return {"--arch"}; }

 private:
  void add_limits() {
    app_->add_option("--max-space", opt_.max_space,
                     "--all without a results file: the most configurations the problem's space is enumerated up to")
        ->transform(count_value())
        ->check(CLI::Range(std::uint64_t{1}, std::numeric_limits<std::uint64_t>::max()))
        ->capture_default_str();
    app_->add_option("--max-variants", opt_.max_variants,
                     "--all without a results file: the most valid configurations checked")
        ->transform(count_value())
        ->check(CLI::Range(std::size_t{1}, std::numeric_limits<std::size_t>::max()))
        ->capture_default_str();
  }

  const TuneOptions& main_options_;
  VerifyOptions opt_;
  std::string cache_dir_;
};

class ReportCommand final : public Subcommand {
 public:
  explicit ReportCommand(CLI::App& root) {
    app_ = root.add_subcommand("report",
                               "write report.md, report.html and charts comparing GPUs, shapes, "
                               "baselines and floors (runs report/report.py)");
    app_->add_option("results", opt_.results_dir, "results folder (<gpu>/<problem>/<shape>.json)")->required();
    app_->add_option("-o,--out", opt_.out_dir, "output folder")->required();
    app_->add_option("--peaks", opt_.peaks, "device peaks, JSON keyed by GPU slug (copy_gb_per_s, fp32_gflop_per_s)");
    app_->add_option("--torch", opt_.torch, "torch baseline files (report/torch_baseline.py) besides RESULTS/<gpu>/");
    app_->add_flag("--allow-synthetic", opt_.allow_synthetic,
                   "report results not measured on a GPU (fake GPU, compile-only) too, marked synthetic; without "
                   "it they are left out, and a line says which");
  }

  int run(const Log&) override { return run_report(opt_); }

 private:
  ReportOptions opt_;
};

class HeaderCommand final : public Subcommand {
 public:
  explicit HeaderCommand(CLI::App& root) {
    app_ = root.add_subcommand("header", "merge result files of one problem (several GPUs and shapes) into one header");
    app_->add_option("results", inputs_, "results JSON files written by tune")->required();
    app_->add_option("-o,--output", out_, "the header to write")->required();
    app_->add_option("--config", config_, "search-space file (default: the problem's own problem.json)");
    app_->add_flag("--allow-synthetic", allow_synthetic_,
                   "merge results not measured on a GPU (fake GPU, TUNE_WORKER_FAKE), marked synthetic in the header");
  }

  int run(const Log& log) override {
    check_output_not_an_input("tune header", out_, inputs_);
    const auto files = paths(inputs_);
    write_output_atomic(out_, merge_result_files(files, optional_path(config_), allow_synthetic_, log));
    fmt::print("header: {} ({} result files)\n", out_, files.size());
    return 0;
  }

 private:
  std::vector<std::string> inputs_;
  std::string out_, config_;
  bool allow_synthetic_ = false;
};

class ExportTorchCommand final : public Subcommand {
 public:
  explicit ExportTorchCommand(CLI::App& root) {
    group_ = root.add_subcommand("export",
                                 "ship results where their users live (export torch: a PyTorch extension; "
                                 "export nvrtc: what an NVRTC build of the finalists needs)");
    group_->require_subcommand(1);
    app_ = group_->add_subcommand(
        "torch",
        "write a PyTorch extension project from results of one arch: one op per problem dispatching on (device, "
        "shape) to the CUBINs the tune gated (compiled again and checked against each record), a ModelNew per "
        "problem, setup.py and a JIT load()");
    app_->add_option("results", inputs_, "results JSON files written by tune (any problems, one arch)")->required();
    app_->add_option("-o,--out", out_, "the folder to write the project into")->required();
    app_->add_option("--name", opt_.package, "the Python package and torch.ops namespace")->capture_default_str();
    app_->add_option("--arch", arch_,
                     "export only the results of this arch, e.g. 90 or sm_90 (needed when they span several)")
        ->transform(arch_value());
    app_->add_option("--config", config_, "search-space file (default: each problem's own problem.json)");
    app_->add_flag("--allow-synthetic", opt_.allow_synthetic,
                   "export results not measured on a GPU (fake GPU), marked synthetic in the headers");
  }
  // `export` itself, which only holds `torch`.
  [[nodiscard]] CLI::App* group() const { return group_; }

  int run(const Log&) override {
    if (arch_ < 0) throw InputError(fmt::format("--arch {}: expected a compute capability such as 90", arch_));
    if (arch_ > 0) opt_.arch = arch_;
    if (!config_.empty()) opt_.config = config_;
    const auto written = export_torch(paths(inputs_), out_, opt_);
    fmt::print("export: {} files under {} (pip install --no-build-isolation {}, or import {} from there)\n", written.size(),
               out_, out_, opt_.package);
    return 0;
  }

 private:
  CLI::App* group_ = nullptr;
  std::vector<std::string> inputs_;
  std::string out_, config_;
  TorchExportOptions opt_;
  int arch_ = 0;
};

// `tune export nvrtc`: the problem's sources as NVRTC gets them and each results file's compile
// options and finalists, as JSON for bench/embed_nvrtc.py (export_nvrtc). Under `export`.
class ExportNvrtcCommand final : public Subcommand {
 public:
  ExportNvrtcCommand(CLI::App& group, const TuneOptions& main_options) : main_options_(main_options) {
    app_ = group.add_subcommand(
        "nvrtc",
        "print as JSON what an NVRTC build of tuned kernels needs: the template and its headers as tune hands "
        "them to NVRTC, each results file's compile options and finalists with their launches and medians, "
        "and the files read (for a depfile)");
    app_->add_option("results", inputs_,
                     "results JSON files written by tune (one problem; none: the sources only, "
                     "of --problem)");
    app_->add_option("-o,--out", out_, "write the JSON to this file instead of stdout");
    app_->add_flag("--all-variants", all_variants_,
                   "also list every variant of each results file with its status and its kernels' name expressions "
                   "as tune lowers them now (tools/cubin_identity.py samples them)");
  }

  [[nodiscard]] std::vector<std::string> main_options_read() const override { return {"--problem"}; }

  // --problem (the main option): a name or a folder; default: the first results file's problem.
  int run(const Log& log) override {
    if (!out_.empty()) check_output_not_an_input("tune export nvrtc", out_, inputs_);
    const auto exported = export_nvrtc(paths(inputs_), main_options_.problem, all_variants_, log);
    if (out_.empty()) {
      fmt::print("{}\n", exported.dump());
      return 0;
    }
    write_output_atomic(out_, exported.dump() + "\n");
    fmt::print("export: {} ({} results files of {})\n", out_, inputs_.size(), exported.at("problem").get<std::string>());
    return 0;
  }

 private:
  const TuneOptions& main_options_;
  std::vector<std::string> inputs_;
  std::string out_;
  bool all_variants_ = false;
};

class MergeCommand final : public Subcommand {
 public:
  explicit MergeCommand(CLI::App& root) {
    app_ = root.add_subcommand("merge",
                               "combine the results of a --shard run's shards into the files the "
                               "unsharded run writes (results JSON, header of a timed run)");
    app_->add_option("shards", inputs_, "the shards' result files or --out folders")->required();
    app_->add_option("--out", out_, "results folder to write (<gpu>/<problem>/<shape>.json)")->capture_default_str();
    app_->add_option("--config", config_, "search-space file for the header (default: the one the run used)");
  }

  // Exit 5 when a merged timed run has no winner, as the unsharded run would.
  int run(const Log& log) override {
    const auto written = merge_shards(paths(inputs_), out_, optional_path(config_), log);
    fmt::print("merged: {} files under {}\n", written.size(), out_);
    std::fflush(stdout);
    bool nothing_passed = false;
    for (const auto& f : written)
      if (f.extension() == ".json") nothing_passed = say_nothing_passed(read_result(f), f) || nothing_passed;
    return nothing_passed ? kNothingPassed : 0;
  }

 private:
  std::vector<std::string> inputs_;
  std::string out_ = "results", config_;
};

class CheckCommand final : public Subcommand {
 public:
  explicit CheckCommand(CLI::App& root) {
    app_ = root.add_subcommand("check",
                               "run the correctness gate (more inputs, determinism, compute-sanitizer) on "
                               "variants of a result of record; exit 1 when one is unsafe or incorrect");
    app_->add_option("results", results_, "a results JSON written by tune")->required()->check(CLI::ExistingFile);
    app_->add_option("--variant", opt_.variants, "a variant by name (repeatable; default: the winner)");
    app_->add_flag("--all-finalists", opt_.all_finalists, "every variant re-measured strictly, and the baseline");
    app_->add_flag("--write", opt_.write, "write the verdicts (and a new winner) into the results file and its header");
    app_->add_flag("--fresh", opt_.fresh, "run every check again instead of reusing a cached verdict (issue 37)");
    add_sanitize_option(*app_, opt_.sanitize, "compute-sanitizer runs: finalists (every variant checked), winner, off");
    add_device_option(*app_, opt_.device);
  }

  int run(const Log& log) override {
    if (opt_.variants.size() > 0 && opt_.all_finalists)
      throw InputError("tune check: give --variant NAME or --all-finalists, not both");
    check_device_ordinal(opt_.device);
    opt_.results = results_;
    opt_.log = log;
    return run_check(opt_) ? 0 : 1;
  }

 private:
  CheckOptions opt_;
  std::string results_;
};

class ResultsCommand final : public Subcommand {
 public:
  explicit ResultsCommand(CLI::App& root) {
    app_ = root.add_subcommand("results",
                               "read result files as tune reads them: each validated, refused in one line "
                               "(exit 2) when not valid; --json prints the records for other readers");
    // Required unless --schema-doc: checked in run(), as CLI11 words it.
    app_->add_option("paths", inputs_, "results folders (<gpu>/<problem>/<shape>.json or .json.gz) or results files");
    app_->add_flag("--json", json_,
                   "print the validated records as JSON on stdout, with device_slug, shape_tag, the shape with its dtype "
                   "defaults and measured_on_gpu computed (docs/results-format.md)");
    app_->add_flag("--schema-doc", schema_doc_,
                   "print the results format's table (each field, its type and values), the one the validator walks, "
                   "as markdown (docs/results-format.md holds it)")
        ->excludes("paths")
        ->excludes("--json");
  }

  int run(const Log&) override {
    if (schema_doc_) {
      fmt::print("{}", result_schema_doc());
      return 0;
    }
    if (inputs_.empty()) throw InputError("paths is required (tune results --help lists the options)");
    const auto listing = results_listing(paths(inputs_));
    if (json_) {
      fmt::print("{}\n", listing.dump());
      return 0;
    }
    for (const auto& r : listing.at("records"))
      fmt::print("{}: {} {} on {}: valid\n", r.at("file").get<std::string>(), r.at("run").at("problem").get<std::string>(),
                 r.at("shape_tag").get<std::string>(),
                 r.at("device_slug").is_null() ? std::string("no device") : r.at("device_slug").get<std::string>());
    fmt::print("results: {} valid files\n", listing.at("records").size());
    return 0;
  }

 private:
  std::vector<std::string> inputs_;
  bool json_ = false;
  bool schema_doc_ = false;
};

// One shape of --problem from the shape options a `tune problem` subcommand was given (--B 3 ...):
// the subcommands take them themselves, so they are left out of check_no_extras.
struct ProblemAtShape {
  const Problem& problem;
  Shape shape;
  std::string described;
};
ProblemAtShape problem_at_shape(const CLI::App& root, const CLI::App& app, const TuneOptions& main_options,
                                const std::string& command) {
  if (main_options.problem.empty()) throw InputError(fmt::format("{}: --problem is required (a name or a folder)", command));
  std::vector<std::string> extras = root.remaining();
  for (const auto& e : app.remaining()) extras.push_back(e);
  const auto items = expand_dims(main_options.problem, shape_lists(extras));
  if (items.size() != 1)
    throw InputError(fmt::format("{}: {} shapes given; give one value per dimension", command, items.size()));
  const Problem& problem = find_problem(main_options.problem);
  return {problem, resolve_shape(problem, load_space(main_options.problem, std::nullopt), items.front().dims),
          items.front().describe()};
}

// `tune problem draw`: tune's data draw of a problem and shape as .npy files (draw_problem_data).
class ProblemDrawCommand final : public Subcommand {
 public:
  ProblemDrawCommand(CLI::App& root, const TuneOptions& main_options) : root_(root), main_options_(main_options) {
    group_ = root.add_subcommand("problem",
                                 "work with a problem folder (problem draw: the data tune draws; problem "
                                 "show: the problem as tune reads it at a shape)");
    group_->require_subcommand(1);
    app_ = group_->add_subcommand("draw",
                                  "write the tensors tune draws for --problem at a shape (--B 3 ...) as .npy "
                                  "files with index.json, for goldens and the torch baseline");
    app_->add_option("--seed", seed_text_, "seed of the draw")->capture_default_str();
    app_->add_option("--purpose", purpose_, "parity (with the problem's parity edits) or timing (plain inputs)")
        ->check(CLI::IsMember({"parity", "timing"}))
        ->capture_default_str();
    app_->add_option("--edge-case", request_.edge_case,
                     "draw this edge case of the problem instead (its names: "
                     "problem.json's edge cases)");
    app_->add_option("--out", out_, "folder to write index.json and the .npy files into")->required();
  }
  [[nodiscard]] CLI::App* group() const { return group_; }

  [[nodiscard]] std::vector<std::string> main_options_read() const override { return {"--problem"}; }

  int run(const Log&) override {
    if (main_options_.problem.empty()) throw InputError("tune problem draw: --problem is required (a name or a folder)");
    const auto r = std::from_chars(seed_text_.data(), seed_text_.data() + seed_text_.size(), request_.seed);
    if (seed_text_.empty() || r.ec != std::errc() || r.ptr != seed_text_.data() + seed_text_.size())
      throw InputError(
          fmt::format("--seed {}: expected an integer from 0 to {}", seed_text_, std::numeric_limits<std::uint64_t>::max()));
    request_.purpose = purpose_ == "timing" ? DataPurpose::kTiming : DataPurpose::kParity;
    const ProblemAtShape at = problem_at_shape(root_, *app_, main_options_, "tune problem draw");
    const auto index = draw_problem_data(at.problem, at.shape, request_, out_);
    fmt::print("draw: {} at {}: {}\n", at.problem.name(), at.described, index.string());
    return 0;
  }

 private:
  CLI::App& root_;
  const TuneOptions& main_options_;
  CLI::App* group_ = nullptr;
  std::string seed_text_ = "0", purpose_ = "parity", out_;
  DrawRequest request_;
};

// `tune problem show`: the problem as tune reads it at one shape (problem_facts), for the Python
// tools that would otherwise read problem.json a second time.
class ProblemShowCommand final : public Subcommand {
 public:
  ProblemShowCommand(CLI::App& root, CLI::App& group, const TuneOptions& main_options)
      : root_(root), main_options_(main_options) {
    app_ = group.add_subcommand("show",
                                "print --problem at a shape (--B 3 ...) as tune reads it: its folder, "
                                "reference, tensors with their dtypes and shapes, edge cases, tolerances");
    app_->add_flag("--json", json_, "print it as one JSON object (docs/cli.md) for other readers");
  }

  [[nodiscard]] std::vector<std::string> main_options_read() const override { return {"--problem"}; }

  int run(const Log&) override {
    const ProblemAtShape at = problem_at_shape(root_, *app_, main_options_, "tune problem show");
    const auto facts = problem_facts(at.problem, at.shape);
    if (json_) {
      fmt::print("{}\n", facts.dump());
      return 0;
    }
    fmt::print("{} at {} ({})\n", at.problem.name(), at.shape.describe(), facts.at("folder").get<std::string>());
    fmt::print("  reference: {}\n",
               facts.at("reference").is_null() ? std::string("built-in only") : facts.at("reference").get<std::string>());
    for (const auto& t : facts.at("tensors"))
      fmt::print("  {} {} {} [{}]\n", t.at("name").get<std::string>(), t.at("role").get<std::string>(),
                 t.at("dtype").get<std::string>(), fmt::join(t.at("shape").get<std::vector<std::int64_t>>(), ", "));
    const auto edge = facts.at("edge_cases").get<std::vector<std::string>>();
    fmt::print("  edge cases: {}\n", edge.empty() ? std::string("none") : fmt::format("{}", fmt::join(edge, ", ")));
    return 0;
  }

 private:
  CLI::App& root_;
  const TuneOptions& main_options_;
  bool json_ = false;
};

class ListCommand final : public Subcommand {
 public:
  explicit ListCommand(CLI::App& root) : root_(root) {
    app_ = root.add_subcommand("list",
                               "list the problems found (--problem-path, $TUNE_PROBLEM_PATH, built-in): "
                               "where each comes from, its dims and defaults");
  }

  int run(const Log&) override {
    check_problem_path();
    const auto found = list_problems();
    if (found.empty())
      fmt::print(
          "no problems found (pass --problem-path DIR or set TUNE_PROBLEM_PATH; an installed tune has the built-in "
          "ones in <prefix>/share/tune/configs)\n");
    for (const auto& l : found) {
      fmt::print("{}  ({}: {})\n", l.name, l.origin, l.file.parent_path().string());
      print_problem(l.name, l.file.string());
    }
    return 0;
  }

 private:
  // The problem's dims (with the space's defaults) and description, or why it cannot be loaded.
  static void print_problem(const std::string& folder, const std::string& file) {
    try {
      const Problem& p = find_problem(file);
      // --problem NAME finds a folder by its name and refuses it when the file names another problem.
      if (p.name() != folder) {
        fmt::print(
            "    not usable by name: names problem '{}' but its folder is '{}' (make the two agree, or pass the "
            "folder as --problem)\n",
            p.name(), folder);
        return;
      }
      const Space space = load_space(file, std::nullopt);
      std::vector<std::string> dims;
      for (const auto& d : p.dims()) {
        const auto def = space.default_dims().find(d);
        dims.push_back(def == space.default_dims().end() ? "--" + d + " N" : fmt::format("--{} {}", d, def->second));
      }
      for (const auto& v : p.dtype_variables()) {
        std::vector<std::string> names;
        for (const DType t : v.values) names.emplace_back(dtype_name(t));
        dims.push_back(v.default_value ? fmt::format("--{} {}", v.name, dtype_name(*v.default_value))
                                       : fmt::format("--{} {}", v.name, fmt::join(names, "|")));
        if (v.default_value) dims.back() += fmt::format(" ({})", fmt::join(names, "|"));
      }
      fmt::print("    dims: {}\n", fmt::join(dims, " "));
      if (!p.description().empty()) fmt::print("    {}\n", p.description());
    } catch (const std::exception& e) {
      fmt::print("    cannot be loaded: {}\n", e.what());
    }
  }

  // A --problem-path that is no folder lists nothing from it: refused (exit 2), not silent.
  void check_problem_path() const {
    for (const std::string& given : root_.get_option("--problem-path")->results())
      for (std::size_t pos = 0; pos <= given.size();) {  // a colon list (docs/problem-format.md)
        const auto colon = given.find(':', pos);
        const std::string dir = given.substr(pos, colon == std::string::npos ? std::string::npos : colon - pos);
        std::error_code ec;
        if (!dir.empty() && !std::filesystem::is_directory(dir, ec))
          throw InputError(fmt::format("--problem-path {}: no such folder; pass a folder that holds problem folders", dir));
        if (colon == std::string::npos) break;
        pos = colon + 1;
      }
  }

  const CLI::App& root_;
};

template <typename Command, typename... Args>
Command* add(Subcommands& subs, Args&&... args) {
  auto command = std::make_unique<Command>(std::forward<Args>(args)...);
  Command* raw = command.get();
  subs.owned.push_back(std::move(command));
  return raw;
}

}  // namespace

void check_main_options(const CLI::App& root, const Subcommand& sub) {
  std::vector<std::string> read = sub.main_options_read();
  read.insert(read.end(), {"--problem-path", "--reference-timeout"});
  for (const CLI::Option* o : root.get_options()) {
    if (o->count() == 0 || std::ranges::find(read, o->get_name()) != read.end()) continue;
    const std::string path = sub.app().get_parent() == &root
                                 ? sub.app().get_name()
                                 : sub.app().get_parent()->get_name() + " " + sub.app().get_name();
    throw InputError(
        fmt::format("tune {} does not take {} (an option of a tune run); leave it out (tune {} --help lists "
                    "its options)",
                    path, o->get_name(), path));
  }
}

Subcommands add_subcommands(CLI::App& root, const TuneOptions& main_options) {
  Subcommands subs;
  auto* verify = add<VerifyCommand>(subs, root, main_options);
  auto* report = add<ReportCommand>(subs, root);
  auto* header = add<HeaderCommand>(subs, root);
  auto* export_torch = add<ExportTorchCommand>(subs, root);
  auto* nvrtc = add<ExportNvrtcCommand>(subs, *export_torch->group(), main_options);
  auto* merge = add<MergeCommand>(subs, root);
  auto* check = add<CheckCommand>(subs, root);
  auto* list = add<ListCommand>(subs, root);
  auto* results = add<ResultsCommand>(subs, root);
  auto* draw = add<ProblemDrawCommand>(subs, root, main_options);
  auto* show = add<ProblemShowCommand>(subs, root, *draw->group(), main_options);
  // A subcommand takes the main options too (tune list --problem-path DIR); what none of them knows
  // is refused by check_no_extras (only a tune takes shape options).
  for (const auto& sub : subs.owned) sub->app().fallthrough();
  export_torch->group()->fallthrough();
  draw->group()->fallthrough();
  subs.checked = {verify, report, header, merge, list, check, export_torch, nvrtc, results};
  subs.dispatched = {list, verify, report, check, header, export_torch, nvrtc, merge, results, draw, show};
  return subs;
}

}  // namespace tune::cli

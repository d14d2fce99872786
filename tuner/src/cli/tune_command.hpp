#pragma once
// The main command: tune one shape, or a sweep of shapes (--sweep, comma lists, --devices, --shard).
// Its options are the main options, so the subcommands see them too (tune verify --arch 90).
#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/options.hpp"
#include "tune/tune.hpp"

namespace tune::cli {

// The main options as parsed; the strings become TuneOptions' fields once they are checked.
struct TuneArgs {
  TuneOptions opt;
  std::vector<std::string> problem_path;
  std::string out_dir = "results", header, config, cache_dir;
  std::string sweep_file, shard_text, devices_text;
  std::string seed_text;  // parsed in check_options: CLI11 wraps -1 into a seed
  bool replicate = false, transfer = false;
  double reference_timeout_s = 0;  // --reference-timeout; 0: not given
};

// The shape options: every `--NAME V[,V...]` (or `--NAME=V,...`) left after the known options, in
// order (tune, tune problem draw). Throws InputError for an argument that is none.
using ShapeLists = std::vector<std::pair<std::string, std::vector<std::int64_t>>>;
ShapeLists shape_lists(const std::vector<std::string>& extras);

// Registers the main options on `app`, in the order --help lists them. `args` must outlive `app`.
void add_tune_options(CLI::App& app, TuneArgs& args);

// Runs the tune or sweep the parsed options ask for; its exit code (docs/cli.md). Throws InputError
// for options that cannot be run together.
int run_tune_command(const CLI::App& app, TuneArgs& args, const Log& log);

}  // namespace tune::cli

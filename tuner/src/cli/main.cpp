// tune: the command line. It parses arguments and calls the library, nothing more: the main
// command (tune_command.cpp) and the subcommands (subcommands.cpp) register their options and run.
#include <exception>
#include <filesystem>
#include <string>
#include <system_error>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "cli/options.hpp"
#include "cli/subcommands.hpp"
#include "cli/summary.hpp"
#include "cli/tune_command.hpp"
#include "core/json_file.hpp"
#include "tune/errors.hpp"
#include "tune/io.hpp"
#include "tune/problem.hpp"
#include "tune/stop.hpp"
#include "tune/worker_protocol.hpp"
#include "tune/worker_server.hpp"

namespace {

using tune::cli::Log;

std::string joined_command_line(int argc, char** argv) {
  std::string s;
  for (int i = 0; i < argc; ++i) s += (i ? " " : "") + std::string(argv[i]);
  return s;
}

// The command's last line, on stderr. A stderr that went away (the tune command ignores SIGPIPE)
// leaves only the exit code to say it: the write's error must not end the process instead.
int error_line(const std::string& line, int code) {
  try {
    fmt::print(stderr, "tune: {}\n", line);
  } catch (const std::system_error&) {}
  return code;
}

// The parsed command: a subcommand when one was given, else the main tune/sweep.
int run_parsed(const CLI::App& app, tune::cli::TuneArgs& tune_args, const tune::cli::Subcommands& subs, const Log& log) {
  tune::cli::check_no_empty_values(app);
  tune::set_problem_path({tune_args.problem_path.begin(), tune_args.problem_path.end()});
  if (app.count("--reference-timeout") > 0)
    tune::set_reference_timeout(tune_args.reference_timeout_s);
  else
    (void)tune::reference_timeout_s();  // a bad $TUNE_REFERENCE_TIMEOUT is refused before anything runs
  for (const auto* sub : subs.checked) tune::cli::check_no_extras(app, sub->app());
  for (auto* sub : subs.dispatched)
    if (sub->app().parsed()) {
      tune::cli::check_main_options(app, *sub);
      return sub->run(log);
    }
  return tune::cli::run_tune_command(app, tune_args, log);
}

}  // namespace

int main(int argc, char** argv) {
  // The worker process (GPU work of a tune, see tune/worker_server.hpp): a hidden subcommand.
  if (argc > 1 && std::string(argv[1]) == tune::kWorkerCommand) return tune::run_worker(argc, argv);
  CLI::App app{"tune: autotune CUDA kernels for this GPU and shape, with evidence"};
  app.set_version_flag("--version", tune::tool_version() + " (" + tune::tool_git_commit() + ")");
  // Usage errors in one line, as every other error (before the subcommands, which copy it).
  app.failure_message(tune::cli::usage_error_line);
  tune::cli::TuneArgs tune_args;
  // Every record holds its command line in JSON, whose strings are UTF-8 (a byte that is not stopped
  // a run after planning, and `tune results --json`, with an internal error).
  for (int i = 1; i < argc; ++i)
    if (!tune::json_file::is_utf8(argv[i])) {
      fmt::print(stderr, "tune: argument {} ({}) is not UTF-8 text (each such byte shown as U+FFFD); rename the path\n", i,
                 tune::json_file::printable(argv[i]));
      return 2;
    }
  tune_args.opt.command_line = joined_command_line(argc, argv);
  tune::cli::add_tune_options(app, tune_args);
  const tune::cli::Subcommands subs = tune::cli::add_subcommands(app, tune_args.opt);
  // A dimension named like an option could not be given on the command line (issue 34 #10).
  tune::set_reserved_dimension_names(tune::cli::long_option_names(app));
  tune::cli::decimal_integers(app);
  // Shape dimensions are the problem's: whatever is left after the known options.
  app.allow_extras();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;  // --help and --version exit 0; every usage error is exit 2
  }
  // The exit codes of docs/cli.md: 2 bad input, 3 device error, 4 internal error.
  try {
    return run_parsed(app, tune_args, subs, tune::cli::stderr_log());
  } catch (const tune::InputError& e) {
    return error_line(e.what(), 2);
  } catch (const std::filesystem::filesystem_error& e) {  // a path given, or its folder: not writable, not a folder
    return error_line(fmt::format("{}: {}; check the path and its permissions", e.path1().string(), e.code().message()), 2);
  } catch (const tune::DeviceError& e) {
    return error_line(e.what(), 3);
  } catch (const tune::Interrupted& e) {  // Ctrl-C or SIGTERM before a shape's run measured anything
    return error_line(e.what(), tune::cli::interrupted_exit_code());
  } catch (const std::exception& e) {
    return error_line(fmt::format("internal error: {}", e.what()), 4);
  }
}

#pragma once
// tune's subcommands other than the main tune/sweep: verify, report, header, export torch, merge,
// check and list. Each registers its options on its own CLI::App and runs once it is parsed.
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/options.hpp"
#include "tune/tune.hpp"

namespace tune::cli {

class Subcommand {
 public:
  virtual ~Subcommand() = default;
  // The subcommand that runs (export torch: torch, not export).
  [[nodiscard]] CLI::App& app() const { return *app_; }
  // Its exit code (docs/cli.md); throws InputError, DeviceError as the library does.
  virtual int run(const Log& log) = 0;
  // The main command's options it reads besides those every command takes (--problem-path,
  // --reference-timeout): any other, given with it, is refused (check_main_options), not ignored.
  [[nodiscard]] virtual std::vector<std::string> main_options_read() const { return {}; }

 protected:
  CLI::App* app_ = nullptr;
};

// The subcommands registered on `root` in the order --help lists them. `main_options` are the main
// command's (verify takes its --arch) and must outlive them.
struct Subcommands {
  // In the order the commands are checked for leftover arguments (check_no_extras).
  std::vector<Subcommand*> checked;
  // In the order a parsed one is run (when several are given, the first of these runs).
  std::vector<Subcommand*> dispatched;
  std::vector<std::unique_ptr<Subcommand>> owned;
};
Subcommands add_subcommands(CLI::App& root, const TuneOptions& main_options);

// A main option given to a subcommand that does not read it (tune export nvrtc --config FILE) is
// refused in one line: CLI11 falls through to the main command, which would take it in silence.
void check_main_options(const CLI::App& root, const Subcommand& sub);

}  // namespace tune::cli

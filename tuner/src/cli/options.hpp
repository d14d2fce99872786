#pragma once
// What several of tune's commands share on the command line: the progress log, the --device and
// --sanitize options and their checks.
#include <functional>
#include <set>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "tune/sanitize_mode.hpp"

namespace tune::cli {

// Where a command's progress lines go: stderr, one per line.
using Log = std::function<void(const std::string&)>;
Log stderr_log();

// --device ORDINAL, "CUDA device ordinal" (tune, verify, check).
CLI::Option* add_device_option(CLI::App& app, int& device);
// Refuses a negative --device in one line (exit 2): CLI11 takes -1 as an int.
void check_device_ordinal(int device);

// --sanitize MODE (tune, verify, check): where the correctness gate runs compute-sanitizer, parsed
// into `mode` here (its default is the one --help shows); a value not among the modes is CLI11's
// one usage line, before any run.
CLI::Option* add_sanitize_option(CLI::App& app, SanitizeMode& mode, const std::string& description);

// Shape dimensions are the problem's, so the main command allows extras; a subcommand falls through
// to the main options (tune list --problem-path DIR) and refuses what is left over.
void check_no_extras(const CLI::App& root, const CLI::App& sub);

// The long names of every option of `app` and its subcommands, without the dashes (out, seed, help,
// ...): a problem's dimension may not take one, since its shape option would be that option.
std::set<std::string> long_option_names(const CLI::App& app);

// Every integer option of `app` and its subcommands reads its value as decimal digits (leading
// zeros dropped: "010" is 10); a hex or octal form is refused in one line.
void decimal_integers(CLI::App& app);

// The one line of a usage error CLI11 finds (an unknown --search, a missing argument): "tune: ...",
// and for a group without its subcommand (tune export onnx) the subcommands it has. The app's
// failure_message.
std::string usage_error_line(const CLI::App* app, const CLI::Error& e);

// A count (--max-space, --max-variants): decimal digits only, at most 2^64 - 1 (CLI11 would take -1
// as 2^64 - 1 and saturate past it), leading zeros dropped: register it with ->transform().
CLI::Validator count_value();
// A finite number: CLI::Range lets NaN through.
CLI::Validator finite_value();
// A compute capability as --arch takes it: 90, sm_90, sm90 or compute_90, each turned into 90 (a
// transform: add it with ->transform). A negative number passes, for check_arch to refuse.
CLI::Validator arch_value();

// An option given an empty value (--out '', --cache-dir '') means nothing, whatever the command:
// refused in one line rather than taken for the default.
void check_no_empty_values(const CLI::App& app);

}  // namespace tune::cli

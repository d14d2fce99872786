// The main command's run: checks the options, resolves the shapes and devices, then tunes one shape
// or runs the sweep (on one device in sequence, or on several side by side).
#include "cli/tune_command.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <ranges>
#include <utility>

#include <fmt/format.h>

#include "cli/summary.hpp"
#include "tune/compile.hpp"
#include "tune/devices.hpp"
#include "tune/errors.hpp"
#include "tune/sweep.hpp"

namespace tune::cli {

// The values of one shape option: an integer or a comma list of them.
static std::vector<std::int64_t> shape_values(const std::string& name, const std::string& text) {
  std::vector<std::int64_t> values;
  for (std::size_t pos = 0; pos <= text.size();) {
    const auto comma = text.find(',', pos);
    const std::string item = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    std::int64_t v = 0;
    if (const auto t = parse_dtype(item)) {  // a dtype variable's value (resolve_shape checks the name takes one)
      values.push_back(dtype_flag_value(*t));
      if (comma == std::string::npos) break;
      pos = comma + 1;
      continue;
    }
    const auto r = std::from_chars(item.data(), item.data() + item.size(), v);
    if (r.ec == std::errc::result_out_of_range && r.ptr == item.data() + item.size())
      throw InputError(
          fmt::format("--{} {}: '{}' is too large (a dimension is at most 9000000000000000)", name, text, item));
    if (item.empty() || r.ec != std::errc() || r.ptr != item.data() + item.size())
      throw InputError(
          fmt::format("--{} {}: '{}' is not an integer nor a dtype ({}) (an unknown option? tune --help "
                      "lists them; the problem's dimensions and dtype variables are shape options)",
                      name, text, item, dtype_choices()));
    values.push_back(v);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return values;
}

// The shape options: every `--NAME V[,V...]` (or `--NAME=V,...`) left after the known options.
// Which names are dimensions is the problem's to say (resolve_shape, expand_dims).
ShapeLists shape_lists(const std::vector<std::string>& extras) {
  ShapeLists out;
  for (std::size_t i = 0; i < extras.size(); ++i) {
    const std::string& t = extras[i];
    if (t.size() < 3 || t.compare(0, 2, "--") != 0)
      throw InputError(fmt::format("unexpected argument '{}' (shape dimensions are given as --NAME VALUE, e.g. --B 4)", t));
    std::string name = t.substr(2), text;
    if (const auto eq = name.find('='); eq != std::string::npos) {
      text = name.substr(eq + 1);
      name.resize(eq);
    } else if (i + 1 < extras.size()) {
      text = extras[++i];
    } else {
      throw InputError(fmt::format("--{} needs a value (an integer, or a comma list to sweep)", name));
    }
    std::vector<std::int64_t> values = shape_values(name, text);
    for (auto& [k, v] : out)
      if (k == name) throw InputError(fmt::format("--{} is given twice; give one comma list", name));
    out.emplace_back(name, std::move(values));
  }
  return out;
}

namespace {

// A tune's options that parse but cannot be run: refused in one line (exit 2) before anything runs.
void check_options(const CLI::App& app, TuneOptions& opt, const std::string& seed_text) {
  if (app.count("--arch") > 0) check_arch(opt.arch, fmt::format("--arch {}", opt.arch));
  // Parsed here: CLI11 wraps -1 and values past 2^64 - 1 into a seed.
  const auto r = std::from_chars(seed_text.data(), seed_text.data() + seed_text.size(), opt.seed);
  if (seed_text.empty() || r.ec != std::errc() || r.ptr != seed_text.data() + seed_text.size())
    throw InputError(
        fmt::format("--seed {}: expected an integer from 0 to {}", seed_text, std::numeric_limits<std::uint64_t>::max()));
  constexpr int kMaxJobs = 1024;  // threads of NVRTC compiles; far more than any machine's cores
  if (app.count("--jobs") > 0 && (opt.jobs < 1 || opt.jobs > kMaxJobs))
    throw InputError(
        fmt::format("--jobs {}: expected 1 to {} parallel compiles (leave it out for one per hardware "
                    "thread)",
                    opt.jobs, kMaxJobs));
  if (app.count("--max-space") > 0 && opt.max_space < 1)
    throw InputError("--max-space 0: expected at least 1 configuration to enumerate");
  if (opt.top_k < 0)
    throw InputError(fmt::format("--top {}: expected 0 or more variants to re-measure strictly", opt.top_k));
  check_device_ordinal(opt.device);
  for (const auto& [name, seconds] :
       {std::pair{"--time-budget", opt.time_budget_s}, std::pair{"--variant-timeout", opt.variant_timeout_s}})
    if (app.count(name) > 0 && !(std::isfinite(seconds) && seconds > 0))
      throw InputError(fmt::format("{} {}: expected a positive number of seconds", name, seconds));
}

// The columns of the terminal on fd (the progress lines fit them), 0 when fd is not a terminal.
std::size_t terminal_width(int fd) {
  winsize w{};
  if (!isatty(fd) || ioctl(fd, TIOCGWINSZ, &w) != 0) return 0;
  return w.ws_col > 0 ? w.ws_col : 80;
}

// The shapes to tune: the sweep file's, or --problem's with the shape options' lists expanded.
std::vector<SweepItem> sweep_items(const TuneArgs& args, const ShapeLists& lists) {
  if (!args.sweep_file.empty()) {
    if (!args.opt.problem.empty() || !lists.empty())
      throw InputError("--sweep lists the problems and shapes; leave out --problem and the dimension options");
    return load_sweep_file(args.sweep_file);
  }
  if (args.opt.problem.empty()) throw InputError("--problem is required (try: tune --problem contact --B 4 --N 64)");
  return expand_dims(args.opt.problem, lists);
}

// The checked strings into TuneOptions: where the results, header, space and cache are, the log.
void set_outputs(TuneArgs& args, const Log& log) {
  TuneOptions& opt = args.opt;
  opt.out_dir = args.out_dir;
  if (!args.header.empty()) opt.header = args.header;
  if (!args.config.empty()) opt.config = args.config;
  if (!args.cache_dir.empty()) opt.cache_dir = args.cache_dir;
  opt.log = log;
  opt.line_width = terminal_width(STDERR_FILENO);
}

// --devices resolved (none without it, and none for a compile-only sweep, which runs once).
std::vector<SweepDevice> sweep_devices(const TuneArgs& args, const Log& log) {
  if (args.replicate && args.devices_text.empty())
    throw InputError("--replicate runs each shape on every device of --devices; add --devices all or a list");
  std::vector<SweepDevice> devices;
  if (args.devices_text.empty()) return devices;
  const DeviceSelection selection = parse_devices(args.devices_text);
  if (args.opt.compile_only)
    log("--compile-only: nothing is timed, so the sweep runs once, not per device");
  else
    devices = resolve_devices(selection, args.opt.arch);
  if (devices.empty() && !args.opt.compile_only) log("--devices all: no CUDA device; running the compile-only sweep once");
  if (args.opt.header && devices.size() > 1)
    throw InputError(
        fmt::format("--header names one file, but {} devices write results; leave it out (each header is "
                    "written beside its results)",
                    devices.size()));
  return devices;
}

int run_one_shape(TuneOptions& opt, const SweepItem& item) {
  opt.problem = item.problem;
  opt.dims = item.dims;
  const TuneOutcome outcome = run_tune(opt);
  const int code = print_summary(outcome);
  if (outcome.run.context.interrupted) return interrupted_exit_code();
  return code;
}

// --transfer: the sweep's shapes in one sequence, cheapest first per problem.
std::vector<SweepItem> transfer_order(const TuneArgs& args, const std::vector<SweepItem>& items, const ShardSpec& shard,
                                      bool on_devices, const Log& log) {
  // Each shape learns from the ones before it: one sequence, on one device, choosing its variants itself.
  const char* clash = on_devices            ? "--devices (the shapes run side by side there)"
                      : shard.count > 1     ? "--shard (a shard does not see the others' results)"
                      : args.opt.budget > 0 ? "--budget (the warm start chooses the variants)"
                                            : nullptr;
  if (clash) throw InputError(fmt::format("--transfer tunes the sweep's shapes in one sequence; leave out {}", clash));
  auto ordered = order_for_transfer(items, args.opt.config);
  log(fmt::format("transfer: {} shapes, cheapest first per problem: {}", ordered.size(),
                  fmt::join(ordered | std::views::transform([](const SweepItem& i) { return i.describe(); }), "; ")));
  return ordered;
}

// The sweep's items side by side on --devices, one worker each.
int run_on_devices(const TuneArgs& args, const std::vector<SweepWork>& work, std::size_t item_count,
                   const std::vector<SweepDevice>& devices, const Log& log) {
  for (const auto& d : devices) log(fmt::format("{} -> {}/{}/", describe_device(d.info), args.out_dir, d.dir));
  int code = 0;  // the first item's that did not end well
  const auto t0 = std::chrono::steady_clock::now();
  const auto result = run_sweep_on_devices(work, args.opt, devices, args.replicate,
                                           [&](const SweepWork& w, const SweepDevice& d, const TuneOutcome& outcome) {
                                             fmt::print("\n== sweep item {} of {} on device {}: {}", w.index + 1, item_count,
                                                        d.info.ordinal, w.item.describe());
                                             const int item_code = print_summary(outcome);
                                             if (code == 0) code = item_code;
                                           });
  fmt::print("\nsweep: {} {} run on {} devices in {:.1f} s{}{}\n", result.ran, args.replicate ? "item runs" : "items",
             devices.size(), std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
             result.failed.empty() ? std::string() : fmt::format("; failed: device {}", fmt::join(result.failed, ", ")),
             result.not_run ? fmt::format("; {} not run", result.not_run) : std::string());
  return result.interrupted ? interrupted_exit_code() : code;
}

// The sweep's items one after the other, in this process.
int run_in_sequence(const TuneArgs& args, const std::vector<SweepWork>& work, std::size_t item_count,
                    const ShardSpec& shard) {
  bool interrupted = false;
  int code = 0;  // the first item's that did not end well
  const auto t_sweep = std::chrono::steady_clock::now();
  const std::size_t ran = run_sweep(
      work, args.opt,
      [&](const SweepWork& w, const TuneOutcome& outcome) {
        fmt::print("\n== sweep item {} of {}: {}", w.index + 1, item_count, w.item.describe());
        const int item_code = print_summary(outcome);
        if (code == 0) code = item_code;
        interrupted = interrupted || outcome.run.context.interrupted;
      },
      args.transfer);
  // A stop asked for between two shapes: the shapes after it were not run.
  interrupted = interrupted || (ran < work.size() && interrupt_signal() != 0);
  fmt::print("\nsweep: {} of {} items run in {:.1f} s{}{}\n", ran, item_count,
             std::chrono::duration<double>(std::chrono::steady_clock::now() - t_sweep).count(),
             args.transfer ? " (with --transfer)" : "",
             shard.count > 1 ? fmt::format(" by shard {}/{}; combine the shards with tune merge", shard.index, shard.count)
                             : std::string());
  return interrupted ? interrupted_exit_code() : code;
}

// Several shapes, a shard or several devices: the sweep's plan, then its run.
int run_sweep_command(const TuneArgs& args, std::vector<SweepItem> items, const ShardSpec& shard,
                      const std::vector<SweepDevice>& devices, const Log& log) {
  if (args.opt.header && items.size() > 1)
    throw InputError(
        fmt::format("--header names one file, but the sweep has {} shapes; leave it out (each header is "
                    "written beside its results)",
                    items.size()));
  if (items.size() > 1) validate_sweep(items, args.opt.config);
  if (args.transfer) items = transfer_order(args, items, shard, !devices.empty(), log);
  const auto work = plan_sweep(items, shard, sweep_run_key(args.opt, items));
  if (shard.count > 1)
    log(fmt::format("shard {}/{}: {} of the sweep's {} items{}", shard.index, shard.count, work.size(), items.size(),
                    items.size() == 1 ? " (one shape: its variants are split)" : ""));
  if (!devices.empty()) return run_on_devices(args, work, items.size(), devices, log);
  return run_in_sequence(args, work, items.size(), shard);
}

}  // namespace

int run_tune_command(const CLI::App& app, TuneArgs& args, const Log& log) {
  check_options(app, args.opt, args.seed_text);
  const std::vector<SweepItem> items = sweep_items(args, shape_lists(app.remaining()));
  const ShardSpec shard = args.shard_text.empty() ? ShardSpec{} : parse_shard(args.shard_text);
  set_outputs(args, log);
  const std::vector<SweepDevice> devices = sweep_devices(args, log);
  if (items.size() == 1 && shard.count == 1 && devices.empty()) return run_one_shape(args.opt, items.front());
  return run_sweep_command(args, items, shard, devices, log);
}

}  // namespace tune::cli

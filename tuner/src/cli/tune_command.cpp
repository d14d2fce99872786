// The main command's run: checks the options, hands the shapes, shard and devices as given to the
// library's one entry (run_tune_request: plans them once, runs them), and prints each shape's
// summary as it ends and the sweep's last line.
#include "cli/tune_command.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <mutex>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "cli/summary.hpp"
#include "tune/compile.hpp"
#include "tune/errors.hpp"
#include "tune/stop.hpp"
#include "tune/sweep_plan.hpp"

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
    // The few integers near INT64_MIN that carry a dtype's code (dtype_flag_value) are no dimension
    // either: said as written, not as the dtype the code would name.
    if (dtype_of_flag_value(v)) throw InputError(fmt::format("--{} must be a positive integer, got {}", name, item));
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

// A reader of tune's output that went away (`tune ... | head -1`, a closed terminal) ends no run: a
// SIGPIPE ended a sweep at its next line, mid-variant, its later shapes never run. SIGPIPE is ignored
// (every child gets its default back), and a line that cannot be written sends the rest of that
// stream to /dev/null; the results are written all the same.
template <class Print>
auto printed(std::FILE* stream, const Print& print) {
  try {
    return print();
  } catch (const std::system_error&) {  // fmt's failed write: EPIPE, EIO
    static std::mutex reopening;
    {
      const std::lock_guard lock(reopening);
      if (!std::freopen("/dev/null", "w", stream)) throw;
    }
    return print();
  }
}

// The checked strings into TuneOptions: where the results, header, space and cache are, the log.
void set_outputs(TuneArgs& args, const Log& log) {
  TuneOptions& opt = args.opt;
  opt.out_dir = args.out_dir;
  if (!args.header.empty()) opt.header = args.header;
  if (!args.config.empty()) opt.config = args.config;
  if (!args.cache_dir.empty()) opt.cache_dir = args.cache_dir;
  opt.log = [log](const std::string& line) { printed(stderr, [&] { log(line); }); };
  opt.line_width = terminal_width(STDERR_FILENO);
}

// Each shape's summary as its run ends; in a sweep, under a line that names it.
void print_item(const ItemDone& d) {
  if (d.plan.single()) return;
  if (d.device)
    fmt::print("\n== sweep item {} of {} on device {}: {}", d.work.index + 1, d.plan.items, d.device->info.ordinal,
               d.work.item.describe());
  else
    fmt::print("\n== sweep item {} of {}: {}", d.work.index + 1, d.plan.items, d.work.item.describe());
}

// At most four of `items`, then how many more: a line that names them stays one line.
std::string some_of(const std::vector<std::string>& items) {
  constexpr std::size_t kNamed = 4;
  if (items.size() <= kNamed) return fmt::format("{}", fmt::join(items, ", "));
  return fmt::format("{} and {} more", fmt::join(items.begin(), items.begin() + kNamed, ", "), items.size() - kNamed);
}

// The last line of a sweep a stop (Ctrl-C, SIGTERM) ended: which shapes are written whole, which in
// part, which not at all, and how to finish it. The shapes' own lines scrolled past above.
void print_interrupted_sweep(const TuneSweepOutcome& out) {
  const SweepPlan& p = out.plan;
  const SweepResult& r = out.result;
  const std::size_t items = p.work.size() * (p.replicate ? std::max<std::size_t>(p.devices.size(), 1) : 1);
  std::string line = fmt::format("sweep interrupted ({}) after {:.1f} s: {} of {} {} complete", interrupt_name(),
                                 out.seconds, r.ran - r.cut_short.size(), items, p.replicate ? "item runs" : "items");
  if (!r.cut_short.empty()) line += fmt::format("; cut short, partial results written: {}", some_of(r.cut_short));
  if (!r.not_started.empty()) line += fmt::format("; not run, nothing written: {}", some_of(r.not_started));
  if (!r.held.empty()) line += fmt::format("; skipped, another tune was writing them: {}", some_of(r.held));
  if (!r.unrunnable.empty()) line += fmt::format("; skipped, no variant can take them: {}", some_of(r.unrunnable));
  if (!r.failed.empty()) line += fmt::format("; failed: device {}", fmt::join(r.failed, ", "));
  fmt::print("\n{}; run the same command with --resume to finish the sweep\n", line);
}

// The sweep's last line: how many shapes ran, and how long it took.
void print_sweep_line(const TuneSweepOutcome& out) {
  const SweepPlan& p = out.plan;
  const SweepResult& r = out.result;
  if (p.single()) return;
  if (r.interrupted) return print_interrupted_sweep(out);
  if (!p.devices.empty()) {
    fmt::print("\nsweep: {} {} run on {} devices in {:.1f} s{}{}\n", r.ran, p.replicate ? "item runs" : "items",
               p.devices.size(), out.seconds,
               r.failed.empty() ? std::string() : fmt::format("; failed: device {}", fmt::join(r.failed, ", ")),
               r.not_run ? fmt::format("; {} not run", r.not_run) : std::string());
    return;
  }
  fmt::print("\nsweep: {} of {} items run in {:.1f} s{}{}\n", r.ran, p.items, out.seconds,
             p.transfer ? " (with --transfer)" : "",
             p.shard.count > 1
                 ? fmt::format(" by shard {}/{}; combine the shards with tune merge", p.shard.index, p.shard.count)
                 : std::string());
}

// The sweep's closing line of the shapes it skipped and why (none: nothing printed), on stderr: the
// run's exit code becomes 2 if nothing worse came before.
int print_skipped(const std::vector<std::string>& shapes, std::string_view why, std::string_view remedy, int code) {
  if (shapes.empty()) return code;
  std::fflush(stdout);
  printed(stderr, [&] {
    fmt::print(stderr, "tune: {} shape(s) skipped because {}: {}; {}\n", shapes.size(), why, fmt::join(shapes, ", "),
               remedy);
  });
  return code == 0 ? 2 : code;
}

}  // namespace

int run_tune_command(const CLI::App& app, TuneArgs& args, const Log& log) {
  std::signal(SIGPIPE, SIG_IGN);  // a closed output ends no run (printed)
  check_options(app, args.opt, args.seed_text);
  TuneRequest request{
      {}, args.sweep_file, shape_lists(app.remaining()), args.shard_text, args.devices_text, args.replicate, args.transfer};
  set_outputs(args, log);
  request.base = args.opt;
  int code = 0;  // the first shape's that did not end well
  const TuneSweepOutcome out = run_tune_request(request, [&code](const ItemDone& d) {
    const int item_code = printed(stdout, [&] {
      print_item(d);
      return print_summary(d.outcome);
    });
    if (code == 0) code = item_code;
  });
  printed(stdout, [&] { print_sweep_line(out); });
  if (out.result.interrupted) return interrupted_exit_code();  // its last line names the shapes skipped too
  // Last, so that they are not lost above the other shapes' summaries: the shapes left to run.
  code = print_skipped(out.result.held, "another tune was writing them",
                       "wait for it to finish, then run the same command with --resume (the shapes already complete "
                       "are not tuned again)",
                       code);
  code = print_skipped(out.result.unrunnable, "no variant of their space can take them (each said why above)",
                       "change or leave them out (the shapes already complete are not tuned again with --resume)", code);
  return code;
}

}  // namespace tune::cli

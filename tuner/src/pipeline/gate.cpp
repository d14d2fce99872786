// The correctness gate: output checks and compute-sanitizer runs on the finalists (tune/gate.hpp).
#include "tune/gate.hpp"

#include <cxxabi.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "core/subprocess.hpp"
#include "tune/errors.hpp"
#include "tune/measure.hpp"
#include "tune/problem.hpp"

namespace tune {

using Json = nlohmann::ordered_json;

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// compute-sanitizer's exit code when a tool reported errors (--error-exitcode).
constexpr int kSanitizerErrorExit = 86;
constexpr double kInitDeadlineS = 300, kGateDeadlineS = 300, kSanitizeDeadlineS = 600, kQuitDeadlineS = 120;
// Lines of a report kept in the record, and reports of one tool kept per variant (the rest are
// counted: a kernel with a defect in every block can have hundreds).
constexpr std::size_t kReportLines = 12;
constexpr std::size_t kFindingsPerTool = 8;

bool executable(const std::string& path) {
  std::error_code ec;
  return !path.empty() && std::filesystem::is_regular_file(path, ec) && access(path.c_str(), X_OK) == 0;
}

// compute-sanitizer --version answers at once; one that does not is not waited for.
constexpr double kVersionDeadlineS = 5;

// The "Version ..." of `path --version`: run without a shell (the path may hold any character) and
// with a deadline. "unknown" when it does not say, with *note saying why.
std::string sanitizer_version(const std::string& path, std::string* note) {
  ChildOptions o;
  o.argv = {path, "--version"};
  o.deadline_s = kVersionDeadlineS;
  o.keep_bytes = 16 * 1024;
  const ChildResult r = run_child(o);
  std::istringstream lines(r.out + "\n" + r.err);
  for (std::string line; std::getline(lines, line);)
    if (const auto at = line.find("Version "); at != std::string::npos && r.end != ChildEnd::kTimedOut)
      return line.substr(at + 8);
  *note = r.end == ChildEnd::kTimedOut ? fmt::format("{} --version gave no answer within {:.0f} s (killed)", path, kVersionDeadlineS)
          : r.end == ChildEnd::kNotStarted ? fmt::format("{} --version could not start ({})", path, std::strerror(r.error))
                                           : fmt::format("{} --version printed no \"Version\" line", path);
  return "unknown";
}

std::string slurp(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

std::string describe_loss(const FaultRecord& f) {
  const std::string phase = f.phase.empty() ? "" : " during " + f.phase;
  if (f.kind == FaultKind::kTimeout) return fmt::format("no answer within {:g} s{}", f.deadline_s, phase);
  if (f.kind == FaultKind::kSignal) return fmt::format("killed by {}{}", f.signal, phase);
  if (f.kind == FaultKind::kError) return fmt::format("failed{}: {}", phase, f.message);
  return fmt::format("exited with code {}{}", f.exit_code, phase);
}

const std::regex& mangled_name() {
  static const std::regex re("_Z[A-Za-z0-9_]+");
  return re;
}

}  // namespace

SanitizeMode sanitize_mode_from_string(const std::string& text) {
  if (text == "off") return SanitizeMode::kOff;
  if (text == "winner") return SanitizeMode::kWinner;
  if (text == "finalists") return SanitizeMode::kFinalists;
  throw InputError(fmt::format("--sanitize {}: expected off, winner or finalists", text));
}

std::string to_string(SanitizeMode mode) {
  switch (mode) {
    case SanitizeMode::kOff: return "off";
    case SanitizeMode::kWinner: return "winner";
    case SanitizeMode::kFinalists: return "finalists";
  }
  return "off";
}

SanitizerLocation find_sanitizer(bool fake) {
  SanitizerLocation s;
  if (const char* env = std::getenv("TUNE_SANITIZER"); env && *env) {
    if (executable(env)) s.path = env;
    else s.why_not = fmt::format("TUNE_SANITIZER={} is not an executable file", env);
  } else if (fake) {
    s.why_not = "a fake run (TUNE_WORKER_FAKE) runs only the compute-sanitizer $TUNE_SANITIZER names";
  } else {
    std::vector<std::string> dirs;
    if (const char* path = std::getenv("PATH"))
      for (std::string rest = path; !rest.empty();) {
        const auto colon = rest.find(':');
        dirs.push_back(rest.substr(0, colon));
        rest = colon == std::string::npos ? "" : rest.substr(colon + 1);
      }
    for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
      if (const char* v = std::getenv(var); v && *v) dirs.push_back(std::string(v) + "/bin");
    dirs.push_back("/usr/local/cuda/bin");
    for (const auto& d : dirs)
      if (!d.empty() && executable(d + "/compute-sanitizer")) {
        s.path = d + "/compute-sanitizer";
        break;
      }
    if (s.path.empty()) s.why_not = "compute-sanitizer is not on PATH, in $CUDA_HOME/bin or in /usr/local/cuda/bin";
  }
  if (!s.path.empty()) s.version = sanitizer_version(s.path, &s.version_note);
  return s;
}

std::string demangle_names(const std::string& text) {
  std::string out;
  auto begin = std::sregex_iterator(text.begin(), text.end(), mangled_name());
  std::size_t last = 0;
  for (auto it = begin; it != std::sregex_iterator(); ++it) {
    const std::string name = it->str();
    out += text.substr(last, static_cast<std::size_t>(it->position()) - last);
    int status = -1;
    std::unique_ptr<char, void (*)(void*)> d(abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), std::free);
    out += status == 0 && d ? std::string(d.get()) : name;
    last = static_cast<std::size_t>(it->position() + it->length());
  }
  return out + text.substr(last);
}

std::vector<SanitizerReport> parse_sanitizer_log(const std::string& tool, const std::string& text, int* summary_errors) {
  static constexpr std::string_view kPrefix = "=========";
  // Unindented lines that are not reports.
  static constexpr std::string_view kNotReports[] = {"COMPUTE-SANITIZER", "ERROR SUMMARY", "RACECHECK SUMMARY",
                                                     "LEAK SUMMARY", "Target application returned", "Program hit",
                                                     "This tool is deprecated"};
  if (summary_errors) *summary_errors = -1;
  std::vector<SanitizerReport> out;
  std::vector<std::string> raw;  // the report in hand, prefix stripped
  bool in_report = false;
  auto close = [&] {
    if (in_report && !raw.empty()) {
      SanitizerReport r;
      r.finding.tool = tool;
      std::string joined;
      for (std::size_t i = 0; i < raw.size(); ++i) {
        joined += raw[i] + "\n";
        if (i < kReportLines) r.finding.report.push_back(demangle_names(raw[i]));
      }
      r.finding.kind = r.finding.report.front();
      for (auto it = std::sregex_iterator(joined.begin(), joined.end(), mangled_name()); it != std::sregex_iterator(); ++it)
        if (std::find(r.kernels.begin(), r.kernels.end(), it->str()) == r.kernels.end()) r.kernels.push_back(it->str());
      out.push_back(std::move(r));
    }
    raw.clear();
    in_report = false;
  };
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.compare(0, kPrefix.size(), kPrefix) != 0) continue;  // the application's own output
    std::string body = line.substr(kPrefix.size());
    if (!body.empty() && body.front() == ' ') body.erase(0, 1);
    const bool blank = body.find_first_not_of(" \t") == std::string::npos;
    if (blank) {
      close();
      continue;
    }
    const bool indented = body.front() == ' ' || body.front() == '\t';
    if (indented) {
      if (in_report) raw.push_back(body.substr(body.find_first_not_of(" \t")));
      continue;
    }
    close();
    if (body.starts_with("ERROR SUMMARY:") && summary_errors) *summary_errors = std::atoi(body.c_str() + 14);
    const bool report =
        std::none_of(std::begin(kNotReports), std::end(kNotReports), [&](std::string_view p) { return body.starts_with(p); });
    if (report) {
      in_report = true;
      raw.push_back(body);
    }
  }
  close();
  return out;
}

double sanitizer_start_deadline_s() {
  constexpr double kDefault = 60;
  const char* env = std::getenv("TUNE_SANITIZER_START_S");
  if (!env || !*env) return kDefault;
  char* end = nullptr;
  const double s = std::strtod(env, &end);
  return end && *end == '\0' && std::isfinite(s) && s > 0 ? s : kDefault;
}

Gate::Gate(GateSettings settings, RunContext::Gate& ctx) : settings_(std::move(settings)), ctx_(ctx) {
  ctx_.mode = to_string(settings_.mode);
  ctx_.allow_unchecked = settings_.allow_unchecked;
  seeds_ = {parity_seed_of(settings_.seed + 1), parity_seed_of(settings_.seed + 2)};
  if (settings_.search_input) seeds_.insert(seeds_.begin(), parity_seed_of(settings_.seed));
  if (settings_.mode == SanitizeMode::kOff) {
    ctx_.note = "--sanitize off: no sanitizer runs; the finalists' outputs are checked (more inputs, determinism)";
    return;
  }
  sanitizer_ = find_sanitizer(settings_.fake);
  if (sanitizer_.path.empty()) {
    // A fake run (no kernel runs) has a sanitizer only where TUNE_SANITIZER names one. Anywhere else
    // a sanitizer that is wanted and missing leaves the finalists unchecked, never safe.
    const char* named = std::getenv("TUNE_SANITIZER");
    sanitizer_missing_ = !settings_.fake || (named && *named);
    ctx_.note = fmt::format("no compute-sanitizer ({}): the finalists' outputs are checked (more inputs, determinism) "
                            "but no sanitizer runs{}",
                            sanitizer_.why_not, sanitizer_missing_ ? ": they are unchecked" : "");
    if (settings_.log)
      settings_.log(fmt::format("gate: {}; install the CUDA toolkit's compute-sanitizer or set TUNE_SANITIZER, or pass "
                                "--sanitize off to say so",
                                ctx_.note));
    return;
  }
  ctx_.sanitizer = sanitizer_.path;
  ctx_.sanitizer_version = sanitizer_.version;
  if (!sanitizer_.version_note.empty() && settings_.log)
    settings_.log(fmt::format("gate: compute-sanitizer version unknown: {}", sanitizer_.version_note));
}

void Gate::check_outputs(const std::vector<WorkerItem>& items) {
  if (items.empty()) return;
  const auto t0 = Clock::now();
  FaultRecord fault;
  int culprit = -1;
  std::optional<Json> reply;
  bool input = false;  // the problem is at fault (exit 2), not the machine
  try {
    // No reference of the search's input (the determinism check compares bits) and no timing data.
    WorkerInit init{settings_.problem, settings_.shape, settings_.seed, settings_.device};
    init.reference = false;
    WorkerProcess worker(init);
    (void)worker.wait_ready(kInitDeadlineS);
    Json seeds = Json::array();
    for (const auto s : seeds_) seeds.push_back(s);
    // The gate's further inputs run the reference: a slow one is its own deadline's to stop.
    reply = worker.call("gate", items, {{"gate", {{"rounds", settings_.rounds}, {"seeds", seeds}}}},
                        std::max(kGateDeadlineS, reference_timeout_s() + 60), &fault, &culprit);
    input = worker.last_error_was_input();
  } catch (const std::exception& e) {
    input = dynamic_cast<const InputError*>(&e) != nullptr;
    fault = FaultRecord{FaultKind::kError, "", "", "start", 0, kInitDeadlineS, e.what()};
  }
  const double took = seconds_since(t0);
  if (reply) {
    const Json& records = reply->at("records");
    for (std::size_t i = 0; i < items.size(); ++i) {
      const VariantRecord back = variant_from_json(records.at(i));
      items[i].record->gate = back.gate;
      if (!items[i].record->gate) items[i].record->gate.emplace();
      items[i].record->gate->seconds += took / static_cast<double>(items.size());
      if (ctx_.inputs.empty())
        for (const auto& in : items[i].record->gate->inputs) ctx_.inputs.push_back(in.name);
      ctx_.launches = items[i].record->gate->launches;
      apply_verdict(*items[i].record);
    }
    return;
  }
  // The worker could not check them (its reference failed, ...): a problem of the run, not of a
  // variant, and never a verdict: they are `unchecked`. One item that killed its worker is that
  // variant's fault; several are checked alone.
  if (fault.kind == FaultKind::kError) {
    record_could_not_run("the output checks could not run: " + fault.message, input);
    for (const auto& it : items) {
      GateRecord& g = it.record->gate ? *it.record->gate : it.record->gate.emplace();
      g.not_run.push_back("outputs");
      g.seconds += took / static_cast<double>(items.size());
      apply_verdict(*it.record);
    }
    return;
  }
  if (items.size() > 1) {
    for (const auto& it : items) check_outputs({it});
    return;
  }
  GateRecord& g = items[0].record->gate.emplace();
  g.seconds = took;
  g.findings.push_back({"gate", "the output checks' worker process was " + describe_loss(fault), {}});
  apply_verdict(*items[0].record);
}

namespace {

// What one tool found on one item, once it ran on it.
struct ToolRun {
  bool ran = false;
  std::vector<SanitizerFinding> findings;
};

// What one sanitized worker process over some of the items ended with.
struct SanitizedRun {
  std::optional<Json> reply;
  FaultRecord fault;
  int culprit = -1;
  int code = -1;        // the worker's exit code, after a reply
  std::string log_text;  // the sanitizer's log
};

// One tool over the items, in sanitized workers: first all of them in one, then again alone those a
// finding, a lost worker or an unrun launch cannot be pinned on (each alone when none can be).
class ToolPass {
 public:
  // What a pass is doing, for the progress line.
  enum State { kQueued, kStarting, kRunning, kDone };

  ToolPass(std::string tool, const std::vector<WorkerItem>& items, const GateSettings& settings,
           const std::string& sanitizer, std::atomic<int>& logs, std::atomic<int>& state)
      : runs(items.size()), tool_(std::move(tool)), items_(items), settings_(settings), sanitizer_(sanitizer),
        logs_(logs), state_(state) {}

  void run_all() {
    std::vector<std::size_t> every(items_.size());
    for (std::size_t k = 0; k < every.size(); ++k) every[k] = k;
    attempt(every);
  }

  std::vector<ToolRun> runs;  // one per item
  std::string failure;        // why the tool could not run (empty: it ran)

 private:
  void attempt(const std::vector<std::size_t>& subset) {
    const std::optional<SanitizedRun> run = launch(subset);
    if (!run) return;
    std::vector<std::vector<SanitizerFinding>> found(subset.size());
    std::vector<std::size_t> again;
    bool unpinned = pin_reports(subset, *run, found);
    unpinned = pin_outcome(subset, *run, found, again) || unpinned;
    if (unpinned) {
      for (const std::size_t k : subset) attempt({k});
      return;
    }
    for (std::size_t k = 0; k < subset.size(); ++k) {
      if (std::find(again.begin(), again.end(), k) != again.end()) continue;
      runs[subset[k]].ran = true;
      for (auto& f : found[k]) runs[subset[k]].findings.push_back(std::move(f));
    }
    for (const std::size_t k : again) attempt({subset[k]});
  }

  WorkerInit init_for(const std::filesystem::path& log_file) const {
    WorkerInit init{settings_.problem, settings_.shape, settings_.seed, settings_.device};
    init.reference = false;
    init.launcher = {sanitizer_, "--tool", tool_, "--log-file", log_file.string(), "--demangle", "no",
                     "--print-limit", "100", "--error-exitcode", std::to_string(kSanitizerErrorExit),
                     "--target-processes", "application-only"};
    // memcheck sees a read past the end of a buffer only outside every allocation: a padding buffer
    // after each one makes the bytes behind it no other buffer's.
    if (tool_ == "memcheck") init.launcher.insert(init.launcher.end(), {"--padding", "65536"});
    init.sanitizer_tool = tool_;
    init.sanitizer_log = log_file.string();
    return init;
  }

  // The subset in one sanitized worker; nullopt (and `failure` set) when the worker did not start.
  std::optional<SanitizedRun> launch(const std::vector<std::size_t>& subset) {
    const auto log_file = std::filesystem::temp_directory_path() /
                          fmt::format("tune-gate-{}-{}-{}.log", getpid(), tool_, logs_++);
    std::vector<WorkerItem> sub;
    for (const std::size_t k : subset) sub.push_back(items_[k]);
    SanitizedRun run;
    {
      WorkerProcess worker(init_for(log_file));
      try {
        state_ = kStarting;
        (void)worker.wait_ready(sanitizer_start_deadline_s());
        state_ = kRunning;
      } catch (const std::exception& e) {
        // What the sanitizer said (its log), in a few words.
        std::string said;
        std::istringstream lines(slurp(log_file));
        for (std::string l; std::getline(lines, l) && said.size() < 400;)
          if (l.find_first_not_of("= ") != std::string::npos) said += (said.empty() ? "" : " | ") + l;
        failure = fmt::format("compute-sanitizer --tool {} could not start the worker: {}{}", tool_, e.what(),
                              said.empty() ? "" : " (it said: " + said + ")");
        std::error_code ec;
        std::filesystem::remove(log_file, ec);
        return std::nullopt;
      }
      run.reply = worker.call("sanitize", sub, Json::object(), kSanitizeDeadlineS, &run.fault, &run.culprit);
      if (run.reply) run.code = worker.quit(kQuitDeadlineS);
    }
    run.log_text = slurp(log_file);
    std::error_code ec;
    std::filesystem::remove(log_file, ec);
    return run;
  }

  // The log's reports, each on the item whose kernel it names; whether one could not be pinned.
  bool pin_reports(const std::vector<std::size_t>& subset, const SanitizedRun& run,
                   std::vector<std::vector<SanitizerFinding>>& found) const {
    int summary = -1;
    const auto reports = parse_sanitizer_log(tool_, run.log_text, &summary);
    bool unpinned = false;
    for (const auto& r : reports) {
      std::vector<std::size_t> hits;
      for (std::size_t k = 0; k < subset.size(); ++k) {
        const auto& names = items_[subset[k]].compiled->lowered_names;
        if (std::any_of(r.kernels.begin(), r.kernels.end(),
                        [&](const std::string& n) { return std::find(names.begin(), names.end(), n) != names.end(); }))
          hits.push_back(k);
      }
      if (hits.size() == 1) found[hits[0]].push_back(r.finding);
      else if (subset.size() == 1) found[0].push_back(r.finding);
      else unpinned = true;
    }
    if (reports.empty() && (summary > 0 || run.code == kSanitizerErrorExit)) {
      if (subset.size() != 1) return true;
      std::vector<std::string> tail;
      std::istringstream lines(run.log_text);
      for (std::string l; std::getline(lines, l);) tail.push_back(l);
      if (tail.size() > kReportLines) tail.erase(tail.begin(), tail.end() - kReportLines);
      found[0].push_back({tool_, fmt::format("{} reported {} error(s) in a form tune does not read (exit code {})", tool_,
                                             summary, run.code), tail});
    }
    return unpinned;
  }

  // A lost worker on its culprit (the others again, each alone), else each launch's own failure,
  // and the launches not run (again); whether the loss could not be pinned.
  bool pin_outcome(const std::vector<std::size_t>& subset, const SanitizedRun& run,
                   std::vector<std::vector<SanitizerFinding>>& found, std::vector<std::size_t>& again) const {
    if (!run.reply) {
      const std::string what = fmt::format("the worker process under {} was {}", tool_, describe_loss(run.fault));
      if (subset.size() == 1) {
        found[0].push_back({tool_, what, {}});
      } else if (run.culprit >= 0 && run.culprit < static_cast<int>(subset.size())) {
        found[static_cast<std::size_t>(run.culprit)].push_back({tool_, what, {}});
        for (std::size_t k = 0; k < subset.size(); ++k)
          if (static_cast<int>(k) != run.culprit) again.push_back(k);
      } else {
        return true;
      }
      return false;
    }
    const Json& results = run.reply->at("results");
    for (std::size_t k = 0; k < subset.size(); ++k) {
      const Json& r = results.at(k);
      if (r.contains("not_run")) again.push_back(k);
      else if (r.contains("error") && found[k].empty())
        found[k].push_back({tool_, fmt::format("the launch failed under {}: {}", tool_, r.at("error").get<std::string>()), {}});
    }
    return false;
  }

  std::string tool_;
  const std::vector<WorkerItem>& items_;
  const GateSettings& settings_;
  const std::string& sanitizer_;
  std::atomic<int>& logs_;
  std::atomic<int>& state_;
};

// The passes side by side, one thread each; every so often a line says which tools are still
// waiting for their worker to start and which are running, so a sanitizer that hangs is not silence.
void run_tool_passes(std::vector<ToolPass>& passes, std::vector<std::atomic<int>>& states, const GateSettings& settings) {
  std::atomic<std::size_t> done{0};
  {
    std::vector<std::jthread> threads;
    for (std::size_t t = 0; t < passes.size(); ++t)
      threads.emplace_back([&pass = passes[t], &state = states[t], &done, t] {
        try {
          pass.run_all();
        } catch (const std::exception& e) {
          pass.failure = fmt::format("compute-sanitizer --tool {} failed: {}", kSanitizerTools[t], e.what());
        }
        state = ToolPass::kDone;
        ++done;
      });
    const auto t0 = Clock::now();
    const double every = std::min(15.0, sanitizer_start_deadline_s() / 2);
    for (double next = every; done < passes.size(); std::this_thread::sleep_for(std::chrono::milliseconds(50))) {
      if (seconds_since(t0) < next || !settings.log) continue;
      next += every;
      std::vector<std::string> starting, running;
      for (std::size_t t = 0; t < passes.size(); ++t)
        if (states[t] != ToolPass::kDone) (states[t] == ToolPass::kRunning ? running : starting).push_back(kSanitizerTools[t]);
      settings.log(fmt::format("gate: {:.0f} s under compute-sanitizer: {}{}", seconds_since(t0),
                               starting.empty() ? "" : fmt::format("{} waiting for the worker to start (at most {:.0f} s); ",
                                                                   fmt::join(starting, ", "), sanitizer_start_deadline_s()),
                               running.empty() ? "none running" : fmt::format("{} running", fmt::join(running, ", "))));
    }
  }
}

}  // namespace

void Gate::sanitize(const std::vector<WorkerItem>& items) {
  if (items.empty() || !sanitizing()) return;
  const auto t0 = Clock::now();
  std::vector<std::atomic<int>> states(std::size(kSanitizerTools));
  std::vector<ToolPass> passes;
  passes.reserve(states.size());
  for (std::size_t t = 0; t < states.size(); ++t)
    passes.emplace_back(kSanitizerTools[t], items, settings_, sanitizer_.path, logs_, states[t]);
  // A tool that could not run in an earlier round is not waited for again: every item misses it.
  if (sanitizer_.path.empty())
    for (auto& pass : passes) pass.failure = fmt::format("no compute-sanitizer ({})", sanitizer_.why_not);
  else if (sanitizer_failed_)
    for (auto& pass : passes) pass.failure = "compute-sanitizer could not run in an earlier round";
  else
    run_tool_passes(passes, states, settings_);
  const double took = seconds_since(t0);
  for (std::size_t t = 0; t < passes.size(); ++t) {
    const std::string tool = kSanitizerTools[t];
    const std::string& failure = passes[t].failure;
    if (!failure.empty()) {
      sanitizer_failed_ = true;
      if (ctx_.note.find(failure) == std::string::npos) {
        ctx_.note += (ctx_.note.empty() ? "" : "; ") + failure;
        if (settings_.log) settings_.log("gate: " + failure + "; that tool is left out: the finalists are unchecked");
      }
      record_could_not_run(failure, false);
    } else if (std::find(ctx_.tools.begin(), ctx_.tools.end(), tool) == ctx_.tools.end()) {
      ctx_.tools.push_back(tool);
    }
    for (std::size_t k = 0; k < items.size(); ++k) {
      GateRecord& g = items[k].record->gate ? *items[k].record->gate : items[k].record->gate.emplace();
      if (!failure.empty() || !passes[t].runs[k].ran) {
        if (failure.empty())
          record_could_not_run(fmt::format("compute-sanitizer --tool {} did not run on {}", tool, items[k].record->name),
                               false);
        g.not_run.push_back(tool);
        continue;
      }
      g.tools.push_back(tool);
      auto& found = passes[t].runs[k].findings;
      for (std::size_t f = 0; f < found.size(); ++f) {
        if (f < kFindingsPerTool) g.findings.push_back(std::move(found[f]));
        else ++g.findings_left_out;
      }
    }
  }
  for (auto& it : items) {
    it.record->gate->seconds += took / static_cast<double>(items.size());
    apply_verdict(*it.record);
  }
}

void Gate::record_could_not_run(const std::string& why, bool input) {
  if (!ctx_.could_not_run.empty()) return;  // the first cause is the one to fix
  ctx_.could_not_run = why;
  could_not_run_input_ = input;
  if (settings_.log && why.starts_with("the output checks")) settings_.log("gate: " + why);
}

int Gate::could_not_run_exit_code() const {
  if (ctx_.could_not_run.empty()) return 0;
  return could_not_run_input_ ? 2 : 3;
}

void Gate::apply_verdict(VariantRecord& rec) {
  if (!rec.gate) return;
  GateRecord& g = *rec.gate;
  const GateRecord::Input* failed = nullptr;
  int failed_inputs = 0;
  for (const auto& in : g.inputs)
    if (!parity_passed(in.parity)) {
      if (!failed) failed = &in;
      ++failed_inputs;
    }
  if (!g.findings.empty()) {
    g.verdict = "unsafe";
    const auto& f = g.findings.front();
    const std::size_t more = g.findings.size() - 1 + static_cast<std::size_t>(g.findings_left_out);
    g.reason = fmt::format("{}: {}{}", f.tool, f.kind, more > 0 ? fmt::format(" (and {} more reports)", more) : "");
  } else if (!g.deterministic) {
    g.verdict = "unsafe";
    g.reason = "the output changed between launches: " + g.determinism;
  } else if (failed) {
    g.verdict = "incorrect";
    const ParityRecord& p = failed->parity;
    const std::string why = p.module_passed && p.rule != "tolerance"
                                ? parity_failure(p)
                                : fmt::format("{} of {} outputs outside atol={:g} rtol={:g}; max abs error {:.3g}",
                                              p.mismatches, p.elements, p.atol, p.rtol, p.max_abs_error);
    g.reason = fmt::format("parity failed on input '{}'{}: {}", failed->name,
                           failed_inputs > 1 ? fmt::format(" (and {} more inputs)", failed_inputs - 1) : "", why);
  } else if (!g.not_run.empty()) {
    // Nothing found, but not everything asked for was checked: never `safe` (issue 34).
    g.verdict = "unchecked";
    g.reason = fmt::format("{} could not run (context.gate.could_not_run says why); {} further input(s) passed; "
                           "sanitizers: {}",
                           fmt::join(g.not_run, ", "), g.inputs.size(),
                           g.tools.empty() ? "none ran" : fmt::format("{} clean", fmt::join(g.tools, ", ")));
  } else {
    g.verdict = "safe";
    g.reason = fmt::format("{} further input(s) passed; {}; sanitizers: {}", g.inputs.size(),
                           g.determinism.empty() ? "determinism not checked" : g.determinism,
                           g.tools.empty() ? "none ran" : fmt::format("{} clean", fmt::join(g.tools, ", ")));
  }
  // The status is the gate's to set while it is `passed` or one the gate set before.
  const bool gate_owned = rec.status == Status::kPassed || rec.reason.starts_with("gate: ");
  if (!gate_owned) return;
  if (g.verdict == "unsafe") {
    rec.status = Status::kUnsafe;
    rec.reason = "gate: " + g.reason;
  } else if (g.verdict == "incorrect") {
    rec.status = Status::kIncorrect;
    rec.reason = "gate: " + g.reason;
  }
}

void count_gated(const VariantRecord& rec, RunContext::Gate& ctx) {
  if (!rec.gate) return;
  ++ctx.gated;
  ctx.unsafe += rec.status == Status::kUnsafe;
  ctx.incorrect += rec.gate->verdict == "incorrect";
  ctx.unchecked += rec.gate->verdict == "unchecked";
}

}  // namespace tune

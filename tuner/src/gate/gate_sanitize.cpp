// The gate's compute-sanitizer passes on the finalists and their merge into the verdicts (tune/gate.hpp).
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
#include "gate/gate_common.hpp"
#include "tune/compile_cache.hpp"
#include "tune/errors.hpp"
#include "tune/hash.hpp"
#include "tune/measure.hpp"
#include "tune/problem.hpp"
#include "tune/worker_protocol.hpp"

namespace tune {

using Json = nlohmann::ordered_json;

using namespace gate_detail;

namespace {

std::string slurp(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

}  // namespace

namespace {

// What one tool found on one item, once it ran on it.
struct ToolRun {
  bool ran = false;
  std::vector<SanitizerFinding> findings;
};

// What one sanitized worker process over some of the items ended with.
struct SanitizedRun : WorkerAnswer<Json> {
  int code = -1;         // the worker's exit code, after a reply
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
      : runs(items.size()),
        tool_(std::move(tool)),
        items_(items),
        settings_(settings),
        sanitizer_(sanitizer),
        logs_(logs),
        state_(state) {}

  void run_all() {
    std::vector<std::size_t> every(items_.size());
    for (std::size_t k = 0; k < every.size(); ++k) every[k] = k;
    attempt(every);
  }

  [[nodiscard]] const std::string& tool() const { return tool_; }

  std::vector<ToolRun> runs;  // one per item
  std::string failure;        // why the tool could not run (empty: it ran)
  bool skipped = false;       // not started: the sanitizer had already failed to start a worker
  double seconds = 0;         // wall of its processes
  double start_s = 0;         // of which waiting for its workers to start
  std::vector<std::pair<std::string, double>> init_seconds;  // where its workers' inits spent theirs

 private:
  void attempt(const std::vector<std::size_t>& subset) {
    const std::optional<SanitizedRun> run = launch(subset);
    if (!run) return;
    if (std::string why = unread_end(*run); !why.empty()) {
      failure = std::move(why);  // its items did not run: the gate never takes such a run as clean
      return;
    }
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
    init.launcher = {sanitizer_,
                     "--tool",
                     tool_,
                     "--log-file",
                     log_file.string(),
                     "--demangle",
                     "no",
                     "--print-limit",
                     "100",
                     "--error-exitcode",
                     std::to_string(kSanitizerErrorExit),
                     "--target-processes",
                     "application-only"};
    // memcheck sees a read past the end of a buffer only outside every allocation: a padding buffer
    // after each one makes the bytes behind it no other buffer's.
    if (tool_ == "memcheck") init.launcher.insert(init.launcher.end(), {"--padding", "65536"});
    init.sanitizer_tool = tool_;
    init.sanitizer_log = log_file.string();
    if (tool_ != kLongPoleTool) init.nice = kBesideLongPoleNice;
    return init;
  }

  // The subset in one sanitized worker; nullopt (and `failure` set) when the worker did not start.
  std::optional<SanitizedRun> launch(const std::vector<std::size_t>& subset) {
    const auto log_file =
        std::filesystem::temp_directory_path() / fmt::format("tune-gate-{}-{}-{}.log", getpid(), tool_, logs_++);
    std::vector<WorkerItem> sub;
    for (const std::size_t k : subset) sub.push_back(items_[k]);
    SanitizedRun run;
    {
      WorkerProcess worker(init_for(log_file));
      try {
        state_ = kStarting;
        const auto t = Clock::now();
        (void)worker.wait_ready(sanitizer_start_deadline_s());
        start_s += seconds_since(t);
        for (const auto& [part, s] : worker.init_seconds()) init_seconds.emplace_back(part, s);
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
      static_cast<WorkerAnswer<Json>&>(run) = worker.call("sanitize", sub, Json::object(), kSanitizeDeadlineS);
      if (run.reply) run.code = worker.quit(kQuitDeadlineS);
    }
    run.log_text = slurp(log_file);
    std::error_code ec;
    std::filesystem::remove(log_file, ec);
    return run;
  }

  // Why a run that answered cannot be read as the sanitizer's verdict (empty: it can): its log holds
  // no summary (lost, never written, garbage, another tool's), or it ended other than by its own
  // clean or error exit (a signal, a kill at the quit deadline). The gate never fails open on one.
  [[nodiscard]] std::string unread_end(const SanitizedRun& run) const {
    if (!run.reply) return {};  // a lost worker is pinned on its culprit (pin_outcome)
    int summary = -1;
    (void)parse_sanitizer_log(tool_, run.log_text, &summary);
    if (summary < 0)
      return fmt::format("compute-sanitizer --tool {} left no summary in its log (exit code {}): its verdict cannot be read",
                         tool_, run.code);
    if (run.code != 0 && run.code != kSanitizerErrorExit)
      return fmt::format(
          "compute-sanitizer --tool {} ended with exit code {} (neither clean nor its error exit {}): its "
          "verdict cannot be trusted",
          tool_, run.code, kSanitizerErrorExit);
    return {};
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
      if (hits.size() == 1)
        found[hits[0]].push_back(r.finding);
      else if (subset.size() == 1)
        found[0].push_back(r.finding);
      else
        unpinned = true;
    }
    if (reports.empty() && (summary > 0 || run.code == kSanitizerErrorExit)) {
      if (subset.size() != 1) return true;
      std::vector<std::string> tail;
      std::istringstream lines(run.log_text);
      for (std::string l; std::getline(lines, l);) tail.push_back(l);
      if (tail.size() > kSanitizerReportLines) tail.erase(tail.begin(), tail.end() - kSanitizerReportLines);
      found[0].push_back(
          {tool_,
           fmt::format("{} reported {} error(s) in a form tune does not read (exit code {})", tool_, summary, run.code),
           tail});
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
      if (r.contains("not_run"))
        again.push_back(k);
      else if (r.contains("error") && found[k].empty())
        found[k].push_back(
            {tool_, fmt::format("the launch failed under {}: {}", tool_, r.at("error").get<std::string>()), {}});
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

// One pass: run, or skipped once the sanitizer has failed to start a worker (each other pass would
// wait the start deadline for the same answer).
void run_pass(ToolPass& pass, std::atomic<bool>& start_failed) {
  const auto t = Clock::now();
  if (start_failed) {
    pass.skipped = true;
    pass.failure =
        fmt::format("compute-sanitizer --tool {} was not started: it could not start a worker before", pass.tool());
    return;
  }
  try {
    pass.run_all();
  } catch (const std::exception& e) {
    pass.failure = fmt::format("compute-sanitizer --tool {} failed: {}", pass.tool(), e.what());
  }
  if (!pass.failure.empty()) start_failed = true;
  pass.seconds = seconds_since(t);
}

// The passes (one tool on one finalist each), at most `jobs` processes at once sharing the GPU;
// every so often a line says which are still waiting for their worker to start and which are
// running, so a sanitizer that hangs is not silence.
void run_tool_passes(std::vector<ToolPass>& passes, std::vector<std::atomic<int>>& states,
                     const std::vector<std::string>& labels, int jobs, const GateSettings& settings) {
  std::atomic<std::size_t> next{0}, done{0};
  std::atomic<bool> start_failed{false};
  std::vector<std::jthread> threads;
  for (std::size_t j = 0; j < std::min<std::size_t>(passes.size(), static_cast<std::size_t>(std::max(1, jobs))); ++j)
    threads.emplace_back([&] {
      for (std::size_t u = next++; u < passes.size(); u = next++) {
        run_pass(passes[u], start_failed);
        states[u] = ToolPass::kDone;
        ++done;
      }
    });
  const auto t0 = Clock::now();
  const double every = std::min(15.0, sanitizer_start_deadline_s() / 2);
  for (double next_line = every; done < passes.size(); std::this_thread::sleep_for(std::chrono::milliseconds(50))) {
    if (seconds_since(t0) < next_line || !settings.log) continue;
    next_line += every;
    std::vector<std::string> starting, running;
    for (std::size_t u = 0; u < passes.size(); ++u)
      if (states[u] == ToolPass::kStarting || states[u] == ToolPass::kRunning)
        (states[u] == ToolPass::kRunning ? running : starting).push_back(labels[u]);
    settings.log(fmt::format("gate: {:.0f} s under compute-sanitizer: {}{}", seconds_since(t0),
                             starting.empty() ? ""
                                              : fmt::format("{} waiting for the worker to start (at most {:.0f} s); ",
                                                            fmt::join(starting, ", "), sanitizer_start_deadline_s()),
                             running.empty() ? "none running" : fmt::format("{} running", fmt::join(running, ", "))));
  }
}

}  // namespace

struct Gate::SanitizeJob {
  std::vector<WorkerItem> items;
  std::vector<std::vector<ToolResult>> result;  // [tool][item]
  std::vector<std::vector<WorkerItem>> singles;
  std::vector<std::pair<std::size_t, std::size_t>> at;  // (tool, item) of each pass
  std::vector<std::atomic<int>> states;
  std::vector<ToolPass> passes;
  std::vector<std::string> labels;
  decltype(RunContext::Gate::cache_hits) cache_hits = 0;  // the context's before the lookups (a dropped job's are undone)
  decltype(RunContext::Gate::cache_misses) cache_misses = 0;
};

// One pass per check the cache does not answer, finalist by finalist (the fastest first).
std::unique_ptr<Gate::SanitizeJob> Gate::prepare_sanitize(const std::vector<WorkerItem>& items) {
  auto job = std::make_unique<SanitizeJob>();
  SanitizeJob& j = *job;
  j.items = items;
  j.cache_hits = ctx_.cache_hits;
  j.cache_misses = ctx_.cache_misses;
  const std::size_t tools = std::size(kSanitizerTools);
  j.result.assign(tools, std::vector<ToolResult>(items.size()));
  j.singles.reserve(tools * items.size());
  for (std::size_t k = 0; k < items.size(); ++k)
    for (std::size_t t = 0; t < tools; ++t)
      if (!(j.result[t][k].cached = lookup(kSanitizerTools[t], items[k]))) {
        j.singles.push_back({items[k]});
        j.at.emplace_back(t, k);
      }
  j.states = std::vector<std::atomic<int>>(j.at.size());
  j.passes.reserve(j.at.size());
  for (std::size_t u = 0; u < j.at.size(); ++u) {
    j.passes.emplace_back(kSanitizerTools[j.at[u].first], j.singles[u], settings_, sanitizer_.path, logs_, j.states[u]);
    j.labels.push_back(fmt::format("{} ({})", kSanitizerTools[j.at[u].first], items[j.at[u].second].record->name));
  }
  // A sanitizer that could not run in an earlier round is not waited for again.
  if (sanitizer_.path.empty())
    for (auto& pass : j.passes) pass.failure = fmt::format("no compute-sanitizer ({})", sanitizer_.why_not);
  else if (sanitizer_failed_)
    for (auto& pass : j.passes) pass.failure = "compute-sanitizer could not run in an earlier round";
  return job;
}

// The processes only: touches no state of the gate, so it runs beside the output checks.
void Gate::run_sanitize(SanitizeJob& j) const {
  if (!sanitizer_.path.empty() && !sanitizer_failed_) run_tool_passes(j.passes, j.states, j.labels, ctx_.jobs, settings_);
}

void Gate::merge_sanitize(SanitizeJob& j) {
  const std::size_t tools = std::size(kSanitizerTools);
  ctx_.checks += static_cast<int>(tools * j.items.size());
  for (std::size_t u = 0; u < j.at.size(); ++u) {
    ToolResult& r = j.result[j.at[u].first][j.at[u].second];
    const ToolPass& pass = j.passes[u];
    r.passed = true;
    r.ran = pass.runs[0].ran;
    r.findings = pass.runs[0].findings;
    r.failure = pass.failure;
    r.skipped = pass.skipped;
    r.seconds = pass.seconds;
    r.start_s = pass.start_s;
    for (const auto& [part, s] : pass.init_seconds)
      add_to(ctx_.parts_s, kSanitizerTools[j.at[u].first] + std::string(" start: ") + part, s);
  }
  for (std::size_t t = 0; t < tools; ++t) merge_tool(t, j.items, j.result[t]);
  for (auto& it : j.items) apply_verdict(*it.record);
}

void Gate::sanitize(const std::vector<WorkerItem>& items) {
  if (items.empty() || !sanitizing()) return;
  const auto job = prepare_sanitize(items);
  run_sanitize(*job);
  merge_sanitize(*job);
}

bool Gate::check_outputs_while_sanitizing(const std::vector<WorkerItem>& outputs, const std::vector<WorkerItem>& sanitized,
                                          const std::function<bool()>& keep) {
  if (sanitized.empty() || !sanitizing()) {
    check_outputs(outputs);
    return false;
  }
  const auto t0 = Clock::now();
  const auto job = prepare_sanitize(sanitized);
  double sanitizers_s = 0;
  {
    std::jthread beside([&] {
      const auto t = Clock::now();
      run_sanitize(*job);
      sanitizers_s = seconds_since(t);
    });
    check_outputs(outputs);
  }
  add_to(ctx_.parts_s, "overlap: outputs and sanitizers", seconds_since(t0));
  add_to(ctx_.parts_s, "overlap: sanitizers", sanitizers_s);
  if (keep()) {
    merge_sanitize(*job);
    return true;
  }
  ctx_.cache_hits = job->cache_hits;  // as if never asked: the serial order would not have
  ctx_.cache_misses = job->cache_misses;
  return false;
}

// One tool's results into the items' gates and the context, in item order: the output and the
// record are the same whichever pass finished first.
void Gate::merge_tool(std::size_t t, const std::vector<WorkerItem>& items, std::vector<ToolResult>& result) {
  const std::string tool = kSanitizerTools[t];
  std::string failure;  // the tool's first failure that says why, else its first skip
  bool skipped_failure = false;
  double seconds = 0, start_s = 0;
  bool ran = false;  // a process of this tool ran (not only cached verdicts)
  for (const auto& r : result) {
    seconds += r.seconds;
    start_s += r.start_s;
    ran = ran || r.passed;
    if (!r.failure.empty() && (failure.empty() || (!r.skipped && skipped_failure))) {
      failure = r.failure;
      skipped_failure = r.skipped;
    }
  }
  if (ran) add_tool_seconds(tool, seconds, start_s);
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
    if (result[k].cached) {
      g.tools.push_back(tool);
      g.cached.push_back(tool);
      for (auto& f : result[k].cached->findings) g.findings.push_back(std::move(f));
      g.findings_left_out += result[k].cached->findings_left_out;
      continue;
    }
    ToolResult& r = result[k];
    g.seconds += r.seconds;
    add_seconds(items[k].record->name, r.seconds);
    if (!r.failure.empty() || !r.ran) {
      if (r.failure.empty())
        record_could_not_run(fmt::format("compute-sanitizer --tool {} did not run on {}", tool, items[k].record->name),
                             false);
      g.not_run.push_back(tool);
      continue;
    }
    GateRecord verdict;  // what this tool found on it, for the cache
    auto& found = r.findings;
    for (std::size_t f = 0; f < found.size(); ++f) {
      if (f < kFindingsPerTool)
        verdict.findings.push_back(std::move(found[f]));
      else
        ++verdict.findings_left_out;
    }
    store(tool, items[k], verdict);
    g.tools.push_back(tool);
    g.findings.insert(g.findings.end(), verdict.findings.begin(), verdict.findings.end());
    g.findings_left_out += verdict.findings_left_out;
  }
}

void Gate::add_tool_seconds(const std::string& tool, double s, double start_s) {
  add_to(ctx_.tool_s, tool, s);
  add_to(ctx_.parts_s, tool + " start", start_s);
  add_to(ctx_.parts_s, tool + " run", std::max(0.0, s - start_s));
}

}  // namespace tune

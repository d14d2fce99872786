// The correctness gate: the verdict cache, the output checks and the verdicts on the finalists
// (tune/gate.hpp); the compute-sanitizer passes are in gate_sanitize.cpp.
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

double sanitizer_start_deadline_s() {
  constexpr double kDefault = 60;
  const char* env = std::getenv("TUNE_SANITIZER_START_S");
  if (!env || !*env) return kDefault;
  char* end = nullptr;
  const double s = std::strtod(env, &end);
  return end && *end == '\0' && std::isfinite(s) && s > 0 ? s : kDefault;
}

std::filesystem::path verdict_cache_for(bool no_cache, const std::optional<std::filesystem::path>& cache_dir) {
  if (no_cache) return {};
  return VerdictCache::beside(cache_dir ? *cache_dir : CompileCache::default_dir());
}

std::string describe_gate(const RunContext::Gate& gate) {
  if (gate.checks == 0) return {};
  std::string parts = fmt::format("outputs {:.1f} s (reference {:.1f} s)", gate.outputs_s, gate.reference_s);
  for (const auto& [tool, s] : gate.tool_s) parts += fmt::format(", {} {:.1f} s", tool, s);
  double starts = 0;  // the workers' starts, summed over processes (the rest: draws, launches, reports)
  for (const auto& [part, s] : gate.parts_s)
    if (part.ends_with(" start")) starts += s;
  if (starts > 0) parts += fmt::format(" (of these, {:.1f} s starting workers)", starts);
  const std::string cached = gate.cache.starts_with("off") ? "verdict cache off" : fmt::format("{} cached", gate.cache_hits);
  // A tune's (not tune check's) gate beside the PyTorch module's preparation: what it added.
  const std::string added =
      gate.share > 0 && gate.added_s < gate.wall_s - 0.05
          ? fmt::format("; beside the PyTorch module's preparation, it added {:.1f} s to the run", gate.added_s)
          : "";
  return fmt::format("gate {:.1f} s: {} finalist(s), {} checks ({}), {}{}{}", gate.wall_s, gate.finalist_s.size(),
                     gate.checks, cached, parts,
                     gate.jobs > 0 && !gate.tool_s.empty() ? fmt::format("; {} sanitizer processes at once", gate.jobs) : "",
                     added);
}

int gate_jobs() {
  constexpr int kDefault = 4, kMost = 64;
  const char* env = std::getenv("TUNE_GATE_JOBS");
  if (!env || !*env) return kDefault;
  char* end = nullptr;
  const long n = std::strtol(env, &end, 10);
  if (!end || *end != '\0' || n < 1 || n > kMost)
    throw InputError(
        fmt::format("TUNE_GATE_JOBS={}: expected a whole number of sanitizer processes from 1 to {}", env, kMost));
  return static_cast<int>(n);
}

Gate::Gate(GateSettings settings, RunContext::Gate& ctx) : settings_(std::move(settings)), ctx_(ctx) {
  find_tools();
  open_cache();
}

// Everything that decides a verdict beyond the variant's bytes and launches: the shape, the
// problem's data (its file: inits, edge cases, tolerance; its reference), the seeds, the test hooks
// of a fake run (they plant defects), and for the tools the sanitizer's version and options. A
// sanitizer that does not say its version caches nothing of its own.
void Gate::open_cache() {
  ctx_.fresh = settings_.fresh;
  ctx_.jobs = settings_.jobs > 0 ? settings_.jobs : gate_jobs();
  if (settings_.verdict_cache.empty()) {
    ctx_.cache = "off (--no-cache)";
    return;
  }
  try {
    const Problem& problem = find_problem(settings_.problem);
    const std::string data = content_hash({problem.json().dump(), problem.reference_identity(reference_backend_from_env())});
    const std::string hooks = fmt::format("{}", fmt::join(worker_test_hooks(), ";"));
    outputs_context_ = {settings_.shape.tag(), data, fmt::format("{}", fmt::join(seeds_, ",")),
                        std::to_string(settings_.rounds), hooks};
    if (!sanitizer_.path.empty() && sanitizer_.version != "unknown")
      tool_context_ = {settings_.shape.tag(), data, std::to_string(settings_.seed), hooks, sanitizer_.version};
    cache_.emplace(settings_.verdict_cache);
    ctx_.cache = cache_->dir().string();
  } catch (const std::exception& e) {
    ctx_.cache = fmt::format("off ({})", e.what());
    if (settings_.log) settings_.log("gate: no verdict cache: " + std::string(e.what()));
  }
}

std::string Gate::key_of(const std::string& check, const WorkerItem& item) const {
  if (!cache_) return {};
  const bool outputs = check == "outputs";
  if (!outputs && tool_context_.empty()) return {};
  std::vector<std::string> context = outputs ? outputs_context_ : tool_context_;
  if (check == "memcheck") context.push_back("--padding 65536");
  return VerdictCache::key(check, VerdictCache::variant_fields(*item.compiled, *item.lowered), context);
}

std::optional<GateRecord> Gate::lookup(const std::string& check, const WorkerItem& item) {
  const std::string key = key_of(check, item);
  if (key.empty()) return std::nullopt;
  std::optional<nlohmann::ordered_json> entry;
  if (!settings_.fresh) entry = cache_->load(key);
  // An entry of another check under this key, or an output verdict that does not name every seeded
  // input, is damaged: a miss, replaced by the store (a verdict that stopped short is checked again).
  if (entry && entry->value("check", "") != check) entry.reset();
  if (entry) {
    try {
      GateRecord v = gate_from_json(entry->at("verdict"));
      if (check == "outputs")
        for (const auto seed : seeds_)
          if (std::none_of(v.inputs.begin(), v.inputs.end(),
                           [&](const GateRecord::Input& in) { return in.name == fmt::format("seed {}", seed); }))
            throw std::invalid_argument("an output verdict without its seeded inputs");
      ++ctx_.cache_hits;
      return v;
    } catch (const std::exception&) {  // an entry of another shape: a miss, replaced by the store
    }
  }
  ++ctx_.cache_misses;
  return std::nullopt;
}

void Gate::store(const std::string& check, const WorkerItem& item, const GateRecord& verdict) {
  const std::string key = key_of(check, item);
  if (key.empty()) return;
  GateRecord v = verdict;
  v.cached.clear();
  const std::string failure =
      cache_->store(key, {{"check", check}, {"variant", item.record->name}, {"verdict", to_json(v)}});
  if (!failure.empty() && ctx_.note.find("verdict cache") == std::string::npos) {
    ctx_.note += (ctx_.note.empty() ? "" : "; ") + fmt::format("the verdict cache could not be written ({})", failure);
    if (settings_.log) settings_.log("gate: the verdict cache could not be written: " + failure);
  }
}

void Gate::add_seconds(const std::string& name, double s) { add_to(ctx_.finalist_s, name, s); }

void Gate::find_tools() {
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
    ctx_.note = fmt::format(
        "no compute-sanitizer ({}): the finalists' outputs are checked (more inputs, determinism) "
        "but no sanitizer runs{}",
        sanitizer_.why_not, sanitizer_missing_ ? ": they are unchecked" : "");
    if (settings_.log)
      settings_.log(
          fmt::format("gate: {}; install the CUDA toolkit's compute-sanitizer or set TUNE_SANITIZER, or pass "
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
  ctx_.checks += static_cast<int>(items.size());
  std::vector<WorkerItem> misses;
  for (const auto& it : items) {
    std::optional<GateRecord> v = lookup("outputs", it);
    if (!v) {
      misses.push_back(it);
      continue;
    }
    v->tools.clear();
    v->not_run.clear();
    v->seconds = 0;
    v->cached = {"outputs"};
    it.record->gate = std::move(*v);
    if (ctx_.inputs.empty())
      for (const auto& in : it.record->gate->inputs) ctx_.inputs.push_back(in.name);
    ctx_.launches = it.record->gate->launches;
    add_seconds(it.record->name, 0);
    apply_verdict(*it.record);
  }
  run_output_checks(misses);
}

void Gate::run_output_checks(const std::vector<WorkerItem>& items) {
  if (items.empty()) return;
  const auto t0 = Clock::now();
  WorkerAnswer<Json> answer;
  bool input = false;  // the problem is at fault (exit 2), not the machine
  try {
    // No reference of the search's input (the determinism check compares bits) and no timing data.
    WorkerInit init{settings_.problem, settings_.shape, settings_.seed, settings_.device};
    init.reference = false;
    const auto t_start = Clock::now();
    WorkerProcess worker(init);
    (void)worker.wait_ready(kInitDeadlineS);
    add_to(ctx_.parts_s, "outputs start", seconds_since(t_start));
    for (const auto& [part, s] : worker.init_seconds()) add_to(ctx_.parts_s, "outputs start: " + part, s);
    Json seeds = Json::array();
    for (const auto s : seeds_) seeds.push_back(s);
    // The gate's further inputs run the reference: a slow one is its own deadline's to stop.
    Json gate = {{"rounds", settings_.rounds}, {"seeds", seeds}};
    if (settings_.check_reference) gate["check_reference"] = true;
    // The reference of a checked repeat runs once more, after the further inputs' references.
    const double references = settings_.check_reference ? 2 : 1;
    answer = worker.call("gate", items, {{"gate", gate}}, std::max(kGateDeadlineS, references * reference_timeout_s() + 60));
    input = worker.last_error_was_input();
  } catch (const std::exception& e) {
    input = dynamic_cast<const InputError*>(&e) != nullptr;
    answer.fault = FaultRecord{FaultKind::kError, "", "", "start", 0, kInitDeadlineS, e.what()};
  }
  const std::optional<Json>& reply = answer.reply;
  const FaultRecord& fault = answer.fault;
  const double took = seconds_since(t0);
  ctx_.outputs_s += took;
  for (const auto& it : items) add_seconds(it.record->name, took / static_cast<double>(items.size()));
  if (reply && settings_.check_reference) {  // once: the reference repeated itself on this input
    settings_.check_reference = false;
    if (settings_.on_reference_repeated) settings_.on_reference_repeated();
  }
  if (reply) {
    ctx_.reference_s += reply->value("reference_s", 0.0);
    add_to(ctx_.parts_s, "outputs draw", reply->value("draw_s", 0.0));
    add_to(ctx_.parts_s, "outputs launches", reply->value("launches_s", 0.0));
    const Json& records = reply->at("records");
    for (std::size_t i = 0; i < items.size(); ++i) {
      const VariantRecord back = variant_from_json(records.at(i));
      items[i].record->gate = back.gate;
      if (!items[i].record->gate) items[i].record->gate.emplace();
      store("outputs", items[i], *items[i].record->gate);
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
    for (const auto& it : items) run_output_checks({it});
    return;
  }
  GateRecord& g = items[0].record->gate.emplace();
  g.seconds = took;
  g.findings.push_back({"gate", "the output checks' worker process was " + describe_loss(fault), {}});
  apply_verdict(*items[0].record);
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
    g.verdict = GateVerdict::kUnsafe;
    const auto& f = g.findings.front();
    const std::size_t more = g.findings.size() - 1 + static_cast<std::size_t>(g.findings_left_out);
    g.reason = fmt::format("{}: {}{}", f.tool, f.kind, more > 0 ? fmt::format(" (and {} more reports)", more) : "");
  } else if (!g.deterministic) {
    g.verdict = GateVerdict::kUnsafe;
    g.reason = "the output changed between launches: " + g.determinism;
  } else if (failed) {
    g.verdict = GateVerdict::kIncorrect;
    // The search's words for a failed parity, the count of outputs not finite included: without
    // it an input failed by NaNs alone read "max abs error 0".
    g.reason = fmt::format("parity failed on input '{}'{}: {}", failed->name,
                           failed_inputs > 1 ? fmt::format(" (and {} more inputs)", failed_inputs - 1) : "",
                           parity_failure(failed->parity));
  } else if (!g.not_run.empty()) {
    // Nothing found, but not everything asked for was checked: never `safe` (issue 34).
    g.verdict = GateVerdict::kUnchecked;
    g.reason = fmt::format(
        "{} could not run (context.gate.could_not_run says why); {} further input(s) passed; "
        "sanitizers: {}",
        fmt::join(g.not_run, ", "), g.inputs.size(),
        g.tools.empty() ? "none ran" : fmt::format("{} clean", fmt::join(g.tools, ", ")));
  } else {
    g.verdict = GateVerdict::kSafe;
    g.reason = fmt::format("{} further input(s) passed; {}; sanitizers: {}", g.inputs.size(),
                           g.determinism.empty() ? "determinism not checked" : g.determinism,
                           g.tools.empty() ? "none ran" : fmt::format("{} clean", fmt::join(g.tools, ", ")));
  }
  // The status is the gate's to set while it is `passed` or one the gate set before.
  const bool gate_owned = rec.status == Status::kPassed || rec.reason.starts_with("gate: ");
  if (!gate_owned) return;
  if (g.verdict == GateVerdict::kUnsafe) {
    rec.status = Status::kUnsafe;
    rec.reason = "gate: " + g.reason;
  } else if (g.verdict == GateVerdict::kIncorrect) {
    rec.status = Status::kIncorrect;
    rec.reason = "gate: " + g.reason;
  }
}

void count_gated(const VariantRecord& rec, RunContext::Gate& ctx) {
  if (!rec.gate) return;
  ++ctx.gated;
  ctx.unsafe += rec.status == Status::kUnsafe;
  ctx.incorrect += rec.gate->verdict == GateVerdict::kIncorrect;
  ctx.unchecked += rec.gate->verdict == GateVerdict::kUnchecked;
}

}  // namespace tune
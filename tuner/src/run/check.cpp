// tune check: the correctness gate on variants of a result of record (tune/gate.hpp).
#include <algorithm>
#include <chrono>
#include <functional>
#include <optional>
#include <set>
#include <string>

#include <fmt/format.h>

#include "tune/compile.hpp"
#include "tune/compile_cache.hpp"
#include "tune/device.hpp"
#include "tune/errors.hpp"
#include "tune/gate.hpp"
#include "tune/io.hpp"
#include "tune/problem.hpp"
#include "tune/space.hpp"
#include "tune/tune.hpp"
#include "tune/verdict_cache.hpp"
#include "tune/worker_client.hpp"
#include "tune/worker_protocol.hpp"

namespace tune {

std::vector<GateVariant> gate_records(const std::string& problem, const Shape& shape, std::uint64_t seed, int device,
                                      int arch, std::vector<GateVariant> variants, GateSettings settings,
                                      RunContext::Gate& ctx, int* could_not_run_exit) {
  const CompileCache cache(CompileCache::default_dir());
  const std::string nvrtc = nvrtc_version();
  for (GateVariant& v : variants) {
    bool cached = false;
    std::string store_failure;  // a cache that cannot be written costs nothing here
    v.compiled = cache.get_or_compile(compile_request(v.lowered, default_options(arch)), nvrtc, &cached, &store_failure);
    if (!v.compiled.ok)
      throw InputError(fmt::format("{}: does not compile now: {}", v.record.name, v.compiled.log.substr(0, 400)));
  }
  settings.problem = problem;
  settings.shape = shape;
  settings.seed = seed;
  settings.device = device;
  const int code = gate_variants(variants, settings, ctx);
  if (could_not_run_exit) *could_not_run_exit = code;
  return variants;
}

int gate_variants(std::vector<GateVariant>& variants, GateSettings settings, RunContext::Gate& ctx) {
  settings.search_input = true;
  Gate gate(settings, ctx);
  std::vector<WorkerItem> items;  // point into variants, which does not grow here
  for (auto& v : variants) items.push_back({&v.compiled, &v.lowered, &v.record});
  const auto t0 = std::chrono::steady_clock::now();
  // The sanitizers run beside the output checks (as a tune's gate runs them on its would-be
  // winner): the check takes the longer of the two, not their sum. Their verdicts stand only when
  // every output check ran: one that could not run makes the check an error.
  gate.check_outputs_while_sanitizing(items, items, [&] { return gate.could_not_run().empty(); });
  ctx.wall_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ++ctx.rounds;
  for (const auto& v : variants) count_gated(v.record, ctx);
  return gate.could_not_run_exit_code();
}

namespace {

using Log = std::function<void(const std::string&)>;

// Whether the variant passed its run before any gate judged it: a gate's unsafe or incorrect
// verdict does not stand when the variant is gated afresh.
bool passed_before_its_gate(const VariantRecord& v) {
  return v.status == Status::kPassed || v.status == Status::kUnsafe || (v.gate && v.status == Status::kIncorrect);
}

// A variant of the record as its space reads it now (one line, exit 2, when it no longer fits),
// lowered as the tune lowered it (the run's limits), its earlier verdict cleared: gated afresh.
GateVariant variant_to_gate(const Space& space, const RunRecord& run, const VariantRecord& r,
                            const std::filesystem::path& results) {
  GateVariant v;
  v.record = r;
  if (!passed_before_its_gate(r))
    throw InputError(
        fmt::format("{} did not pass in that run ({}): only variants that passed are gated", r.name, to_string(r.status)));
  v.record.status = Status::kPassed;
  v.record.gate.reset();
  v.lowered = space.lower(space.from_record(r.params, results.string(), r.name), run.shape, run.limits());
  return v;
}

// The variants to check: --variant's; with --all-finalists the baseline, the gated and the strictly
// re-measured that passed (or a gate failed); else the winner.
std::vector<GateVariant> variants_to_check(const CheckOptions& o, const RunRecord& run, const Space& space) {
  std::vector<std::string> names = o.variants;
  if (names.empty() && o.all_finalists) {
    for (const auto& v : run.variants)
      if ((v.baseline || v.gate || (v.timing && v.timing->profile.starts_with("strict"))) && passed_before_its_gate(v))
        names.push_back(v.name);
  } else if (names.empty()) {
    if (!run.winner)
      throw InputError(fmt::format("{} names no winner; pass --variant NAME or --all-finalists", o.results.string()));
    names.push_back(*run.winner);
  }
  std::vector<GateVariant> variants;
  for (const auto& name : names) {
    const VariantRecord* v = run.find(name);
    if (!v)
      throw InputError(fmt::format("{}: no variant named '{}' (tune check --variant takes a name from its 'variants')",
                                   o.results.string(), name));
    variants.push_back(variant_to_gate(space, run, *v, o.results));
  }
  if (variants.empty()) throw InputError(fmt::format("{}: no finalist to check", o.results.string()));
  return variants;
}

// Each verdict (with its sanitizer reports), then one line for all; whether every one is safe.
bool report_verdicts(const std::vector<GateVariant>& gated, const RunContext::Gate& ctx, const Log& log) {
  bool all_safe = true;
  for (const auto& v : gated) {
    const GateRecord& g = *v.record.gate;
    log(fmt::format("  {} {}: {}", to_string(g.verdict), v.record.name, g.reason));
    for (const auto& f : g.findings)
      for (const auto& line : f.report) log("      " + line);
    all_safe = all_safe && g.verdict == GateVerdict::kSafe;
  }
  log(fmt::format("check: {} of {} safe; tools: {}; {:.1f} s{}",
                  std::count_if(gated.begin(), gated.end(),
                                [](const auto& v) { return v.record.gate->verdict == GateVerdict::kSafe; }),
                  gated.size(), ctx.tools.empty() ? "none" : fmt::format("{}", fmt::join(ctx.tools, ", ")), ctx.wall_s,
                  ctx.note.empty() ? "" : " (" + ctx.note + ")"));
  return all_safe;
}

// A check that could not run is an error, not a verdict (issue 34 #2): exit 2 when the problem is
// at fault, 3 when the sanitizer or the device is; nothing is written.
void refuse_unrun(int could_not_run_exit, const RunContext::Gate& ctx, const std::filesystem::path& results) {
  if (could_not_run_exit == 0) return;
  const std::string what =
      fmt::format("check {}: the gate could not run ({}); no verdict, nothing written", results.string(), ctx.could_not_run);
  if (could_not_run_exit == 2) throw InputError(what);
  throw DeviceError(what);
}

// What the gate checks today must be what the results measured: --write refuses results whose
// kernel sources (space, templates, problem file) changed since, as it would store today's
// verdicts in an older record (issue 34 #20). Results of an earlier version record no hash.
// The reference the output checks compare with is the record's too (reference.py and the modules
// beside it, TUNE_REFERENCE, TUNE_REFERENCE_BACKEND): else --write stores verdicts of another one.
void compare_sources(const CheckOptions& o, const RunRecord& run, const Space& space, const std::string& problem_spec,
                     const Log& log) {
  // An input of the record changed since the tune: --write refuses, a plain check says so.
  const auto changed = [&](const std::string& what, const std::string& stored, const std::string& check_as,
                           const std::string& checked) {
    if (o.write)
      throw InputError(fmt::format("{}; --write would store {} in that record: re-tune, or check without --write{}", what,
                                   stored, check_as));
    log(fmt::format("note: {}: {}", what, checked));
  };
  const Problem& problem = find_problem(problem_spec);
  const std::string& recorded = run.context.source_hash;
  const std::string now = sources_hash(space, problem);
  if (!recorded.empty() && recorded != now)
    changed(fmt::format("the kernel sources of problem {} changed since {} was tuned (source hash {}, now {})", run.problem,
                        o.results.string(), recorded, now),
            "today's verdicts", "", "today's kernels are checked");
  const std::string& tuned_with = run.context.reference_identity;
  std::string reference_now = problem.reference_identity(reference_backend_from_env());
  // A record from before the identity named its Python (" under ..."): compared without it, as
  // it was made; else every result of record would read as tuned against another reference.
  if (const auto under = reference_now.find(") under ");
      under != std::string::npos && !tuned_with.empty() && tuned_with.find(") under ") == std::string::npos)
    reference_now.resize(under + 1);
  if (!tuned_with.empty() && tuned_with != reference_now)
    changed(fmt::format("{} was tuned against the reference {}, this check's is {}", o.results.string(), tuned_with,
                        reference_now),
            "verdicts of another reference", " (with the TUNE_REFERENCE and TUNE_REFERENCE_BACKEND the tune had)",
            "the outputs are checked against today's");
}

// What --write needs to gate a new winner in turn.
struct Regate {
  const std::string& problem_spec;
  const Space& space;
  int device;
  int arch;
  const GateSettings& settings;
  RunContext::Gate& ctx;
};

// --write: the verdicts into the results file, a new winner that was not gated gated in turn (until a
// gated one wins or none is left), and the header rewritten for the winner.
void write_verdicts(const std::filesystem::path& results, RunRecord& run, std::vector<GateVariant> gated, Regate g,
                    const Log& log) {
  // The variants this check gated: each is gated once, as this check gates, whatever its tools (no
  // compute-sanitizer installed leaves them empty; asking again looped for ever).
  std::set<std::string> checked_now;
  auto merge = [&](const std::vector<GateVariant>& done) {
    for (const auto& v : done) {
      checked_now.insert(v.record.name);
      for (auto& r : run.variants)
        if (r.name == v.record.name) r = v.record;
    }
  };
  merge(gated);
  const auto before = run.winner;
  name_winner(run);
  // Not gated yet, or gated without the sanitizers this check runs (the run's --sanitize winner ran
  // them on its winner alone): a new winner is gated in turn, sanitizers and all.
  const auto gated_as_now = [&](const VariantRecord& v) {
    if (!v.gate) return false;
    if (g.settings.mode == SanitizeMode::kOff || checked_now.contains(v.name)) return true;
    return std::ranges::all_of(kSanitizerTools, [&](const char* tool) {
      return std::ranges::find(v.gate->tools, std::string(tool)) != v.gate->tools.end();
    });
  };
  while (run.winner && !gated_as_now(*run.find(*run.winner))) {
    log(fmt::format("the winner would now be {} (not gated as this check gates yet): gating it", *run.winner));
    int could_not_run = 0;
    const auto next =
        gate_records(g.problem_spec, run.shape, run.seed, g.device, g.arch,
                     {variant_to_gate(g.space, run, *run.find(*run.winner), results)}, g.settings, g.ctx, &could_not_run);
    log(fmt::format("  {} {}: {}", to_string(next[0].record.gate->verdict), next[0].record.name,
                    next[0].record.gate->reason));
    refuse_unrun(could_not_run, g.ctx, results);
    merge(next);
    name_winner(run);
  }
  run.context.gate = g.ctx;
  // Checked before anything is written: a record no reader would accept is never written.
  const nlohmann::ordered_json json = to_json(run);
  try {
    validate_result_json(json);
  } catch (const InputError& e) {
    throw InputError(fmt::format("tune check --write: the updated record of {} would not be valid ({}); nothing written",
                                 results.string(), e.what()));
  }
  const auto header = results.parent_path() / (run.shape.tag() + ".hpp");
  const bool rewrite_header = run.winner && std::filesystem::exists(header);
  const std::string header_text = rewrite_header ? generate_header(run, g.space) : std::string();
  write_file_atomic(results, json.dump(2) + "\n");
  log(fmt::format("wrote the verdicts into {}", results.string()));
  if (rewrite_header) {
    write_file_atomic(header, header_text);
    if (before != run.winner)
      log(fmt::format("the winner is now {} (was {}); rewrote {}", *run.winner, before.value_or("none"), header.string()));
  } else if (!run.winner) {
    log("no variant is left to win: the header is left as it was; rerun the tune");
  }
}

}  // namespace

bool run_check(const CheckOptions& o) {
  const Log log = [&](const std::string& s) {
    if (o.log) o.log(s);
  };
  if (o.write && o.results.extension() == ".gz")
    throw InputError(
        fmt::format("{}: --write would replace a compressed file with text; gunzip it, then check the "
                    ".json with --write",
                    o.results.string()));
  // --write replaces the file: not while a tune writes it, and what it read stays what it replaces
  // (issue 34 #25).
  std::optional<ResultsLock> lock;
  if (o.write) lock.emplace(o.results, "wait for it to finish, then check again");
  RunRecord run = read_result(o.results);
  if (!run.timed)
    throw InputError(
        fmt::format("{}: a compile-only result; tune check gates the variants of a timed run", o.results.string()));
  const std::string problem_spec = problem_spec_of(run);
  const Space space = load_run_space(run);
  compare_sources(o, run, space, problem_spec, log);
  std::vector<GateVariant> variants = variants_to_check(o, run, space);

  const bool fake = worker_fake_mode();
  std::string why;
  const auto device = fake ? std::optional(fake_device(90, o.device)) : query_device(o.device, &why);
  if (!device) throw DeviceError(fmt::format("tune check needs a CUDA device ({})", why));
  if (run.device && run.device->name != device->name)
    log(fmt::format("note: {} was measured on {}; checking on {}", o.results.string(), run.device->name, device->name));
  log(fmt::format("checking {} variant(s) of {} {} on {}", variants.size(), run.problem, run.shape.describe(),
                  device->name));

  RunContext::Gate ctx;
  GateSettings settings;
  settings.mode = o.sanitize;
  settings.fake = fake;
  settings.log = log;
  settings.verdict_cache = verdict_cache_for(false, std::nullopt);  // tune check uses the default caches
  settings.fresh = o.fresh;
  // The consent to an unchecked winner is the tune's, given for this record: --write keeps it.
  settings.allow_unchecked = run.context.gate.allow_unchecked;
  // reference.py runs twice on the first output check's input unless it was seen to repeat itself
  // (a search checks it; a check of a record from elsewhere may be the first to run it here).
  const Problem& problem = find_problem(problem_spec);
  auto memo =
      ReferenceRepeatMemo::open(settings.verdict_cache, problem, problem.reference_identity(reference_backend_from_env()));
  settings.check_reference = !memo || !memo->known();
  if (memo) settings.on_reference_repeated = [memo = *memo] { memo.remember(); };
  int could_not_run = 0;
  auto gated = gate_records(problem_spec, run.shape, run.seed, o.device, device->compute_capability(), std::move(variants),
                            settings, ctx, &could_not_run);
  refuse_unrun(could_not_run, ctx, o.results);
  if (const std::string line = describe_gate(ctx); !line.empty()) log(line);
  const bool all_safe = report_verdicts(gated, ctx, log);
  if (o.write)
    write_verdicts(o.results, run, std::move(gated),
                   {problem_spec, space, o.device, device->compute_capability(), settings, ctx}, log);
  return all_safe;
}

}  // namespace tune

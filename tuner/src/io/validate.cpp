// The one validation of a results file (issue 22, item 11). Every reader of results goes through
// it: run_from_json (so read_result: tune header, merge, check, verify, report) and the --resume
// journal's records (validate_variant_json); the report scripts read through `tune results --json`.
//
// An error is one line, "<JSON path>: <what is wrong>; <what to do>", and the readers put the file
// in front of it.
#include <cmath>
#include <climits>
#include <cstdint>
#include <map>

#include <fmt/format.h>

#include "io/validate_fields.hpp"
#include "tune/errors.hpp"
#include "tune/problem.hpp"
#include "tune/record.hpp"
#include "tune/problem_space.hpp"
#include "tune/winner.hpp"

namespace tune {
namespace {

// The field checks this validation is made of.
using namespace validate_fields;

constexpr const char* kRestore = "restore what tune wrote, or re-tune";
// The widest tie band of the winner rule (pick_winner): a winner further than this above the
// fastest passed variant was not picked by it.
constexpr double kTieBandCap = 0.05;

void device(const Check& c, const Json& d, const std::string& at) {
  (void)integer(c, d, at, "ordinal", true);
  text(c, d, at, "name", true, true);
  text(c, d, at, "slug", false);
  text(c, d, at, "uuid", true);
  text(c, d, at, "compute_capability", true);
  const auto& cc = d.at("compute_capability").get_ref<const std::string&>();
  const auto dot = cc.find('.');
  const auto digits = [](const std::string& s) {
    return !s.empty() && s.size() <= 3 && s.find_first_not_of("0123456789") == std::string::npos;
  };
  if (dot == std::string::npos || !digits(cc.substr(0, dot)) || !digits(cc.substr(dot + 1)))
    c.fail(member(at, "compute_capability"), fmt::format("\"{}\" does not look like 9.0", cc));
  for (const char* k : {"sm_count", "max_threads_per_block", "max_sm_clock_khz", "memory_clock_khz", "memory_bus_bits"})
    (void)integer(c, d, at, k, true);
  for (const char* k : {"max_shared_memory_per_block_optin_bytes", "l2_cache_bytes", "memory_bytes"})
    (void)integer(c, d, at, k, true, 0, INT64_MAX);
  text(c, d, at, "driver_cuda_version", true);
}

// context.search: the strategy, and the warm start and model where there are.
void search_context(const Check& c, const Json& s, const std::string& where) {
  one_of(c, s, where, "strategy", false, search_label_names());
  (void)integer(c, s, where, "budget", false);
  // -1: not counted, the space was sampled without enumerating it (schema minor 4).
  (void)integer(c, s, where, "valid_configurations", false, -1, INT64_MAX);
  (void)number(c, s, where, "time_budget_s", false, false, Range::kNonNegative);
  boolean(c, s, where, "stopped_by_time_budget", false);
  boolean(c, s, where, "interrupted", false);
  // The local search after a warm start or a model (search.warm_start.refine, search.model.refine).
  auto refine_of = [&](const Json& parent, const std::string& parent_at) {
    if (const Json* r = object(c, parent, parent_at, "refine", false))
      for (const char* key : {"top", "rounds", "added"}) (void)integer(c, *r, member(parent_at, "refine"), key, true, 0);
  };
  if (const Json* w = object(c, s, where, "warm_start", false)) {
    const std::string warm = member(where, "warm_start");
    strings(c, *w, warm, "files", true);
    (void)number(c, *w, warm, "keep", true, false, Range::kPositive);
    (void)integer(c, *w, warm, "promising", true, 0);
    (void)integer(c, *w, warm, "explored", true, 0);
    refine_of(*w, warm);
  }
  if (const Json* m = object(c, s, where, "model", false)) {
    const std::string model = member(where, "model");
    text(c, *m, model, "library", true);
    for (const char* key : {"initial", "rounds", "added"}) (void)integer(c, *m, model, key, true, 0);
    text(c, *m, model, "stop", true);
    refine_of(*m, model);
  }
}

// context.shard: a shard's place in the run it is part of.
void shard_context(const Check& c, const Json& s, const std::string& where) {
  const auto count = integer(c, s, where, "count", true, 1);
  (void)integer(c, s, where, "index", true, 0, count - 1);
  one_of(c, s, where, "split", true, shard_split_names());
  const auto items = integer(c, s, where, "items", true, 1, INT64_MAX);
  (void)integer(c, s, where, "item", true, 0, items - 1);
  text(c, s, where, "run_key", true);
  (void)integer(c, s, where, "variants", false, 0, INT64_MAX);
  (void)integer(c, s, where, "baseline_index", false, -1, INT64_MAX);
}

// context.gate: the correctness gate's settings and its totals.
void gate_context(const Check& c, const Json& g, const std::string& where) {
  for (const char* k : {"mode", "sanitizer", "sanitizer_version", "note", "could_not_run"}) text(c, g, where, k, false);
  boolean(c, g, where, "allow_unchecked", false);
  strings(c, g, where, "tools", false);
  strings(c, g, where, "inputs", false);
  for (const char* k : {"launches", "rounds", "gated", "unsafe", "incorrect", "unchecked"})
    (void)integer(c, g, where, k, false);
  numbers(c, g, where, {"wall_s", "share_of_run"});
  // Minor 6 (issue 37): the verdict cache and the gate's parts.
  for (const char* k : {"cache", "baseline_rule"}) text(c, g, where, k, false);
  boolean(c, g, where, "fresh", false);
  for (const char* k : {"checks", "cache_hits", "cache_misses", "jobs"}) (void)integer(c, g, where, k, false, 0);
  numbers(c, g, where, {"outputs_s", "reference_s"});
  for (const char* k : {"tool_s", "finalist_s", "parts_s"})
    if (const Json* m = object(c, g, where, k, false))
      for (const auto& [name, s] : m->items()) (void)number(c, *m, member(where, k), name.c_str(), false, true, Range::kNonNegative);
}

void context(const Check& c, const Json& ctx, const std::string& at) {
  for (const char* k : {"tool_version", "git_commit", "command_line", "started_at", "nvrtc_version", "arch"})
    text(c, ctx, at, k, true);
  strings(c, ctx, at, "compile_options", true);
  for (const char* k : {"finished_at", "host", "cuda_header_version", "config_file", "source_hash", "reference", "reference_identity",
                        "compile_cache"})
    text(c, ctx, at, k, false);
  (void)integer(c, ctx, at, "jobs", false, 1);
  for_each_object(c, ctx, at, "tensors", [&](const Json& t, const std::string& where) {  // minor 6
    text(c, t, where, "name", true, true);
    one_of(c, t, where, "role", true, {"parameter", "input", "output"});
    text(c, t, where, "dtype", true);
    if (!parse_dtype(t.at("dtype").get<std::string>()))
      c.fail(member(where, "dtype"), fmt::format("\"{}\" is not a dtype ({})", t.at("dtype").get<std::string>(), dtype_choices()));
    const Json* shape = array(c, t, where, "shape", true);
    for (std::size_t i = 0; shape && i < shape->size(); ++i)
      if (!shape->at(i).is_number_integer() || shape->at(i).get<std::int64_t>() < 0)
        c.fail(fmt::format("{}.shape[{}]", where, i), fmt::format("{} is not a size (an integer >= 0)", brief(shape->at(i))));
  });
  if (const Json* s = object(c, ctx, at, "search", false)) search_context(c, *s, member(at, "search"));
  if (const Json* i = object(c, ctx, at, "isolation", false)) {
    const std::string where = member(at, "isolation");
    text(c, *i, where, "worker", false);
    numbers(c, *i, where, {"first_variant_timeout_s", "variant_timeout_s"});
    text(c, *i, where, "timeout_rule", false);
    (void)integer(c, *i, where, "worker_starts", false);
    strings(c, *i, where, "test_hooks", false);
  }
  if (const Json* j = object(c, ctx, at, "journal", false)) {
    text(c, *j, member(at, "journal"), "file", false);
    (void)integer(c, *j, member(at, "journal"), "resumed_variants", false);
    (void)object(c, *j, member(at, "journal"), "identity", false);
  }
  if (const Json* s = object(c, ctx, at, "shard", false, true)) shard_context(c, *s, member(at, "shard"));
  if (const Json* g = object(c, ctx, at, "gate", false)) gate_context(c, *g, member(at, "gate"));
}


// The dimensions of the run's problem, when it can be found here (its name on the problem path, or
// the problem file the run recorded); nullopt when it cannot, and the readers that need the problem
// say so themselves.
std::optional<std::vector<std::string>> problem_dims(const Json& j) {
  try {
    const std::string& config = j.at("context").value("config_file", "");
    return find_problem(problem_spec_of(j.at("problem").get<std::string>(), config)).dims();
  } catch (const InputError&) {
    return std::nullopt;
  }
}

void shape(const Check& c, const Json& j) {
  const Json& s = *object(c, j, "", "shape", true);
  if (s.empty()) c.fail("shape", "has no dimensions");
  std::vector<std::string> names;  // the dimensions; a dtype variable's value is a dtype's name
  for (const auto& [k, v] : s.items()) {
    if (v.is_string()) {
      if (!parse_dtype(v.get_ref<const std::string&>()))
        c.fail("shape." + k, fmt::format("{} is not a dtype ({})", brief(v), dtype_choices()));
      continue;
    }
    (void)integer_value(c, v, "shape." + k, 1, INT64_MAX);
    names.push_back(k);
  }
  if (const auto dims = problem_dims(j); dims && *dims != names)
    c.fail("shape", fmt::format("has the dimensions {}, but problem {} has {}", fmt::join(names, ", "),
                                j.at("problem").get<std::string>(), fmt::join(*dims, ", ")));
}


// The torch record (issue 36): its status, and each mode's times a positive median where given.
void torch_record(const Check& c, const Json& t, const std::string& at) {
  one_of(c, t, at, "status", true, {"measured", "cached", "skipped", "failed"});
  for (const char* k : {"reason", "torch_version", "device", "module_dtype"}) text(c, t, at, k, false);
  strings(c, t, at, "modes", false);
  boolean(c, t, at, "tf32", false);
  (void)object(c, t, at, "method", false);
  (void)number(c, t, at, "seconds", false, true, Range::kNonNegative);
  const std::string& status = t.at("status").get_ref<const std::string&>();
  if ((status == "skipped" || status == "failed") && t.value("reason", "").empty())
    c.fail(member(at, "reason"), fmt::format("empty, but the status is {} (it says why)", status));
  bool any = false;
  for (const char* mode : {"eager", "compile"}) {
    const Json* m = object(c, t, at, mode, false, true);
    if (!m) continue;
    any = true;
    const std::string where = member(at, mode);
    for (const char* method : {"graph", "events"})
      if (const Json* times = object(c, *m, where, method, false, true)) {
        (void)number(c, *times, member(where, method), "median_us", true, false, Range::kPositive);
        (void)integer(c, *times, member(where, method), "samples", false, 0, INT_MAX);
      }
    if (const Json* e = field(c, *m, where, "error", false); e && !e->is_null()) text(c, *m, where, "error", false);
    (void)number(c, *m, where, "compile_seconds", false, true, Range::kNonNegative);
  }
  if ((status == "measured" || status == "cached") && !any)
    c.fail(at, fmt::format("status {}, but neither eager nor compile is recorded", status));
}

// The run's own fields, its context and the records beside the variants; returns whether it was timed.
bool run_fields(const Check& c, const Json& j) {
  if (!j.is_object()) c.fail("(top level)", "not a JSON object (not a tune result file)");
  if (j.value("kind", Json()) != "tune.result")
    c.fail("kind", fmt::format("{} is not \"tune.result\" (not a tune result file)", brief(j.value("kind", Json()))));
  // Read wide: an int would take 4294967297 for 1.
  const Json& sv = *field(c, j, "", "schema_version", true);
  if (!is_int64(sv) || sv.get<std::int64_t>() != kResultSchemaVersion)
    Check{"regenerate the file with this tune"}.fail(
        "schema_version", fmt::format("{} is not supported (this tune reads {})", brief(sv), kResultSchemaVersion));
  (void)integer(c, j, "", "schema_minor_version", false);
  text(c, j, "", "problem", true, true);
  context(c, *object(c, j, "", "context", true), "context");
  shape(c, j);
  seed(c, j, "");
  boolean(c, j, "", "timed", true);
  text(c, j, "", "untimed_reason", false);
  boolean(c, j, "", "complete", false);
  const bool timed = j.at("timed").get<bool>();
  const Json* dev = object(c, j, "", "device", true, true);
  if (dev) device(c, *dev, "device");
  if (timed && !dev) c.fail("device", "null in a timed result (the device it was measured on)");
  if (timed) {  // a timed run compiles for its device (arch_name): headers file it under that arch
    const auto& cc = dev->at("compute_capability").get_ref<const std::string&>();
    const std::string arch = "sm_" + cc.substr(0, cc.find('.')) + cc.substr(cc.find('.') + 1);
    if (j.at("context").at("arch") != arch)
      c.fail("device.compute_capability", fmt::format("\"{}\" is not the device context.arch {} was compiled for", cc,
                                                      j.at("context").at("arch").get<std::string>()));
  }
  const Json& work = *object(c, j, "", "work", true);
  (void)number(c, work, "work", "flop_per_call", true, false, Range::kNonNegative);
  (void)number(c, work, "work", "bytes_per_call", true, false, Range::kNonNegative);
  if (const Json* h = object(c, j, "", "harness_floor", false, true))
    for (const char* k : {"empty_kernel_cold_us", "empty_kernel_batch_us", "empty_kernel_graph_us"})
      (void)number(c, *h, "harness_floor", k, false, true, Range::kNonNegative);
  if (const Json* w = object(c, j, "", "wall_seconds", false)) numbers(c, *w, "wall_seconds", {"compile", "measure", "total"});
  if (const Json* t = object(c, j, "", "torch", false, true)) validate_torch_record(*t, "torch");
  return timed;
}

// The variants by name (each name once), and the one marked baseline with its JSON path.
struct VariantIndex {
  std::map<std::string, std::size_t> index;
  const Json* baseline = nullptr;
  std::string baseline_at;
};

VariantIndex variant_index(const Check& c, const Json& variants) {
  VariantIndex out;
  for (std::size_t i = 0; i < variants.size(); ++i) {
    const std::string at = fmt::format("variants[{}]", i);
    const Json& v = variants.at(i);
    validate_variant_json(v, at, kRestore);
    const std::string& name = v.at("name").get_ref<const std::string&>();
    if (const auto [it, fresh] = out.index.emplace(name, i); !fresh)
      c.fail(at + ".name", fmt::format("\"{}\" is also the name of variants[{}]{}; keep one record per variant", name,
                                       it->second, v == variants.at(it->second) ? "" : ", with different contents"));
    if (v.value("baseline", false)) {
      if (out.baseline) c.fail(at + ".baseline", fmt::format("true, but {} is the baseline already", out.baseline_at));
      out.baseline = &v;
      out.baseline_at = at;
    }
  }
  return out;
}

double median(const Json* v) { return v->at("timing").at("median_us").get<double>(); }

// summary.winner: a passed variant of a timed run, the one the winner rule picks (within its tie band).
void check_winner(const Check& c, const Json& j, const Json& variants, const Json* winner, bool timed) {
  const std::string& name = winner->at("name").get_ref<const std::string&>();
  if (!timed) c.fail("summary.winner", fmt::format("\"{}\" in an untimed (compile-only) result", name));
  const std::string& status = winner->at("status").get_ref<const std::string&>();
  if (status != "passed")
    c.fail("summary.winner", fmt::format("\"{}\" has status {}; a winner passed parity and was timed", name, status));
  double fastest = median(winner);
  std::string fastest_name = name;
  // The variants that may win (may_win): passed, and not unchecked unless the run allows it.
  const bool allow_unchecked = j.at("context").value("gate", Json::object()).value("allow_unchecked", false) == true;
  auto unchecked = [](const Json& v) {
    const Json g = v.value("gate", Json());
    return g.is_object() && g.at("verdict") == to_string(GateVerdict::kUnchecked);
  };
  // An unchecked variant wins only by consent (--allow-unchecked), which the context records.
  if (unchecked(*winner) && !allow_unchecked)
    c.fail("summary.winner", fmt::format("\"{}\" is unchecked by the gate, but context.gate.allow_unchecked is not "
                                         "true (an unchecked variant wins only with --allow-unchecked)",
                                         name));
  for (const Json& v : variants)
    if (v.at("status") == "passed" && (allow_unchecked || !unchecked(v)) && median(&v) < fastest) {
      fastest = median(&v);
      fastest_name = v.at("name").get<std::string>();
    }
  if (median(winner) > fastest * (1 + kTieBandCap))
    c.fail("summary.winner", fmt::format("\"{}\" ({} us) is more than {:g} % slower than \"{}\" ({} us): not the "
                                         "winner the rule picks",
                                         name, median(winner), kTieBandCap * 100, fastest_name, fastest));
}

}  // namespace

void validate_torch_record(const Json& json, const std::string& at) {
  const Check c{kRestore};
  if (!json.is_object()) c.fail(at, fmt::format("{} is not an object", brief(json)));
  torch_record(c, json, at);
}

void validate_result_json(const Json& j) {
  const Check c{kRestore};
  const bool timed = run_fields(c, j);
  const Json& variants = *array(c, j, "", "variants", true);
  const VariantIndex marked = variant_index(c, variants);

  const Json& s = *object(c, j, "", "summary", true);
  text(c, s, "summary", "winner_rule", false);
  (void)integer(c, s, "summary", "variants", false, 0, INT64_MAX);
  (void)object(c, s, "summary", "by_status", false);
  const auto named = [&](const char* key) -> const Json* {
    const Json* v = field(c, s, "summary", key, false);
    if (!v || v->is_null()) return nullptr;
    if (!v->is_string()) c.fail(member("summary", key), fmt::format("{} is not a variant name or null", brief(*v)));
    const auto it = marked.index.find(v->get<std::string>());
    if (it == marked.index.end())
      c.fail(member("summary", key), fmt::format("\"{}\" is not among the variants", v->get<std::string>()));
    return &variants.at(it->second);
  };
  const Json* winner = named("winner");
  const Json* base = named("baseline");
  if (base != marked.baseline)
    c.fail("summary.baseline", marked.baseline ? fmt::format("does not name {} (the variant marked baseline)", marked.baseline_at)
                                        : "names a variant that is not marked baseline");
  if (winner) check_winner(c, j, variants, winner, timed);
  if (const auto speedup = number(c, s, "summary", "speedup_over_baseline", false, true, Range::kPositive)) {
    if (!winner || !base || base->at("status") != "passed")
      c.fail("summary.speedup_over_baseline", "given without a winner and a baseline that passed");
    const double expected = median(base) / median(winner);
    if (!std::isfinite(expected) || std::abs(*speedup - expected) > 1e-9 * expected)
      c.fail("summary.speedup_over_baseline",
             fmt::format("{} is not the baseline's median over the winner's ({})", *speedup, expected));
  }
}

}  // namespace tune

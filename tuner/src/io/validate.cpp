// The one validation of a results file (issue 22, item 11). Every reader of results goes through
// it: run_from_json (so read_result: tune header, merge, check, verify, report) and the --resume
// journal's records (validate_variant_json); the report scripts read through `tune results --json`.
//
// An error is one line, "<JSON path>: <what is wrong>; <what to do>", and the readers put the file
// in front of it.
#include <cmath>
#include <climits>
#include <cstdint>
#include <limits>
#include <map>
#include <set>

#include <fmt/format.h>

#include "io/json_file.hpp"
#include "tune/errors.hpp"
#include "tune/problem.hpp"
#include "tune/record.hpp"
#include "tune/problem_space.hpp"
#include "tune/winner.hpp"

namespace tune {
namespace {

using Json = nlohmann::ordered_json;

constexpr const char* kRestore = "restore what tune wrote, or re-tune";
// The widest tie band of the winner rule (pick_winner): a winner further than this above the
// fastest passed variant was not picked by it.
constexpr double kTieBandCap = 0.05;

struct Check {
  std::string remedy;

  [[noreturn]] void fail(const std::string& at, const std::string& what) const {
    throw InputError(fmt::format("{}: {}; {}", at, what, remedy));
  }
};

std::string brief(const Json& v) { return json_file::brief(v, 60); }

std::string member(const std::string& at, const std::string& key) { return at.empty() ? key : at + "." + key; }

// The member `key` of the object `obj`, or null when it is absent and not required.
const Json* field(const Check& c, const Json& obj, const std::string& at, const char* key, bool required) {
  if (obj.contains(key)) return &obj.at(key);
  if (required) c.fail(member(at, key), "missing");
  return nullptr;
}

const Json* object(const Check& c, const Json& obj, const std::string& at, const char* key, bool required,
                   bool nullable = false) {
  const Json* v = field(c, obj, at, key, required);
  if (!v || (nullable && v->is_null())) return nullptr;
  if (!v->is_object()) c.fail(member(at, key), fmt::format("{} is not an object", brief(*v)));
  return v;
}

const Json* array(const Check& c, const Json& obj, const std::string& at, const char* key, bool required) {
  const Json* v = field(c, obj, at, key, required);
  if (v && !v->is_array()) c.fail(member(at, key), fmt::format("{} is not an array", brief(*v)));
  return v;
}

// Each item of an optional array of objects, with its JSON path.
template <typename F>
void for_each_object(const Check& c, const Json& obj, const std::string& at, const char* key, F&& f) {
  const Json* items = array(c, obj, at, key, false);
  for (std::size_t i = 0; items && i < items->size(); ++i) {
    const std::string where = fmt::format("{}[{}]", member(at, key), i);
    if (!items->at(i).is_object()) c.fail(where, fmt::format("{} is not an object", brief(items->at(i))));
    f(items->at(i), where);
  }
}

void text(const Check& c, const Json& obj, const std::string& at, const char* key, bool required,
          bool non_empty = false) {
  const Json* v = field(c, obj, at, key, required);
  if (!v) return;
  if (!v->is_string()) c.fail(member(at, key), fmt::format("{} is not a string", brief(*v)));
  if (non_empty && v->get_ref<const std::string&>().empty()) c.fail(member(at, key), "is empty");
}

void boolean(const Check& c, const Json& obj, const std::string& at, const char* key, bool required) {
  const Json* v = field(c, obj, at, key, required);
  if (v && !v->is_boolean()) c.fail(member(at, key), fmt::format("{} is not true or false", brief(*v)));
}

void strings(const Check& c, const Json& obj, const std::string& at, const char* key, bool required) {
  const Json* v = array(c, obj, at, key, required);
  if (!v) return;
  for (std::size_t i = 0; i < v->size(); ++i)
    if (!v->at(i).is_string())
      c.fail(fmt::format("{}[{}]", member(at, key), i), fmt::format("{} is not a string", brief(v->at(i))));
}

bool is_int64(const Json& v) {
  return v.is_number_integer() && !(v.is_number_unsigned() && v.get<std::uint64_t>() > INT64_MAX);
}

// An integer in [lo, hi], read wide (4294967297 is not 1; 64.0 is not an integer).
std::int64_t integer_value(const Check& c, const Json& v, const std::string& at, std::int64_t lo, std::int64_t hi) {
  if (!is_int64(v)) c.fail(at, fmt::format("{} is not an integer", brief(v)));
  const auto n = v.get<std::int64_t>();
  if (n < lo || n > hi)
    c.fail(at, hi == INT64_MAX ? fmt::format("{} is below {}", n, lo) : fmt::format("{} is outside {} to {}", n, lo, hi));
  return n;
}

std::int64_t integer(const Check& c, const Json& obj, const std::string& at, const char* key, bool required,
                     std::int64_t lo = 0, std::int64_t hi = INT_MAX) {
  const Json* v = field(c, obj, at, key, required);
  return v ? integer_value(c, *v, member(at, key), lo, hi) : lo;
}

enum class Range { kAny, kNonNegative, kPositive };

// A number (null: a value that was not finite when written; allowed only where `nullable`).
std::optional<double> number(const Check& c, const Json& obj, const std::string& at, const char* key, bool required,
                             bool nullable, Range range) {
  const Json* v = field(c, obj, at, key, required);
  if (!v) return std::nullopt;
  const std::string where = member(at, key);
  if (v->is_null()) {
    if (!nullable) c.fail(where, "null is not a number");
    return std::nullopt;
  }
  if (!v->is_number()) c.fail(where, fmt::format("{} is not a number", brief(*v)));
  const double x = v->get<double>();
  if (!std::isfinite(x)) c.fail(where, fmt::format("{} is not a finite number", brief(*v)));
  if (range == Range::kPositive && !(x > 0)) c.fail(where, fmt::format("{} is not a positive number", brief(*v)));
  if (range == Range::kNonNegative && x < 0) c.fail(where, fmt::format("{} is negative", brief(*v)));
  return x;
}

void numbers(const Check& c, const Json& obj, const std::string& at, std::initializer_list<const char*> keys) {
  for (const char* k : keys) (void)number(c, obj, at, k, false, true, Range::kNonNegative);
}

void one_of(const Check& c, const Json& obj, const std::string& at, const char* key, bool required,
            std::initializer_list<const char*> allowed) {
  text(c, obj, at, key, required);
  if (!obj.contains(key)) return;
  const auto& s = obj.at(key).get_ref<const std::string&>();
  for (const char* a : allowed)
    if (s == a) return;
  std::vector<std::string> names(allowed.begin(), allowed.end());
  c.fail(member(at, key), fmt::format("\"{}\" is not one of {}", s, fmt::join(names, ", ")));
}

// A seed: any 64-bit unsigned integer.
void seed(const Check& c, const Json& obj, const std::string& at) {
  const Json& s = *field(c, obj, at, "seed", true);
  if (!s.is_number_unsigned() && !(s.is_number_integer() && s.get<std::int64_t>() >= 0))
    c.fail(member(at, "seed"), fmt::format("{} is not an integer from 0 to 2^64-1", brief(s)));
}

void parity(const Check& c, const Json& p, const std::string& at) {
  (void)number(c, p, at, "atol", true, false, Range::kNonNegative);
  (void)number(c, p, at, "rtol", true, false, Range::kNonNegative);
  seed(c, p, at);
  for (const char* k : {"elements", "mismatches", "non_finite"}) (void)integer(c, p, at, k, true, 0, INT64_MAX);
  (void)integer(c, p, at, "worst_index", true, -1, INT64_MAX);
  numbers(c, p, at, {"max_abs_error", "max_rel_error"});
  (void)number(c, p, at, "worst_value", false, true, Range::kAny);
  (void)number(c, p, at, "worst_reference", false, true, Range::kAny);
  text(c, p, at, "output_hash", false);
  // Minor 6 (issue 35): the output's dtype and the rules it was judged by.
  if (p.contains("dtype")) {
    text(c, p, at, "dtype", true);
    if (!parse_dtype(p.at("dtype").get<std::string>()))
      c.fail(member(at, "dtype"), fmt::format("\"{}\" is not one of {}", p.at("dtype").get<std::string>(), dtype_choices()));
  }
  if (p.contains("rule")) one_of(c, p, at, "rule", false, {"both", "tolerance", "module"});
  boolean(c, p, at, "tolerance_passed", false);
  (void)number(c, p, at, "module_max_abs_error", false, true, Range::kNonNegative);
  (void)number(c, p, at, "module_k", false, false, Range::kNonNegative);
  (void)number(c, p, at, "module_atol", false, false, Range::kNonNegative);
  if (p.contains("module_passed") && !p.at("module_passed").is_null()) boolean(c, p, at, "module_passed", false);
}

// Why a parity record does not pass the rules it names (empty when it does), as parity_passed
// judges: the elementwise rule unless the rule is "module" and the module rule was applied; the
// module rule when applied and the rule is not "tolerance".
std::string parity_failed(const Json& p) {
  const auto mismatches = p.at("mismatches").get<std::int64_t>();
  const auto elements = p.at("elements").get<std::int64_t>();
  const std::string rule = p.value("rule", "both");
  const bool module_applies = p.contains("module_passed") && p.at("module_passed").is_boolean() && rule != "tolerance";
  if (elements <= 0) return fmt::format("{} of {} outputs mismatched", mismatches, elements);
  if (module_applies && !p.at("module_passed").get<bool>())
    return fmt::format("the module rule failed (module_passed false, rule {})", rule);
  if (!(module_applies && rule == "module") && mismatches != 0)
    return fmt::format("{} of {} outputs mismatched", mismatches, elements);
  return {};
}

void timing(const Check& c, const Json& t, const std::string& at, bool measured) {
  text(c, t, at, "profile", true);
  if (t.contains("unit")) one_of(c, t, at, "unit", false, {"microseconds"});
  (void)integer(c, t, at, "samples", true, measured ? 1 : 0);
  (void)number(c, t, at, "median_us", true, !measured, measured ? Range::kPositive : Range::kNonNegative);
  numbers(c, t, at, {"min_us", "q1_us", "mean_us", "q3_us", "max_us", "stddev_us", "noise", "robust_noise",
                     "gpu_seconds", "batch_mean_us", "graph_mean_us"});
  // The quartiles of one sample set are ordered; a hand-edited median breaks the order.
  const char* order[] = {"min_us", "q1_us", "median_us", "q3_us", "max_us"};
  const char* last = nullptr;
  double last_value = 0;
  for (const char* k : order) {
    if (!t.contains(k) || t.at(k).is_null()) continue;
    const double x = t.at(k).get<double>();
    if (last && x < last_value * (1 - 1e-9))
      c.fail(member(at, k), fmt::format("{} is below {} ({}); the statistics of one sample set are ordered", brief(t.at(k)),
                                        last, last_value));
    last = k;
    last_value = x;
  }
  text(c, t, at, "stop_reason", true);
  (void)integer(c, t, at, "batch_launches", false);
  (void)integer(c, t, at, "throttle_retries", false);
  if (const Json* clocks = object(c, t, at, "clocks", false)) {
    const std::string where = member(at, "clocks");
    boolean(c, *clocks, where, "available", false);
    (void)integer(c, *clocks, where, "sm_mhz_start", false);
    (void)integer(c, *clocks, where, "sm_mhz_end", false);
    strings(c, *clocks, where, "reasons", false);
    boolean(c, *clocks, where, "throttled", false);
  }
  if (const Json* m = object(c, t, at, "method_ms", false))
    numbers(c, *m, member(at, "method_ms"), {"warmup", "cold", "batch", "graph", "clocks"});
}

void gate(const Check& c, const Json& g, const std::string& at) {
  one_of(c, g, at, "verdict", true, {"safe", "unsafe", "incorrect", "unchecked"});
  text(c, g, at, "reason", false);
  strings(c, g, at, "tools", false);
  strings(c, g, at, "not_run", false);
  strings(c, g, at, "cached", false);  // minor 6
  if (g.at("verdict") == "unchecked" && g.value("not_run", Json::array()).empty())
    c.fail(member(at, "not_run"), "empty, but the verdict is unchecked (it names the checks that could not run)");
  for_each_object(c, g, at, "findings", [&](const Json& f, const std::string& where) {
    text(c, f, where, "tool", true);
    text(c, f, where, "kind", false);
    strings(c, f, where, "report", false);
  });
  (void)integer(c, g, at, "findings_left_out", false);
  for_each_object(c, g, at, "inputs", [&](const Json& in, const std::string& where) {
    text(c, in, where, "name", true);
    parity(c, *object(c, in, where, "parity", true), member(where, "parity"));
  });
  (void)integer(c, g, at, "launches", false);
  boolean(c, g, at, "deterministic", false);
  text(c, g, at, "determinism", false);
  numbers(c, g, at, {"seconds"});
}

void fault(const Check& c, const Json& f, const std::string& at) {
  text(c, f, at, "kind", true);
  for (const char* k : {"signal", "cuda_error", "phase", "message"}) text(c, f, at, k, false);
  (void)integer(c, f, at, "exit_code", false, INT_MIN, INT_MAX);
  numbers(c, f, at, {"deadline_s"});
}

// `ran`: the launch ran (a passed or unsafe variant's), so each size is at least 1; a variant whose
// launch the driver refused may record a grid of 0.
void launch(const Check& c, const Json& l, const std::string& at, bool ran) {
  if (!l.is_object()) c.fail(at, fmt::format("{} is not an object", brief(l)));
  text(c, l, at, "kernel", true, true);
  for (const char* k : {"grid", "block"}) {
    const Json& dim = *array(c, l, at, k, true);
    if (dim.size() != 3) c.fail(member(at, k), fmt::format("{} does not hold 3 sizes", brief(dim)));
    for (std::size_t i = 0; i < 3; ++i)
      (void)integer_value(c, dim.at(i), fmt::format("{}[{}]", member(at, k), i), ran ? 1 : 0, UINT32_MAX);
  }
  (void)integer(c, l, at, "dynamic_smem_bytes", false, 0, UINT32_MAX);
}

void resources(const Check& c, const Json& r, const std::string& at) {
  for (const auto& [kernel, res] : r.items()) {
    const std::string where = member(at, kernel);
    if (!res.is_object()) c.fail(where, fmt::format("{} is not an object", brief(res)));
    (void)integer(c, res, where, "registers", true, -1);
    for (const char* k : {"spill_store_bytes", "spill_load_bytes", "stack_frame_bytes", "static_smem_bytes"})
      (void)integer(c, res, where, k, true);
    (void)integer(c, res, where, "barriers", false);
    text(c, res, where, "source", false);
  }
}

// Statuses whose record carries a passing parity check and a timing: the ones that can be ranked.
bool measured_status(const std::string& s) { return s == "passed" || s == "unsafe"; }

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
  if (const Json* s = object(c, ctx, at, "search", false)) {
    const std::string where = member(at, "search");
    one_of(c, *s, where, "strategy", false, {"exhaustive", "random", "halving", "random+halving", "warm", "warm+halving", "model", "warm+model"});
    (void)integer(c, *s, where, "budget", false);
    // -1: not counted, the space was sampled without enumerating it (schema minor 4).
    (void)integer(c, *s, where, "valid_configurations", false, -1, INT64_MAX);
    (void)number(c, *s, where, "time_budget_s", false, false, Range::kNonNegative);
    boolean(c, *s, where, "stopped_by_time_budget", false);
    boolean(c, *s, where, "interrupted", false);
    // The local search after a warm start or a model (search.warm_start.refine, search.model.refine).
    auto refine_of = [&](const Json& parent, const std::string& parent_at) {
      if (const Json* r = object(c, parent, parent_at, "refine", false))
        for (const char* key : {"top", "rounds", "added"}) (void)integer(c, *r, member(parent_at, "refine"), key, true, 0);
    };
    if (const Json* w = object(c, *s, where, "warm_start", false)) {
      const std::string warm = member(where, "warm_start");
      strings(c, *w, warm, "files", true);
      (void)number(c, *w, warm, "keep", true, false, Range::kPositive);
      (void)integer(c, *w, warm, "promising", true, 0);
      (void)integer(c, *w, warm, "explored", true, 0);
      refine_of(*w, warm);
    }
    if (const Json* m = object(c, *s, where, "model", false)) {
      const std::string model = member(where, "model");
      text(c, *m, model, "library", true);
      for (const char* key : {"initial", "rounds", "added"}) (void)integer(c, *m, model, key, true, 0);
      text(c, *m, model, "stop", true);
      refine_of(*m, model);
    }
  }
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
  if (const Json* s = object(c, ctx, at, "shard", false, true)) {
    const std::string where = member(at, "shard");
    const auto count = integer(c, *s, where, "count", true, 1);
    (void)integer(c, *s, where, "index", true, 0, count - 1);
    one_of(c, *s, where, "split", true, {"items", "variants"});
    const auto items = integer(c, *s, where, "items", true, 1, INT64_MAX);
    (void)integer(c, *s, where, "item", true, 0, items - 1);
    text(c, *s, where, "run_key", true);
    (void)integer(c, *s, where, "variants", false, 0, INT64_MAX);
    (void)integer(c, *s, where, "baseline_index", false, -1, INT64_MAX);
  }
  if (const Json* g = object(c, ctx, at, "gate", false)) {
    const std::string where = member(at, "gate");
    for (const char* k : {"mode", "sanitizer", "sanitizer_version", "note", "could_not_run"}) text(c, *g, where, k, false);
    boolean(c, *g, where, "allow_unchecked", false);
    strings(c, *g, where, "tools", false);
    strings(c, *g, where, "inputs", false);
    for (const char* k : {"launches", "rounds", "gated", "unsafe", "incorrect", "unchecked"})
      (void)integer(c, *g, where, k, false);
    numbers(c, *g, where, {"wall_s", "share_of_run"});
    // Minor 6 (issue 37): the verdict cache and the gate's parts.
    for (const char* k : {"cache", "baseline_rule"}) text(c, *g, where, k, false);
    boolean(c, *g, where, "fresh", false);
    for (const char* k : {"checks", "cache_hits", "cache_misses", "jobs"}) (void)integer(c, *g, where, k, false, 0);
    numbers(c, *g, where, {"outputs_s", "reference_s"});
    for (const char* k : {"tool_s", "finalist_s", "parts_s"})
      if (const Json* m = object(c, *g, where, k, false))
        for (const auto& [name, s] : m->items()) (void)number(c, *m, member(where, k), name.c_str(), false, true, Range::kNonNegative);
  }
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

}  // namespace

void validate_variant_json(const Json& v, const std::string& at, const std::string& remedy) {
  const Check c{remedy};
  if (!v.is_object()) c.fail(at, fmt::format("{} is not an object", brief(v)));
  text(c, v, at, "name", true, true);
  const Json& params = *object(c, v, at, "params", true);
  std::string named;  // a variant's name is its parameters' (Space::name): an edit of one shows in the other
  for (const auto& [k, p] : params.items()) {
    if (!p.is_string() && !p.is_number() && !p.is_boolean())
      c.fail(member(member(at, "params"), k), fmt::format("{} is not a string, number or true/false", brief(p)));
    named += fmt::format("{}{}={}", named.empty() ? "" : ",", k, p.is_string() ? p.get<std::string>() : p.dump());
  }
  if (const auto& name = v.at("name").get_ref<const std::string&>(); name != named)
    c.fail(member(at, "name"), fmt::format("\"{}\" is not the name of its params (\"{}\"); a name and its params are "
                                           "one configuration",
                                           name, named));
  boolean(c, v, at, "baseline", false);
  text(c, v, at, "status", true);
  const std::string& status = v.at("status").get_ref<const std::string&>();
  try {
    (void)status_from_string(status);
  } catch (const InputError&) {
    c.fail(member(at, "status"), fmt::format("\"{}\" is not a status (passed, incorrect, unsafe, compile_failed, "
                                             "launch_failed, crashed, timeout, skipped, compiled, pending)", status));
  }
  text(c, v, at, "reason", false);
  text(c, v, at, "log_excerpt", false);
  numbers(c, v, at, {"compile_seconds", "load_seconds", "first_launch_ms", "evaluate_ms", "parity_ms", "unload_ms"});
  boolean(c, v, at, "compile_cached", false);
  (void)integer(c, v, at, "max_registers", false, -1);
  (void)integer(c, v, at, "spill_bytes", false);
  if (const Json* launches = array(c, v, at, "launches", false))
    for (std::size_t i = 0; i < launches->size(); ++i)
      launch(c, launches->at(i), fmt::format("{}.launches[{}]", at, i), measured_status(status));
  if (const Json* r = object(c, v, at, "resources", false)) resources(c, *r, member(at, "resources"));
  if (const Json* t = object(c, v, at, "throughput", false))
    numbers(c, *t, member(at, "throughput"), {"gigabytes_per_second", "gigaflop_per_second"});

  const bool measured = measured_status(status);
  const Json* p = object(c, v, at, "parity", false, true);
  if (p) parity(c, *p, member(at, "parity"));
  const Json* t = object(c, v, at, "timing", false, true);
  if (t) timing(c, *t, member(at, "timing"), measured);
  if (const Json* s = object(c, v, at, "search_timing", false, true)) timing(c, *s, member(at, "search_timing"), false);
  if (const Json* f = object(c, v, at, "fault", false, true)) fault(c, *f, member(at, "fault"));
  const Json* g = object(c, v, at, "gate", false, true);
  if (g) gate(c, *g, member(at, "gate"));

  // What the status claims must be in the record: a ranked variant passed parity and was timed, and
  // a gate's verdict is the status it left.
  if (measured) {
    if (!t) c.fail(member(at, "timing"), fmt::format("missing, but the status is {} (a timed variant)", status));
    if (!p) c.fail(member(at, "parity"), fmt::format("missing, but the status is {} (parity passed)", status));
    if (const std::string why = parity_failed(*p); !why.empty())
      c.fail(member(at, "parity"), fmt::format("{}, but the status is {}", why, status));
  }
  const std::string verdict = g ? g->at("verdict").get<std::string>() : "";
  if (status == "unsafe" && verdict != "unsafe")
    c.fail(member(at, "gate"), g ? fmt::format("verdict {}, but the status is unsafe", verdict)
                                 : "missing, but the status is unsafe (the gate's findings)");
  if (status == "passed" && (verdict == "unsafe" || verdict == "incorrect"))
    c.fail(member(at, "status"), fmt::format("\"passed\", but the gate's verdict is {}", verdict));
}

namespace {

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

}  // namespace

void validate_torch_record(const Json& json, const std::string& at) {
  const Check c{kRestore};
  if (!json.is_object()) c.fail(at, fmt::format("{} is not an object", brief(json)));
  torch_record(c, json, at);
}

void validate_result_json(const Json& j) {
  const Check c{kRestore};
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

  const Json& variants = *array(c, j, "", "variants", true);
  std::map<std::string, std::size_t> index;
  const Json* baseline = nullptr;
  std::string baseline_at;
  for (std::size_t i = 0; i < variants.size(); ++i) {
    const std::string at = fmt::format("variants[{}]", i);
    const Json& v = variants.at(i);
    validate_variant_json(v, at, kRestore);
    const std::string& name = v.at("name").get_ref<const std::string&>();
    if (const auto [it, fresh] = index.emplace(name, i); !fresh)
      c.fail(at + ".name", fmt::format("\"{}\" is also the name of variants[{}]{}; keep one record per variant", name,
                                       it->second, v == variants.at(it->second) ? "" : ", with different contents"));
    if (v.value("baseline", false)) {
      if (baseline) c.fail(at + ".baseline", fmt::format("true, but {} is the baseline already", baseline_at));
      baseline = &v;
      baseline_at = at;
    }
  }

  const Json& s = *object(c, j, "", "summary", true);
  text(c, s, "summary", "winner_rule", false);
  (void)integer(c, s, "summary", "variants", false, 0, INT64_MAX);
  (void)object(c, s, "summary", "by_status", false);
  const auto named = [&](const char* key) -> const Json* {
    const Json* v = field(c, s, "summary", key, false);
    if (!v || v->is_null()) return nullptr;
    if (!v->is_string()) c.fail(member("summary", key), fmt::format("{} is not a variant name or null", brief(*v)));
    const auto it = index.find(v->get<std::string>());
    if (it == index.end())
      c.fail(member("summary", key), fmt::format("\"{}\" is not among the variants", v->get<std::string>()));
    return &variants.at(it->second);
  };
  const Json* winner = named("winner");
  const Json* base = named("baseline");
  if (base != baseline)
    c.fail("summary.baseline", baseline ? fmt::format("does not name {} (the variant marked baseline)", baseline_at)
                                        : "names a variant that is not marked baseline");
  const auto median = [](const Json* v) { return v->at("timing").at("median_us").get<double>(); };
  if (winner) {
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
      return g.is_object() && g.at("verdict") == "unchecked";
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

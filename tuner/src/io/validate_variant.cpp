// The validation of a variant's record (validate_variant_json), in a results file and in the
// --resume journal: its fields, and what its status claims (a ranked variant passed parity and was
// timed; a gate's verdict is the status it left).
#include <climits>
#include <cstdint>

#include <fmt/format.h>

#include "io/validate_fields.hpp"
#include "tune/dtype.hpp"
#include "tune/errors.hpp"
#include "tune/record.hpp"

namespace tune {
namespace {

// The field checks this validation is made of.
using namespace validate_fields;

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
  one_of(c, g, at, "verdict", true, gate_verdict_names());
  text(c, g, at, "reason", false);
  strings(c, g, at, "tools", false);
  strings(c, g, at, "not_run", false);
  strings(c, g, at, "cached", false);  // minor 6
  if (g.at("verdict") == to_string(GateVerdict::kUnchecked) && g.value("not_run", Json::array()).empty())
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

}  // namespace tune

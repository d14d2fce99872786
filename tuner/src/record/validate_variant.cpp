// The validation of a variant's record (validate_variant_json), in a results file and in the
// --resume journal: its fields (the format's table, walked), and the rules across them (its name its
// params', what its status claims: a ranked variant passed parity and was timed; a gate's verdict
// is the status it left).
#include <cstdint>

#include <fmt/format.h>

#include "record/result_schema.hpp"
#include "record/validate_fields.hpp"
#include "tune/errors.hpp"
#include "tune/record.hpp"

namespace tune {
namespace {

// What this validation is made of.
using namespace validate_fields;

// Why a parity record does not pass the rules it names (empty when it does), as parity_passed
// judges: nothing compared or a non-finite output never passes; the elementwise rule unless the
// rule is "module" and the module rule was applied; the module rule when applied and the rule is
// not "tolerance".
std::string parity_failed(const Json& p) {
  const auto mismatches = p.at("mismatches").get<std::int64_t>();
  const auto elements = p.at("elements").get<std::int64_t>();
  const std::string rule = p.value("rule", "both");
  const bool module_applies = p.contains("module_passed") && p.at("module_passed").is_boolean() && rule != "tolerance";
  if (elements <= 0) return fmt::format("{} of {} outputs mismatched", mismatches, elements);
  // A NaN or Inf never passes (parity_passed).
  if (const auto non_finite = p.at("non_finite").get<std::int64_t>(); non_finite > 0)
    return fmt::format("{} of {} outputs are not finite", non_finite, elements);
  if (module_applies && !p.at("module_passed").get<bool>())
    return fmt::format("the module rule failed (module_passed false, rule {})", rule);
  if (!(module_applies && rule == "module") && mismatches != 0)
    return fmt::format("{} of {} outputs mismatched", mismatches, elements);
  return {};
}

// The quartiles of one sample set are ordered; a hand-edited median breaks the order.
void timing_order(const Check& c, const Json& t, const std::string& at) {
  const char* last = nullptr;
  double last_value = 0;
  for (const char* k : {"min_us", "q1_us", "median_us", "q3_us", "max_us"}) {
    if (!t.contains(k) || t.at(k).is_null()) continue;
    const double x = t.at(k).get<double>();
    if (last && x < last_value * (1 - 1e-9))
      c.fail(member(at, k), fmt::format("{} is below {} ({}); the statistics of one sample set are ordered", brief(t.at(k)),
                                        last, last_value));
    last = k;
    last_value = x;
  }
}

// The member `key` of `v` when it is present and not null.
const Json* present(const Json& v, const char* key) {
  const auto it = v.find(key);
  return it == v.end() || it->is_null() ? nullptr : &*it;
}

// Statuses whose record carries a passing parity check and a timing: the ones that can be ranked.
bool measured_status(const std::string& s) { return s == "passed" || s == "unsafe"; }

// The rules across a variant's fields: its name is its params', what its status claims is in its
// record (a ranked variant passed parity and was timed; a gate's verdict is the status it left).
void variant_rules(const Check& c, const Json& v, const std::string& at, bool measured) {
  std::string named;  // a variant's name is its parameters' (Space::name): an edit of one shows in the other
  for (const auto& [k, p] : v.at("params").items())
    named += fmt::format("{}{}={}", named.empty() ? "" : ",", k, p.is_string() ? p.get<std::string>() : p.dump());
  if (const auto& name = v.at("name").get_ref<const std::string&>(); name != named)
    c.fail(member(at, "name"), fmt::format("\"{}\" is not the name of its params (\"{}\"); a name and its params are "
                                           "one configuration",
                                           name, named));
  const std::string& status = v.at("status").get_ref<const std::string&>();
  const Json* t = present(v, "timing");
  const Json* p = present(v, "parity");
  const Json* g = present(v, "gate");
  if (t) timing_order(c, *t, member(at, "timing"));
  if (const Json* s = present(v, "search_timing")) timing_order(c, *s, member(at, "search_timing"));
  if (g && g->at("verdict") == "unchecked" && g->value("not_run", Json::array()).empty())
    c.fail(member(member(at, "gate"), "not_run"),
           "empty, but the verdict is unchecked (it names the checks that could not run)");
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

}  // namespace

void validate_variant_json(const Json& v, const std::string& at, const std::string& remedy) {
  const Check c{remedy};
  if (!v.is_object()) c.fail(at, fmt::format("{} is not an object", brief(v)));
  // A ranked status's record is walked with the stricter bounds (a sample at least, a positive median,
  // launches of at least one block and thread); the status is walked first.
  const auto st = v.find("status");
  const bool measured = st != v.end() && st->is_string() && measured_status(st->get_ref<const std::string&>());
  result_schema::walk(c, v, "variants[]", at, measured);
  variant_rules(c, v, at, measured);
}

}  // namespace tune

// The one validation of a results file (issue 22, item 11). Every reader of results goes through
// it: run_from_json (so read_result: tune header, merge, check, verify, report) and the --resume
// journal's records (validate_variant_json); the report scripts read through `tune results --json`.
//
// The structural checks (presence, type, enum values, ranges) are the format's table's, walked by
// result_schema::walk (issue 38); this file keeps the rules that read more than one field.
// An error is one line, "<JSON path>: <what is wrong>; <what to do>", and the readers put the file
// in front of it.
#include <cmath>
#include <cstdint>
#include <map>

#include <fmt/format.h>

#include "record/result_schema.hpp"
#include "record/validate_fields.hpp"
#include "tune/errors.hpp"
#include "tune/problem.hpp"
#include "tune/problem_space.hpp"
#include "tune/record.hpp"
#include "tune/winner.hpp"

namespace tune {
namespace {

// What this validation is made of.
using namespace validate_fields;

constexpr const char* kRestore = "restore what tune wrote, or re-tune";
// The widest tie band of the winner rule (pick_winner): a winner further than this above the
// fastest passed variant was not picked by it.
constexpr double kTieBandCap = 0.05;

// The rules of a timed run's device: a compute capability like 9.0, the arch it compiled for.
void device_rules(const Check& c, const Json& j, bool timed) {
  const Json& d = j.at("device");
  if (timed && d.is_null()) c.fail("device", "null in a timed result (the device it was measured on)");
  if (d.is_null()) return;
  const auto& cc = d.at("compute_capability").get_ref<const std::string&>();
  const auto dot = cc.find('.');
  const auto digits = [](const std::string& s) {
    return !s.empty() && s.size() <= 3 && s.find_first_not_of("0123456789") == std::string::npos;
  };
  if (dot == std::string::npos || !digits(cc.substr(0, dot)) || !digits(cc.substr(dot + 1)))
    c.fail("device.compute_capability", fmt::format("\"{}\" does not look like 9.0", cc));
  if (!timed) return;
  // A timed run compiles for its device (arch_name): headers file it under that arch.
  const std::string arch = "sm_" + cc.substr(0, dot) + cc.substr(dot + 1);
  if (j.at("context").at("arch") != arch)
    c.fail("device.compute_capability", fmt::format("\"{}\" is not the device context.arch {} was compiled for", cc,
                                                    j.at("context").at("arch").get<std::string>()));
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

// The shape's dimensions are the problem's (its dtype variables' values are dtype names).
void shape_rules(const Check& c, const Json& j) {
  const Json& s = j.at("shape");
  if (s.empty()) c.fail("shape", "has no dimensions");
  std::vector<std::string> names;
  for (const auto& [k, v] : s.items())
    if (!v.is_string()) names.push_back(k);
  if (const auto dims = problem_dims(j); dims && *dims != names)
    c.fail("shape", fmt::format("has the dimensions {}, but problem {} has {}", fmt::join(names, ", "),
                                j.at("problem").get<std::string>(), fmt::join(*dims, ", ")));
}

// The torch record's rules (issue 36): a skipped or failed one says why; a measured or cached one
// has its times.
void torch_rules(const Check& c, const Json& t, const std::string& at) {
  const std::string& status = t.at("status").get_ref<const std::string&>();
  if ((status == "skipped" || status == "failed") && t.value("reason", "").empty())
    c.fail(member(at, "reason"), fmt::format("empty, but the status is {} (it says why)", status));
  const auto recorded = [&](const char* mode) { return t.contains(mode) && !t.at(mode).is_null(); };
  if ((status == "measured" || status == "cached") && !recorded("eager") && !recorded("compile"))
    c.fail(at, fmt::format("status {}, but neither eager nor compile is recorded", status));
}

// The file's identity, its fields (the schema's walk) and the rules across the run's own fields;
// returns whether it was timed.
bool run_fields(const Check& c, const Json& j) {
  if (!j.is_object()) c.fail("(top level)", "not a JSON object (not a tune result file)");
  if (j.value("kind", Json()) != "tune.result")
    c.fail("kind", fmt::format("{} is not \"tune.result\" (not a tune result file)", brief(j.value("kind", Json()))));
  // Read wide: an int would take 4294967297 for 1.
  const Json& sv = *field(c, j, "", "schema_version", true);
  if (!is_int64(sv) || sv.get<std::int64_t>() != kResultSchemaVersion)
    Check{"regenerate the file with this tune"}.fail("schema_version",
                                                     fmt::format("{} is not supported (this tune reads {})", brief(sv),
                                                                 kResultSchemaVersion));
  result_schema::walk(c, j, "", "");
  shape_rules(c, j);
  const bool timed = j.at("timed").get<bool>();
  device_rules(c, j, timed);
  if (const auto t = j.find("torch"); t != j.end() && !t->is_null()) validate_torch_record(*t, "torch");
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
// A run that went through its gate (schema minor 3 on: context.gate) and was not cut short names a
// winner the gate gave a verdict and the strict re-measure timed: no other variant wins such a run.
void winner_was_gated(const Check& c, const Json& j, const Json& winner) {
  // Members looked up in place: a record's gate and timing objects are not copied for a test.
  const auto member = [](const Json& o, const char* key) -> const Json* {
    const auto it = o.find(key);
    return it != o.end() && it->is_object() ? &*it : nullptr;
  };
  const Json* search = member(j.at("context"), "search");
  if (j.value("schema_minor_version", 0) < 3 || (search && search->value("interrupted", false) == true)) return;
  const std::string& name = winner.at("name").get_ref<const std::string&>();
  if (!member(winner, "gate"))
    c.fail("summary.winner", fmt::format("\"{}\" has no gate verdict; a finished run's winner went through the "
                                         "correctness gate",
                                         name));
  const Json* timing = member(winner, "timing");
  if (!timing || !timing->at("profile").get_ref<const std::string&>().starts_with("strict"))
    c.fail("summary.winner", fmt::format("\"{}\" was not timed by the strict re-measure (timing.profile {}); a "
                                         "finished run's winner was",
                                         name, timing ? timing->at("profile").dump() : "missing"));
}

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
    return g.is_object() && g.at("verdict") == "unchecked";
  };
  // An unchecked variant wins only by consent (--allow-unchecked), which the context records.
  if (unchecked(*winner) && !allow_unchecked)
    c.fail("summary.winner", fmt::format("\"{}\" is unchecked by the gate, but context.gate.allow_unchecked is not "
                                         "true (an unchecked variant wins only with --allow-unchecked)",
                                         name));
  winner_was_gated(c, j, *winner);
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
  result_schema::walk(c, json, "torch", at);
  torch_rules(c, json, at);
}

void validate_result_json(const Json& j) {
  const Check c{kRestore};
  const bool timed = run_fields(c, j);
  const Json& variants = j.at("variants");
  const VariantIndex marked = variant_index(c, variants);

  const Json& s = j.at("summary");
  const auto named = [&](const char* key) -> const Json* {
    const Json* v = field(c, s, "summary", key, false);
    if (!v || v->is_null()) return nullptr;
    const auto it = marked.index.find(v->get<std::string>());
    if (it == marked.index.end())
      c.fail(member("summary", key), fmt::format("\"{}\" is not among the variants", v->get<std::string>()));
    return &variants.at(it->second);
  };
  const Json* winner = named("winner");
  const Json* base = named("baseline");
  if (base != marked.baseline)
    c.fail("summary.baseline", marked.baseline
                                   ? fmt::format("does not name {} (the variant marked baseline)", marked.baseline_at)
                                   : "names a variant that is not marked baseline");
  if (winner) check_winner(c, j, variants, winner, timed);
  if (const auto sp = s.find("speedup_over_baseline"); sp != s.end() && !sp->is_null()) {
    const double speedup = sp->get<double>();
    if (!winner || !base || base->at("status") != "passed")
      c.fail("summary.speedup_over_baseline", "given without a winner and a baseline that passed");
    const double expected = median(base) / median(winner);
    if (!std::isfinite(expected) || std::abs(speedup - expected) > 1e-9 * expected)
      c.fail("summary.speedup_over_baseline",
             fmt::format("{} is not the baseline's median over the winner's ({})", speedup, expected));
  }
}

}  // namespace tune

// The `tolerance` object of a problem file (docs/problem-format.md): the output's parity
// tolerance per dtype, and the module rule for low-precision outputs.
#include <cmath>

#include <fmt/format.h>

#include "problem/json_check.hpp"
#include "tune/errors.hpp"
#include "tune/problem.hpp"

namespace tune {
namespace {

// {atol, rtol} of a dtype when the file gives none: float32 today's 1e-4; bfloat16 and float16
// torch.testing.assert_close's; integers and bool exact.
std::pair<double, double> default_tolerance(DType t) {
  switch (t) {
    case DType::kFloat32:
      return {1e-4, 1e-4};
    case DType::kFloat64:
      return {1e-7, 1e-7};
    case DType::kBFloat16:
      return {1e-5, 1.6e-2};
    case DType::kFloat16:
      return {1e-5, 1e-3};
    default:
      return {0, 0};
  }
}

double allowance(const nlohmann::ordered_json& t, const char* key, const std::string& where, const json_check::Fail& fail) {
  if (!t.contains(key)) return NAN;
  const auto& v = t.at(key);
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0) {
    fail(fmt::format("{}.{} must be a finite number >= 0, not {}", where, key, v.dump()));
    return NAN;
  }
  return v.get<double>();
}

}  // namespace

Tolerance TolerancePolicy::of(DType dtype) const {
  Tolerance t;
  t.dtype = dtype;
  std::tie(t.atol, t.rtol) = default_tolerance(dtype);
  for (const auto& [d, given_pair] : given) {
    if (d != dtype) continue;
    if (!std::isnan(given_pair.first)) t.atol = given_pair.first;
    if (!std::isnan(given_pair.second)) t.rtol = given_pair.second;
  }
  t.module_k = module_k.value_or(2.0);
  t.module_atol = module_atol.value_or(t.atol);
  t.rule = rule;
  return t;
}

TolerancePolicy parse_tolerance(const nlohmann::ordered_json& t, const std::string& file) {
  const json_check::Fail fail = [&](const std::string& why) { throw ConfigError(fmt::format("{}: {}", file, why)); };
  TolerancePolicy p;
  if (!t.is_object()) fail(fmt::format("tolerance must be a JSON object, not {}", t.dump()));
  // Top-level atol/rtol are float32's (the default dtype), as before issue 35.
  const double atol = allowance(t, "atol", "tolerance", fail), rtol = allowance(t, "rtol", "tolerance", fail);
  if (!std::isnan(atol) || !std::isnan(rtol)) p.given.push_back({DType::kFloat32, {atol, rtol}});
  for (const auto& [key, v] : t.items()) {
    if (key == "atol" || key == "rtol" || key == "_comment") continue;
    const std::string where = "tolerance." + key;
    if (key == "rule") {
      if (!v.is_string() || (v != "both" && v != "tolerance" && v != "module"))
        fail(fmt::format("{} must be \"both\", \"tolerance\" or \"module\", not {}", where, v.dump()));
      p.rule = v.get<std::string>();
    } else if (key == "module") {
      json_check::keys(v, {"k", "atol"}, where, fail);
      const double k = allowance(v, "k", where, fail), a = allowance(v, "atol", where, fail);
      if (!std::isnan(k)) p.module_k = k;
      if (!std::isnan(a)) p.module_atol = a;
    } else if (const auto d = parse_dtype(key)) {
      json_check::keys(v, {"atol", "rtol"}, where, fail);
      const std::pair<double, double> given{allowance(v, "atol", where, fail), allowance(v, "rtol", where, fail)};
      for (auto& [have, pair] : p.given)
        if (have == *d && (!std::isnan(pair.first) || !std::isnan(pair.second)))
          fail(fmt::format("{} repeats tolerance.atol/rtol, which are float32's; give float32's in one place", where));
      p.given.push_back({*d, given});
    } else {
      fail(fmt::format("unknown key '{}' (known there: atol, rtol, rule, module, or a dtype: {})", where, dtype_choices()));
    }
  }
  return p;
}

}  // namespace tune

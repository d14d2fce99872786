// The field checks of the validation of results (validate_fields.hpp).
#include "io/validate_fields.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace tune::validate_fields {

const Json* field(const Check& c, const Json& obj, const std::string& at, const char* key, bool required) {
  if (obj.contains(key)) return &obj.at(key);
  if (required) c.fail(member(at, key), "missing");
  return nullptr;
}

const Json* object(const Check& c, const Json& obj, const std::string& at, const char* key, bool required,
                   bool nullable) {
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


void text(const Check& c, const Json& obj, const std::string& at, const char* key, bool required,
          bool non_empty) {
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
                     std::int64_t lo, std::int64_t hi) {
  const Json* v = field(c, obj, at, key, required);
  return v ? integer_value(c, *v, member(at, key), lo, hi) : lo;
}


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
  one_of(c, obj, at, key, required, std::vector<std::string>(allowed.begin(), allowed.end()));
}

void one_of(const Check& c, const Json& obj, const std::string& at, const char* key, bool required,
            const std::vector<std::string>& allowed) {
  text(c, obj, at, key, required);
  if (!obj.contains(key)) return;
  const auto& s = obj.at(key).get_ref<const std::string&>();
  if (std::find(allowed.begin(), allowed.end(), s) != allowed.end()) return;
  c.fail(member(at, key), fmt::format("\"{}\" is not one of {}", s, fmt::join(allowed, ", ")));
}

// A seed: any 64-bit unsigned integer.
void seed(const Check& c, const Json& obj, const std::string& at) {
  const Json& s = *field(c, obj, at, "seed", true);
  if (!s.is_number_unsigned() && !(s.is_number_integer() && s.get<std::int64_t>() >= 0))
    c.fail(member(at, "seed"), fmt::format("{} is not an integer from 0 to 2^64-1", brief(s)));
}

}  // namespace tune::validate_fields

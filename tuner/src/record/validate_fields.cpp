// What the validation of results is made of (validate_fields.hpp).
#include "record/validate_fields.hpp"

namespace tune::validate_fields {

const Json* field(const Check& c, const Json& obj, const std::string& at, const char* key, bool required) {
  if (obj.contains(key)) return &obj.at(key);
  if (required) c.fail(member(at, key), "missing");
  return nullptr;
}

bool is_int64(const Json& v) {
  return v.is_number_integer() && !(v.is_number_unsigned() && v.get<std::uint64_t>() > INT64_MAX);
}

std::int64_t integer_value(const Check& c, const Json& v, const std::string& at, std::int64_t lo, std::int64_t hi) {
  if (!is_int64(v)) c.fail(at, fmt::format("{} is not an integer", brief(v)));
  const auto n = v.get<std::int64_t>();
  if (n < lo || n > hi)
    c.fail(at, hi == INT64_MAX ? fmt::format("{} is below {}", n, lo) : fmt::format("{} is outside {} to {}", n, lo, hi));
  return n;
}

}  // namespace tune::validate_fields

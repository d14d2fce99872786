#pragma once
// What the validation of results is made of (validate.cpp: a run's record; validate_variant.cpp: a
// variant's; result_schema_walk.cpp: the format's table walked over either): a failure is one line,
// "<JSON path>: <what is wrong>; <what to do>".
#include <climits>
#include <cstddef>
#include <cstdint>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/json_file.hpp"
#include "tune/errors.hpp"

namespace tune::validate_fields {

using Json = nlohmann::ordered_json;

struct Check {
  std::string remedy;

  [[noreturn]] void fail(const std::string& at, const std::string& what) const {
    throw InputError(fmt::format("{}: {}; {}", at, what, remedy));
  }
};

inline std::string brief(const Json& v) { return json_file::brief(v, 60); }

inline std::string member(const std::string& at, const std::string& key) { return at.empty() ? key : at + "." + key; }

// The member `key` of the object `obj`, or null when it is absent and not required.
const Json* field(const Check& c, const Json& obj, const std::string& at, const char* key, bool required);

bool is_int64(const Json& v);
// An integer in [lo, hi], read wide (4294967297 is not 1; 64.0 is not an integer).
std::int64_t integer_value(const Check& c, const Json& v, const std::string& at, std::int64_t lo, std::int64_t hi);

// The range of a number (null: a value that was not finite when written, where it may be null).
enum class Range { kAny, kNonNegative, kPositive };

}  // namespace tune::validate_fields

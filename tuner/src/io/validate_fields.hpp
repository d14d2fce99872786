#pragma once
// The field checks the validation of results is made of (validate.cpp: a run's record;
// validate_variant.cpp: a variant's): each reads one member of a JSON object and fails with one line,
// "<JSON path>: <what is wrong>; <what to do>".
#include <climits>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "io/json_file.hpp"
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
const Json* object(const Check& c, const Json& obj, const std::string& at, const char* key, bool required,
                   bool nullable = false);
const Json* array(const Check& c, const Json& obj, const std::string& at, const char* key, bool required);

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
          bool non_empty = false);
void boolean(const Check& c, const Json& obj, const std::string& at, const char* key, bool required);
void strings(const Check& c, const Json& obj, const std::string& at, const char* key, bool required);

bool is_int64(const Json& v);
// An integer in [lo, hi], read wide (4294967297 is not 1; 64.0 is not an integer).
std::int64_t integer_value(const Check& c, const Json& v, const std::string& at, std::int64_t lo, std::int64_t hi);
std::int64_t integer(const Check& c, const Json& obj, const std::string& at, const char* key, bool required,
                     std::int64_t lo = 0, std::int64_t hi = INT_MAX);

enum class Range { kAny, kNonNegative, kPositive };

// A number (null: a value that was not finite when written; allowed only where `nullable`).
std::optional<double> number(const Check& c, const Json& obj, const std::string& at, const char* key, bool required,
                             bool nullable, Range range);
// Optional numbers, each null or not negative.
void numbers(const Check& c, const Json& obj, const std::string& at, std::initializer_list<const char*> keys);
void one_of(const Check& c, const Json& obj, const std::string& at, const char* key, bool required,
            std::initializer_list<const char*> allowed);
// The same, over an enum's record names (to_string's: gate_verdict_names, ...).
void one_of(const Check& c, const Json& obj, const std::string& at, const char* key, bool required,
            const std::vector<std::string>& allowed);
// A seed: any 64-bit unsigned integer.
void seed(const Check& c, const Json& obj, const std::string& at);

}  // namespace tune::validate_fields

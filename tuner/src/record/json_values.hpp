#pragma once
// The value conventions of the results' JSON, shared by its two converters (json.cpp: a variant's
// records; json_run.cpp: a run's context and summary): a value that is not a finite number is
// written as null, and null reads back as NaN, so it round-trips.
#include <cmath>
#include <optional>

#include <nlohmann/json.hpp>

#include "tune/record.hpp"

namespace tune::json_values {

using Json = nlohmann::ordered_json;

inline Json number(double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }
template <typename T>
Json optional_number(const std::optional<T>& v) {
  return v && std::isfinite(static_cast<double>(*v)) ? Json(*v) : Json(nullptr);
}
template <typename T>
std::optional<T> read_optional(const Json& j, const char* key) {
  if (!j.contains(key) || j.at(key).is_null()) return std::nullopt;
  return j.at(key).get<T>();
}
// Null (written for a value that was not a finite number) reads back as NaN, so it round-trips.
inline double read_number(const Json& j, const char* key) {
  if (!j.contains(key)) return 0.0;
  return j.at(key).is_null() ? std::nan("") : j.at(key).get<double>();
}

// A variant's record from its JSON, which validate_variant_json checked; throws Json::exception
// (variant_from_json, the public reader, makes it an InputError).
VariantRecord variant_from(const Json& j);

}  // namespace tune::json_values

#pragma once
// Small checks for the readers of problem files: unknown keys are refused with their path.
#include <functional>
#include <initializer_list>
#include <set>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace tune::json_check {

using Fail = std::function<void(const std::string&)>;

// `obj` must be an object whose keys are all in `allowed` (or "_comment", a note ignored
// anywhere); `where` is its path ("tensors[2]").
inline void keys(const nlohmann::ordered_json& obj, std::initializer_list<const char*> allowed, const std::string& where,
                 const Fail& fail) {
  if (!obj.is_object()) {
    fail(where + " must be a JSON object");
    return;
  }
  for (const auto& [k, v] : obj.items()) {
    bool known = k == "_comment";
    for (const char* a : allowed) known = known || k == a;
    if (!known) fail(fmt::format("unknown key '{}.{}' (known there: {})", where, k, fmt::join(allowed, ", ")));
  }
}

// Every top-level key of a problem file (problem keys and search-space keys): a space file given
// with --config may hold any of them.
inline const std::set<std::string>& problem_file_keys() {
  static const std::set<std::string> keys{"schema_version", "problem",     "description",   "template", "include_dirs",
                                          "reference",      "golden",      "tolerance",     "shape",    "tensors",
                                          "edits",          "edge_cases",  "deterministic", "work",     "parameters",
                                          "derived",        "constraints", "launches",      "scratch",  "baseline",
                                          "dtypes"};
  return keys;
}

inline std::string string(const nlohmann::ordered_json& obj, const char* key, const std::string& where, const Fail& fail) {
  if (!obj.is_object() || !obj.contains(key) || !obj.at(key).is_string()) {
    fail(fmt::format("{} needs '{}', a string", where, key));
    return {};
  }
  return obj.at(key).get<std::string>();
}

}  // namespace tune::json_check

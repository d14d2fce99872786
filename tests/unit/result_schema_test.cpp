// Issue 38, item 2: one schema drives the results validator. The table is well formed, its status
// values are tune's statuses, and the validator refuses what the table says it refuses: each
// required field removed, each enum given a value outside it, each integer past its bound.
#include <algorithm>
#include <climits>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "record/result_schema.hpp"
#include "tune/errors.hpp"
#include "tune/record.hpp"

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;
using tune::result_schema::Field;
using tune::result_schema::Kind;

const Json& fixture() {
  static const Json j = [] {
    std::ifstream f(fs::path(TUNE_REPO_DIR) / "tests/fixtures/results/contact_B4_N64_C64_H32.json");
    return Json::parse(f);
  }();
  return j;
}

const Field* entry(std::string_view path) {
  for (const Field& f : tune::result_schema::fields())
    if (f.path == path) return &f;
  return nullptr;
}

// The entry's parent path: "a.b[]" -> "a.b", "a.b.c" -> "a.b", "a" -> "".
std::string_view parent_of(std::string_view path) {
  if (path.ends_with("[]")) return path.substr(0, path.size() - 2);
  const auto dot = path.rfind('.');
  return dot == std::string_view::npos ? std::string_view() : path.substr(0, dot);
}

TEST(ResultSchema, EveryEntryHangsOffAnObjectOrArrayBeforeIt) {
  for (const Field& f : tune::result_schema::fields()) {
    const std::string_view parent = parent_of(f.path);
    if (!parent.empty()) {
      const Field* p = entry(parent);
      ASSERT_NE(p, nullptr) << f.path;
      EXPECT_LT(p, &f) << f.path << " comes before its parent";
      EXPECT_EQ(p->kind, f.path.ends_with("[]") ? Kind::kArray : Kind::kObject) << f.path;
    }
    if (!f.like.empty()) {
      EXPECT_NE(entry(f.like), nullptr) << f.path << " is like a missing " << f.like;
    }
    if (!f.below.empty()) {
      const Field* sibling = entry(std::string(parent) + "." + std::string(f.below));
      ASSERT_NE(sibling, nullptr) << f.path;
      EXPECT_LT(sibling, &f) << f.path << " is bounded by a sibling checked after it";
    }
    EXPECT_FALSE(f.about.empty()) << f.path;
  }
}

std::vector<std::string> sorted_names(std::string_view values) {
  std::vector<std::string> out;
  for (std::size_t start = 0; start <= values.size();) {
    const auto end = std::min(values.find(", ", start), values.size());
    out.emplace_back(values.substr(start, end - start));
    start = end + 2;
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(ResultSchema, StatusValuesAreTunesStatuses) {
  const Field* status = entry("variants[].status");
  ASSERT_NE(status, nullptr);
  std::string names;
  for (int s = 0; s <= static_cast<int>(tune::Status::kUnsafe); ++s)
    names += (names.empty() ? "" : ", ") + tune::to_string(static_cast<tune::Status>(s));
  EXPECT_EQ(sorted_names(status->values), sorted_names(names));
}

// The fixture's value at a table path ("[]": its first item, "*": its first member), with the
// JSON path a message names; null when the fixture does not have it.
Json* locate(Json& doc, std::string_view path, std::string& at) {
  Json* node = &doc;
  at.clear();
  std::size_t start = 0;
  while (start < path.size()) {
    auto end = path.find('.', start);
    if (end == std::string_view::npos) end = path.size();
    std::string_view part = path.substr(start, end - start);
    const bool items = part.ends_with("[]");
    if (items) part.remove_suffix(2);
    std::string key(part);
    if (key == "*") {
      if (!node->is_object() || node->empty()) return nullptr;
      key = node->begin().key();
    }
    if (!node->is_object() || !node->contains(key) || node->at(key).is_null()) return nullptr;
    node = &node->at(key);
    at += (at.empty() ? "" : ".") + key;
    if (items) {
      if (!node->is_array() || node->empty()) return nullptr;
      node = &node->at(0);
      at += "[0]";
    }
    start = end + 1;
  }
  return node;
}

std::string refusal(const Json& doc) {
  try {
    tune::validate_result_json(doc);
  } catch (const tune::InputError& e) {
    return e.what();
  }
  return "(valid)";
}

TEST(ResultSchema, TheValidatorRefusesWhatTheTableRefuses) {
  ASSERT_EQ(refusal(fixture()), "(valid)");
  int checked = 0;
  for (const Field& f : tune::result_schema::fields()) {
    if (f.kind == Kind::kRule || f.path.ends_with("[]") || f.path.ends_with("*")) continue;
    Json doc = fixture();
    std::string where, parent_at;
    if (!locate(doc, f.path, where)) continue;
    const std::string_view parent_path = parent_of(f.path);
    Json& parent = *locate(doc, parent_path, parent_at);
    const std::string key(f.path.substr(parent_path.empty() ? 0 : parent_path.size() + 1));
    if (f.required) {
      Json removed = fixture();
      locate(removed, parent_path, parent_at)->erase(key);
      EXPECT_EQ(refusal(removed).rfind(where + ": missing;", 0), 0u) << refusal(removed);
      ++checked;
    }
    if (f.kind == Kind::kEnum) {
      parent[key] = "no-such-value";
      EXPECT_EQ(refusal(doc).rfind(where + ": \"no-such-value\" is not ", 0), 0u) << refusal(doc);
      ++checked;
    } else if (f.kind == Kind::kInteger && f.hi == INT_MAX && f.below.empty() && !f.ranked) {
      parent[key] = std::int64_t{INT_MAX} + 1;
      EXPECT_EQ(refusal(doc).rfind(where + ": 2147483648 is outside", 0), 0u) << refusal(doc);
      ++checked;
    }
  }
  EXPECT_GT(checked, 40);
}

}  // namespace

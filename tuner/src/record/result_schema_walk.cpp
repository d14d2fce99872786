// The walk of the results format's table (result_schema.hpp) over a record, and the table as
// markdown. The messages are validate_fields.hpp's: "<JSON path>: <what is wrong>; <what to do>".
#include <cmath>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "record/result_schema.hpp"
#include "tune/dtype.hpp"

namespace tune::result_schema {
namespace {

using validate_fields::brief;
using validate_fields::Check;
using validate_fields::Json;
using validate_fields::member;
using validate_fields::Range;

struct Child {
  const Field* field;
  std::string key;
};

// An entry's contents: its fields, its array's items, its map's members.
struct Node {
  std::vector<Child> fields;
  const Field* items = nullptr;
  const Field* members = nullptr;
};

using Index = std::unordered_map<std::string_view, Node>;

Index build_index() {
  Index index;
  index.emplace("", Node{});
  for (const Field& f : fields()) {
    index.try_emplace(f.path);
    if (f.path.ends_with("[]")) {
      index[f.path.substr(0, f.path.size() - 2)].items = &f;
      continue;
    }
    const auto dot = f.path.rfind('.');
    const std::string_view parent = dot == std::string_view::npos ? std::string_view() : f.path.substr(0, dot);
    const std::string_view key = dot == std::string_view::npos ? f.path : f.path.substr(dot + 1);
    if (key == "*")
      index[parent].members = &f;
    else
      index[parent].fields.push_back({&f, std::string(key)});
  }
  return index;
}

const Node& node_of(std::string_view path) {
  static const Index index = build_index();
  return index.at(path);
}

std::string_view contents_of(const Field& f) { return f.like.empty() ? f.path : f.like; }

void value(const Check& c, const Json& v, const Json& parent, const Field& f, const std::string& at, bool ranked);

void object_fields(const Check& c, const Json& obj, const Node& n, const std::string& at, bool ranked) {
  for (const Child& child : n.fields) {
    const auto it = obj.find(child.key);
    if (it == obj.end()) {
      if (child.field->required) c.fail(member(at, child.key), "missing");
      continue;
    }
    value(c, *it, obj, *child.field, member(at, child.key), ranked && child.field->ranked);
  }
  if (n.members)
    for (const auto& [key, v] : obj.items()) value(c, v, obj, *n.members, member(at, key), ranked && n.members->ranked);
}

void array_items(const Check& c, const Json& a, const Field& f, const std::string& at, bool ranked) {
  if (f.size && a.size() != f.size) c.fail(at, fmt::format("{} does not hold {} sizes", brief(a), f.size));
  const Field* items = node_of(contents_of(f)).items;
  for (std::size_t i = 0; items && i < a.size(); ++i)
    value(c, a.at(i), a, *items, fmt::format("{}[{}]", at, i), ranked && items->ranked);
}

void number(const Check& c, const Json& v, const Field& f, const std::string& at, bool ranked) {
  if (v.is_null()) {
    if (!f.nullable || ranked) c.fail(at, "null is not a number");
    return;
  }
  if (!v.is_number()) c.fail(at, fmt::format("{} is not a number", brief(v)));
  const double x = v.get<double>();
  if (!std::isfinite(x)) c.fail(at, fmt::format("{} is not a finite number", brief(v)));
  const Range range = ranked ? Range::kPositive : f.range;
  if (range == Range::kPositive && !(x > 0)) c.fail(at, fmt::format("{} is not a positive number", brief(v)));
  if (range == Range::kNonNegative && x < 0) c.fail(at, fmt::format("{} is negative", brief(v)));
}

void integer(const Check& c, const Json& v, const Json& parent, const Field& f, const std::string& at, bool ranked) {
  const std::int64_t hi = f.below.empty() ? f.hi : parent.at(std::string(f.below)).get<std::int64_t>() - 1;
  (void)validate_fields::integer_value(c, v, at, ranked ? 1 : f.lo, hi);
}

// A name among `allowed` (", "-separated).
void name_in(const Check& c, const Json& v, const Field& f, const std::string& at, bool known) {
  if (!v.is_string()) c.fail(at, fmt::format("{} is not a string", brief(v)));
  if (known) return;
  const std::string choices = allowed(f);
  const auto& s = v.get_ref<const std::string&>();
  c.fail(at, f.noun.empty() ? fmt::format("\"{}\" is not one of {}", s, choices)
                            : fmt::format("\"{}\" is not a {} ({})", s, f.noun, choices));
}

bool among(std::string_view values, const std::string& s) {
  for (std::size_t start = 0; start <= values.size();) {
    const auto end = std::min(values.find(", ", start), values.size());
    if (values.substr(start, end - start) == s) return true;
    start = end + 2;
  }
  return false;
}

bool known_name(const Json& v, const Field& f) {
  if (!v.is_string()) return false;
  const auto& s = v.get_ref<const std::string&>();
  return f.kind == Kind::kDtype ? parse_dtype(s).has_value() : among(allowed(f), s);
}

void text(const Check& c, const Json& v, const Field& f, const std::string& at) {
  if (!v.is_string()) c.fail(at, fmt::format("{} is not a string", brief(v)));
  if (f.non_empty && v.get_ref<const std::string&>().empty()) c.fail(at, "is empty");
}

void dimension(const Check& c, const Json& v, const std::string& at) {
  if (v.is_string()) {
    if (!parse_dtype(v.get_ref<const std::string&>()))
      c.fail(at, fmt::format("{} is not a dtype ({})", brief(v), dtype_choices()));
    return;
  }
  (void)validate_fields::integer_value(c, v, at, 1, INT64_MAX);
}

void value(const Check& c, const Json& v, const Json& parent, const Field& f, const std::string& at, bool ranked) {
  if (v.is_null() && f.nullable && f.kind != Kind::kNumber) return;
  switch (f.kind) {
    case Kind::kObject:
      if (!v.is_object()) c.fail(at, fmt::format("{} is not an object", brief(v)));
      if (!f.apart) object_fields(c, v, node_of(contents_of(f)), at, ranked);
      return;
    case Kind::kArray:
      if (!v.is_array()) c.fail(at, fmt::format("{} is not an array", brief(v)));
      return array_items(c, v, f, at, ranked);
    case Kind::kString:
      return text(c, v, f, at);
    case Kind::kBoolean:
      if (!v.is_boolean()) c.fail(at, fmt::format("{} is not true or false", brief(v)));
      return;
    case Kind::kInteger:
      return integer(c, v, parent, f, at, ranked);
    case Kind::kNumber:
      return number(c, v, f, at, ranked);
    case Kind::kEnum:
    case Kind::kDtype:
      return name_in(c, v, f, at, known_name(v, f));
    case Kind::kSeed:
      if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<std::int64_t>() >= 0))
        c.fail(at, fmt::format("{} is not an integer from 0 to 2^64-1", brief(v)));
      return;
    case Kind::kScalar:
      if (!v.is_string() && !v.is_number() && !v.is_boolean())
        c.fail(at, fmt::format("{} is not a string, number or true/false", brief(v)));
      return;
    case Kind::kDimension:
      return dimension(c, v, at);
    case Kind::kSize:
      if (!v.is_number_integer() || v.get<std::int64_t>() < 0)
        c.fail(at, fmt::format("{} is not a size (an integer >= 0)", brief(v)));
      return;
    case Kind::kVariantName:
      if (!v.is_null() && !v.is_string()) c.fail(at, fmt::format("{} is not a variant name or null", brief(v)));
      return;
    case Kind::kRule:
      return;
  }
}

}  // namespace

void walk(const Check& c, const Json& node, std::string_view path, const std::string& at, bool ranked) {
  object_fields(c, node, node_of(path), at, ranked);
}

}  // namespace tune::result_schema

// The results format's table (result_schema.hpp) as the markdown table of docs/results-format.md.
#include <algorithm>

#include <fmt/format.h>

#include "record/result_schema.hpp"
#include "tune/dtype.hpp"
#include "tune/record.hpp"

namespace tune::result_schema {
namespace {

std::string bound(std::int64_t n) {
  if (n == INT_MAX) return "2^31-1";
  if (n == INT_MIN) return "-2^31";
  if (n == UINT32_MAX) return "2^32-1";
  return std::to_string(n);
}

std::string type_of(const Field& f) {
  std::string t;
  switch (f.kind) {
    case Kind::kObject:
      t = f.like.empty() ? "object" : fmt::format("object as `{}`", f.like);
      break;
    case Kind::kArray:
      t = f.size ? fmt::format("array of {}", f.size) : "array";
      break;
    case Kind::kString:
      t = f.non_empty ? "string, not empty" : "string";
      break;
    case Kind::kBoolean:
      t = "true/false";
      break;
    case Kind::kInteger:
    case Kind::kSeed:
    case Kind::kSize:
      t = "integer";
      break;
    case Kind::kNumber:
      t = "number";
      break;
    case Kind::kEnum:
    case Kind::kDtype:
      t = "string";
      break;
    case Kind::kScalar:
      t = "string, number or true/false";
      break;
    case Kind::kDimension:
      t = "integer, or a dtype's name";
      break;
    case Kind::kVariantName:
      t = "a variant's name";
      break;
    case Kind::kRule:
      t = "constant";
      break;
  }
  return f.nullable || f.kind == Kind::kVariantName ? t + " or null" : t;
}

std::string names(std::string_view values) {
  std::string out;
  for (std::size_t start = 0; start <= values.size();) {
    const auto end = std::min(values.find(", ", start), values.size());
    out += fmt::format("{}`{}`", out.empty() ? "" : ", ", values.substr(start, end - start));
    start = end + 2;
  }
  return out;
}

std::string number_range(const Field& f) {
  const std::string r = f.range == validate_fields::Range::kPositive      ? "> 0"
                        : f.range == validate_fields::Range::kNonNegative ? ">= 0"
                                                                          : "any";
  return f.ranked ? r + "; > 0, not null when ranked" : r;
}

std::string values_of(const Field& f) {
  switch (f.kind) {
    case Kind::kInteger: {
      const std::string hi = f.below.empty() ? bound(f.hi) : fmt::format("{} - 1", f.below);
      const std::string r = f.hi == INT64_MAX ? fmt::format(">= {}", f.lo) : fmt::format("{} to {}", bound(f.lo), hi);
      return f.ranked ? r + "; >= 1 when ranked" : r;
    }
    case Kind::kNumber:
      return number_range(f);
    case Kind::kEnum:
    case Kind::kRule:
    case Kind::kDtype:
      return names(allowed(f));
    case Kind::kSeed:
      return "0 to 2^64-1";
    case Kind::kDimension:
      return ">= 1, or a dtype's name";
    case Kind::kSize:
      return ">= 0";
    case Kind::kVariantName:
      return "one of `variants`";
    default:
      return "";
  }
}

// The minor version a field dates from: its own, or its parent's where that is later (the fields of
// `torch` came with it, in 7).
int since_of(const Field& f) {
  const auto dot = f.path.ends_with("[]") ? f.path.size() - 2 : f.path.rfind('.');
  if (dot == std::string_view::npos) return f.since;
  for (const Field& p : fields())
    if (p.path == f.path.substr(0, dot)) return std::max(f.since, since_of(p));
  return f.since;
}

}  // namespace

std::string markdown() {
  std::string out =
      "| Field | Type | Required | Minor | Values | About |\n"
      "|---|---|---|---|---|---|\n";
  for (const Field& f : fields())
    out += fmt::format("| `{}` | {} | {} | {} | {} | {} |\n", f.path, type_of(f), f.required ? "yes" : "", since_of(f),
                       values_of(f), f.about);
  return out;
}

}  // namespace tune::result_schema

namespace tune {

std::string result_schema_doc() { return result_schema::markdown(); }

}  // namespace tune

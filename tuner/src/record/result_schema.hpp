#pragma once
// The results format as data (issue 38): each field's path, type, whether it is required, the
// schema_minor_version that added it, its allowed values or range, and one line about it. The
// validator walks this table for the structural checks (presence, type, enum values, ranges);
// validate.cpp and validate_variant.cpp keep by hand only the rules that read more than one field.
// `tune results --schema-doc` prints it as the table of docs/results-format.md.
#include <climits>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "record/validate_fields.hpp"

namespace tune::result_schema {

enum class Kind {
  kObject,  // its fields are the entries under its path (or under `like`'s)
  kArray,   // its items are the entry `<path>[]`
  kString,
  kBoolean,
  kInteger,      // in [lo, hi], read wide
  kNumber,       // finite, in `range`; null only where nullable (a value not finite when written)
  kEnum,         // a string among `values` (", "-separated)
  kDtype,        // a dtype's name (dtype.hpp)
  kSeed,         // an integer from 0 to 2^64-1
  kScalar,       // a string, number or true/false (a parameter's value)
  kDimension,    // an integer >= 1, or a dtype variable's dtype name
  kSize,         // an integer >= 0 (a tensor's extent)
  kVariantName,  // a variant's name or null (which variant: a rule of validate.cpp)
  kRule,         // checked by hand before the walk (the file's identity: kind, schema_version)
};

struct Field {
  std::string_view path;  // "context.search.budget"; "[]": an array's items; "*": each member of a map
  Kind kind;
  bool required = false;
  int since = 0;  // the schema_minor_version that added it
  bool nullable = false;
  bool non_empty = false;
  std::int64_t lo = 0;
  std::int64_t hi = INT_MAX;
  validate_fields::Range range = validate_fields::Range::kNonNegative;
  std::string_view values = {};                   // kEnum: the allowed values; kRule: the value
  std::vector<std::string> (*names)() = nullptr;  // kEnum: the allowed values, an enum's name table instead
  std::string_view noun = {};   // kEnum, kDtype: refused as "is not a <noun> (<values>)", else "is not one of"
  std::string_view below = {};  // kInteger: at most this sibling's value minus 1
  std::size_t size = 0;         // kArray: exactly this many items (0: any)
  bool ranked = false;          // a ranked variant's (passed, unsafe): at least 1; a positive number, not null
  bool apart = false;           // its contents are validated on their own (a variant, the torch record)
  std::string_view like = {};   // kObject: the fields of another entry's object
  std::string_view about = {};
};

// The table, parents before their fields, in the order the validator checks them.
std::span<const Field> fields();
// A kEnum's or kDtype's allowed values, ", "-separated (names, values or the dtypes); kRule's value.
std::string allowed(const Field& f);

// The structural checks of the table on `node`, the value of the entry `path` ("" for the
// file's top level, "variants[]" for a variant, "torch"), at the JSON path `at`. `ranked`: the node
// is a ranked variant's record (the entries marked ranked check the stricter bound).
void walk(const validate_fields::Check& c, const validate_fields::Json& node, std::string_view path, const std::string& at,
          bool ranked = false);

// The table as markdown, as docs/results-format.md holds it.
std::string markdown();

}  // namespace tune::result_schema

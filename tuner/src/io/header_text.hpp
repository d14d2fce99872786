#pragma once
// Text for generated C++ headers: names, comments and string literals from data.
#include <cctype>
#include <string>

#include "tune/space.hpp"

namespace tune {

namespace header_text {

// "tile_i" -> "kTileI"
inline std::string constant_name(const std::string& name) {
  std::string out = "k";
  bool upper = true;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) {
      upper = true;
      continue;
    }
    out += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    upper = false;
  }
  return out;
}

// A C++ identifier of a name: every character that is not a letter or digit becomes '_'.
inline std::string identifier(const std::string& name) {
  std::string out;
  for (char c : name) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return out;
}

// Text that cannot end a /* */ comment or start a new line.
inline std::string comment_safe(std::string s) {
  for (std::size_t p = 0; (p = s.find("*/", p)) != std::string::npos;) s.replace(p, 2, "* /");
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  return s;
}

// A C++ string literal of s: quotes and backslashes escaped, line breaks made spaces.
inline std::string c_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += (c == '\n' || c == '\r') ? ' ' : c;
  }
  return out + "\"";
}

}  // namespace header_text

// The prelude, the Limits, LaunchGeometry and Geometry types and `constexpr Geometry
// geometry(const Shape&, const Params&, const Limits&)` of a merged header, generated from the
// space's expressions (Shape and Params must be declared before it). Throws InputError when an
// expression has no constexpr translation.
std::string geometry_code(const Space& space);

}  // namespace tune

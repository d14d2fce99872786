#pragma once
// Text for generated C++ headers: names, comments and string literals from data.
#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "core/expr.hpp"
#include "tune/dtype.hpp"
#include "tune/hash.hpp"
#include "tune/problem.hpp"
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

// Words a generated name may not be: C++ and Python keywords (the names become namespaces, struct
// members, Python modules and torch ops); the one list is space::keyword_kind's, which problem
// files are checked against.
inline bool reserved_word(const std::string& s) { return !space::keyword_kind(s).empty(); }

// A C++ (and Python) identifier of a name: every character that is not a letter or digit becomes
// '_'; a name that starts with a digit gets "p_" before it, a keyword '_' after it (2mm: p_2mm,
// class: class_). Distinct names may meet (a-b, a_b): a caller emitting several checks that.
inline std::string identifier(const std::string& name) {
  std::string out;
  for (char c : name) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out.front()))) out = "p_" + out;
  if (reserved_word(out)) out += '_';
  return out;
}

// The header's name of a dtype: DType::bfloat16 (bool: DType::bool_, a keyword otherwise).
inline std::string dtype_enumerator(DType t) { return "DType::" + identifier(std::string(dtype_name(t))); }

// Text for a // or /* */ comment: it cannot end the comment, start a new line, or continue the line
// onto the next one (a backslash before the line break), and holds no control characters.
inline std::string comment_safe(std::string s) {
  for (std::size_t p = 0; (p = s.find("*/", p)) != std::string::npos;) s.replace(p, 2, "* /");
  for (std::size_t p = 0; (p = s.find("?\?/", p)) != std::string::npos;) s.replace(p, 3, "?\? /");  // a trigraph backslash
  for (char& c : s)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  while (!s.empty() && s.back() == ' ') s.pop_back();
  if (!s.empty() && s.back() == '\\') s += '.';  // a backslash then the line break would splice the next line in
  return s;
}

// A C++ string literal of s: quotes and backslashes escaped, line breaks made spaces, every other
// control character (NUL included) an octal escape of three digits (so a digit after it stays a
// character of its own), and "??" written "?\?" (no trigraph).
inline std::string c_string(const std::string& s) {
  std::string out = "\"";
  for (std::size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n' || c == '\r') {
      out += ' ';
    } else if (c < 0x20 || c == 0x7f) {
      out += '\\';
      out += static_cast<char>('0' + ((c >> 6) & 7));
      out += static_cast<char>('0' + ((c >> 3) & 7));
      out += static_cast<char>('0' + (c & 7));
    } else {
      if (c == '?' && i > 0 && s[i - 1] == '?') out += '\\';
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

// The lines that set macros of the including code aside while a header's code compiles, and those
// that bring them back after it. A problem's dimension, dtype variable or parameter is a name its
// author chose, often one letter (B, N, T) that a user's code may also #define (`#define B 4`):
// expanded in `long long B;` it would break the header with a page of errors about code the user
// never wrote. push_macro/pop_macro (GCC, Clang, MSVC, nvcc, NVRTC) keep the user's macro for the
// user's code after the header.
struct MacroGuards {
  std::string push, pop;
};

inline MacroGuards macro_guards(std::vector<std::string> names) {
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  MacroGuards g;
  if (names.empty()) return g;
  g.push =
      "// The problem's names (dimensions, dtype variables, parameters) as this header's code names them: a\n"
      "// macro of yours of such a name is set aside while it compiles, and stands again after it.\n";
  for (const auto& n : names) {
    g.push += "#pragma push_macro(\"" + n + "\")\n#undef " + n + "\n";
    g.pop += "#pragma pop_macro(\"" + n + "\")\n";
  }
  g.push += "\n";
  return g;
}

// A generated header's code `body` in its namespaces: tune_tuned::<problem>, then an inline namespace
// named by the hash of `body`, after a preprocessor guard. Two headers of one problem from other
// results declare the same names (select, kEntries, kBlock) with other values: in two translation
// units of one program the linker would keep one definition of each, and a unit would select from
// the other unit's entries, silently (the one-definition rule). In namespaces of their own they stay
// apart, and tune_tuned::<problem>::select still names each. Two in one translation unit are refused
// in one line by the guard, `TUNE_TUNED_<kind>_<problem>` (defined to the hash), which then skips
// the code: the compiler would give a page of redefinitions or ambiguities. `kind`: HEADER (tune
// header) or RESULT (the header a run writes beside its results). `user_names`: the identifiers of
// the body that the problem's author chose (its name, dimensions, dtype variables, parameters), each
// set aside as a macro while the body compiles (macro_guards).
inline std::string in_problem_namespace(const std::string& problem, const std::string& kind, const std::string& body,
                                        const std::vector<std::string>& user_names = {}) {
  const std::string ns = identifier(problem);
  const std::string hash = content_hash({body}).substr(0, 15);  // 60 bits: a positive #if integer
  const std::string macro = "TUNE_TUNED_" + kind + "_" + ns;
  const std::string what = kind == "HEADER"
                               ? "a second tuned header of problem " + ns + ", from other results, in one translation unit"
                               : "two results' headers (<shape>.hpp) of problem " + ns + " in one translation unit";
  std::string h;
  h += "// One header of these results per problem and translation unit. Other results' headers of the\n"
       "// problem, in other translation units of the program, keep to namespaces of their own (inline:\n"
       "// tune_tuned::" +
       ns + ":: names each).\n";
  h += "#if defined(" + macro + ") && " + macro + " != 0x" + hash + "\n";
  h += "#error \"tune_tuned::" + ns + ": " + what + "; merge the results into one header with tune header\"\n";
  h += "#else\n#define " + macro + " 0x" + hash + "\n\n";
  const MacroGuards guards = macro_guards(user_names);
  h += guards.push;
  h += "namespace tune_tuned {\nnamespace " + ns + " {\ninline namespace v" + hash + " {\n\n";
  h += body;
  h += "\n}  // namespace v" + hash + "\n}  // namespace " + ns + "\n}  // namespace tune_tuned\n";
  h += guards.pop;
  h += "#endif\n";
  return h;
}

}  // namespace header_text

// The prelude, the Limits, LaunchGeometry and Geometry types and `constexpr Geometry
// geometry(const Shape&, const Params&, const Limits&)` of a merged header, generated from the
// space's expressions (Shape and Params must be declared before it; with dtype variables, also DType
// and dtype_bytes: a variable is its dtype's number, <variable>_bytes its size). Throws InputError
// when an expression has no constexpr translation.
std::string geometry_code(const Space& space, const std::vector<DTypeVariable>& dtype_variables = {});

}  // namespace tune

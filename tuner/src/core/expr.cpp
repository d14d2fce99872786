#include "core/expr.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>
#include <stdexcept>

#include <fmt/format.h>
#include <muParser.h>

namespace tune::space {
namespace {

double remainder_op(double a, double b) {
  const auto x = static_cast<long long>(std::llround(a));
  const auto y = static_cast<long long>(std::llround(b));
  return y == 0 ? std::nan("") : static_cast<double>(x % y);
}
double cdiv(double a, double b) { return b == 0 ? std::nan("") : std::ceil(a / b); }
double floor_fn(double a) { return std::floor(a); }
double not_op(double a) { return a == 0 ? 1.0 : 0.0; }
double ispow2(double a) {
  const auto x = static_cast<long long>(std::llround(a));
  return (x > 0 && (x & (x - 1)) == 0) ? 1.0 : 0.0;
}

// What every expression knows before the space names anything: our operators, functions and the
// constants true and false, over muParser's own (sin, min, _pi, ...).
void define_builtins(mu::Parser& p) {
  p.DefineOprt("%", remainder_op, mu::prMUL_DIV, mu::oaLEFT, true);
  p.DefineInfixOprt("!", not_op);
  p.DefineFun("cdiv", cdiv);
  p.DefineFun("floor", floor_fn);
  p.DefineFun("ispow2", ispow2);
  p.DefineConst("true", 1.0);
  p.DefineConst("false", 0.0);
}

// A name a space may give (a dimension, parameter, derived value or string value): an identifier
// that is not a built-in constant. A string value "true" would otherwise redefine `true` in every
// expression, and a parameter named "true" clash with it in each. A name of a built-in function
// is fine: muParser tells `ln` from `ln(x)` by the parenthesis (contact has a parameter `ln`).
void check_name(const std::string& name) {
  static const std::set<std::string> constants = [] {
    mu::Parser p;
    define_builtins(p);
    std::set<std::string> out;
    for (const auto& [n, v] : p.GetConst()) out.insert(n);
    return out;
  }();
  const bool identifier =
      !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) &&
      name.find_first_not_of("0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") == std::string::npos;
  if (!identifier)
    throw std::invalid_argument(
        fmt::format("'{}' is not a name expressions can use (letters, digits and _, not "
                    "starting with a digit); rename it",
                    name));
  if (constants.count(name))
    throw std::invalid_argument(
        fmt::format("'{}' is a built-in constant of expressions ({}); rename it", name, fmt::join(constants, ", ")));
  constexpr std::size_t kLongestName = 100;  // muParser's MaxLenIdentifier: a longer name is refused in use
  if (name.size() > kLongestName)
    throw std::invalid_argument(
        fmt::format("'{}...' is {} characters long, more than the {} a name of expressions may "
                    "have; shorten it",
                    name.substr(0, 20), name.size(), kLongestName));
}

}  // namespace

std::string keyword_kind(const std::string& name) {
  // C++20's keywords and alternative tokens, and Python 3's hard keywords (None, True, False among them).
  static const std::set<std::string>
      cpp{"alignas",     "alignof",   "and",        "and_eq",    "asm",      "auto",         "bitand",
          "bitor",       "bool",      "break",      "case",      "catch",    "char",         "char8_t",
          "char16_t",    "char32_t",  "class",      "compl",     "concept",  "const",        "consteval",
          "constexpr",   "constinit", "const_cast", "continue",  "co_await", "co_return",    "co_yield",
          "decltype",    "default",   "delete",     "do",        "double",   "dynamic_cast", "else",
          "enum",        "explicit",  "export",     "extern",    "false",    "float",        "for",
          "friend",      "goto",      "if",         "inline",    "int",      "long",         "mutable",
          "namespace",   "new",       "noexcept",   "not",       "not_eq",   "nullptr",      "operator",
          "or",          "or_eq",     "private",    "protected", "public",   "register",     "reinterpret_cast",
          "requires",    "return",    "short",      "signed",    "sizeof",   "static",       "static_assert",
          "static_cast", "struct",    "switch",     "template",  "this",     "thread_local", "throw",
          "true",        "try",       "typedef",    "typeid",    "typename", "union",        "unsigned",
          "using",       "virtual",   "void",       "volatile",  "wchar_t",  "while",        "xor",
          "xor_eq"};
  static const std::set<std::string> python{"False",  "None",   "True",    "and",      "as",       "assert", "async",
                                            "await",  "break",  "class",   "continue", "def",      "del",    "elif",
                                            "else",   "except", "finally", "for",      "from",     "global", "if",
                                            "import", "in",     "is",      "lambda",   "nonlocal", "not",    "or",
                                            "pass",   "raise",  "return",  "try",      "while",    "with",   "yield"};
  if (cpp.count(name)) return "a C++ keyword";
  if (python.count(name)) return "a Python keyword";
  return {};
}

std::vector<std::string> unknown_names(const std::string& text, const std::function<bool(const std::string&)>& known_name) {
  mu::Parser p;
  define_builtins(p);
  std::vector<std::string> out;
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (!std::isalpha(c) && c != '_') {
      // A number's digits and exponent (1e5) are not names.
      if (std::isdigit(c) || c == '.')
        while (i < text.size() && (std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
      else
        ++i;
      continue;
    }
    std::size_t end = i;
    while (end < text.size() && (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_')) ++end;
    const std::string name = text.substr(i, end - i);
    std::size_t next = text.find_first_not_of(" \t", end);
    const bool call = next != std::string::npos && text[next] == '(';
    const bool known = known_name(name) || p.GetConst().count(name) || (call && p.GetFunDef().count(name));
    if (!known && std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
    i = end;
  }
  return out;
}

std::size_t VariableTable::declare(const std::string& name) {
  check_name(name);
  if (const std::string kind = keyword_kind(name); !kind.empty())
    throw std::invalid_argument(
        fmt::format("'{}' is {}, which the generated headers and packages cannot use as a name; "
                    "rename it",
                    name, kind));
  if (slots_.count(name) || constants_.count(name)) throw std::invalid_argument("'" + name + "' is defined twice");
  const std::size_t slot = slots_.size();
  if (slot >= values_->size())
    throw std::invalid_argument(
        fmt::format("more than {} names (dimensions, parameters, derived values and the device's "
                    "limits together)",
                    values_->size()));
  slots_.emplace(name, slot);
  return slot;
}

void VariableTable::define_constant(const std::string& name, double value) {
  check_name(name);
  auto it = constants_.find(name);
  if (slots_.count(name) || (it != constants_.end() && it->second != value))
    throw std::invalid_argument("'" + name + "' names two different things");
  constants_[name] = value;
}

bool VariableTable::has(const std::string& name) const { return slots_.count(name) > 0; }

std::size_t VariableTable::slot(const std::string& name) const {
  auto it = slots_.find(name);
  if (it == slots_.end()) throw std::invalid_argument("unknown variable '" + name + "'");
  return it->second;
}

struct Expression::Impl {
  mu::Parser parser;
};

Expression::Expression(const std::string& text, const VariableTable& table) : text_(text), impl_(std::make_unique<Impl>()) {
  try {
    auto& p = impl_->parser;
    define_builtins(p);
    for (const auto& [name, value] : table.constants()) p.DefineConst(name, value);
    for (const auto& [name, slot] : table.names()) p.DefineVar(name, table.address(slot));
    p.SetExpr(text);
    (void)p.Eval();  // parses now, so syntax errors and unknown names surface at load time
  } catch (const mu::Parser::exception_type& e) {
    throw std::invalid_argument(e.GetMsg());
  }
}

Expression::Expression(Expression&&) noexcept = default;
Expression& Expression::operator=(Expression&&) noexcept = default;
Expression::~Expression() = default;

bool Expression::is_constant() const { return impl_->parser.GetUsedVar().empty(); }

std::vector<std::string> Expression::variables() const {
  std::vector<std::string> names;
  for (const auto& [name, address] : impl_->parser.GetUsedVar()) names.push_back(name);
  return names;
}

double Expression::eval() const {
  try {
    return impl_->parser.Eval();
  } catch (const mu::Parser::exception_type& e) {
    throw std::invalid_argument("'" + text_ + "': " + e.GetMsg());
  }
}

}  // namespace tune::space

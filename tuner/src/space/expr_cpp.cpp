#include "space/expr_cpp.hpp"

#include <cctype>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

namespace tune::space {
namespace {

// Binary operators and their muParser precedence (muParserDef.h: prLOR 1, prLAND 2, prCMP 4,
// prADD_SUB 5, prMUL_DIV 6, prPOW 7); the infix signs (-, +, !) bind at prINFIX (6), so they take
// a power expression as their operand and apply before a following * / %.
struct BinaryOp {
  const char* text;
  int precedence;
  bool right;
};
constexpr BinaryOp kBinary[] = {{"||", 1, false}, {"&&", 2, false}, {"<=", 4, false}, {">=", 4, false}, {"!=", 4, false},
                                {"==", 4, false}, {"<", 4, false},  {">", 4, false},  {"+", 5, false},  {"-", 5, false},
                                {"*", 6, false},  {"/", 6, false},  {"%", 6, false},  {"^", 7, true}};
constexpr int kPowerPrecedence = 7;

// Functions with a constexpr translation: name, arguments (-1: one or more), C++ helper.
struct Function {
  const char* name;
  int arity;
  const char* cpp;
};
constexpr Function kFunctions[] = {{"cdiv", 2, "detail::cdiv"},     {"floor", 1, "detail::floor_"},
                                   {"ispow2", 1, "detail::ispow2"}, {"abs", 1, "detail::abs_"},
                                   {"sign", 1, "detail::sign"},     {"rint", 1, "detail::rint"},
                                   {"min", -1, "detail::min_"},     {"max", -1, "detail::max_"},
                                   {"sum", -1, "detail::sum"},      {"avg", -1, "detail::avg"}};

class Translator {
 public:
  Translator(const std::string& text, const std::function<std::optional<std::string>(const std::string&)>& resolve)
      : text_(text), resolve_(resolve) {}

  std::string translate() {
    std::string out = ternary();
    skip_space();
    if (pos_ != text_.size()) fail(fmt::format("unexpected '{}' at position {}", text_.substr(pos_, 8), pos_ + 1));
    return out;
  }

 private:
  const std::string& text_;
  const std::function<std::optional<std::string>(const std::string&)>& resolve_;
  std::size_t pos_ = 0;

  [[noreturn]] void fail(const std::string& what) const {
    throw std::invalid_argument(fmt::format("'{}': {}", text_, what));
  }

  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }

  bool take(std::string_view token) {
    skip_space();
    if (text_.compare(pos_, token.size(), token) != 0) return false;
    pos_ += token.size();
    return true;
  }

  void expect(std::string_view token) {
    if (!take(token)) fail(fmt::format("expected '{}' at position {}", token, pos_ + 1));
  }

  std::string ternary() {
    std::string condition = binary(1);
    if (!take("?")) return condition;
    std::string then = ternary();
    expect(":");
    std::string otherwise = ternary();
    return fmt::format("(({}) != 0.0 ? ({}) : ({}))", condition, then, otherwise);
  }

  // The binary operator at the cursor with at least `min` precedence (the longest text first).
  const BinaryOp* peek_binary(int min) {
    skip_space();
    for (const auto& op : kBinary) {
      const std::string_view t = op.text;
      if (text_.compare(pos_, t.size(), t) != 0) continue;
      // "<" is not "<=", "!" alone is not "!=": kBinary lists the two-character operators first.
      return op.precedence >= min ? &op : nullptr;
    }
    return nullptr;
  }

  std::string binary(int min) {
    std::string lhs = unary();
    while (const BinaryOp* op = peek_binary(min)) {
      pos_ += std::string_view(op->text).size();
      std::string rhs = binary(op->right ? op->precedence : op->precedence + 1);
      lhs = apply(op->text, lhs, rhs);
    }
    return lhs;
  }

  static std::string apply(std::string_view op, const std::string& a, const std::string& b) {
    if (op == "||") return fmt::format("((({}) != 0.0 || ({}) != 0.0) ? 1.0 : 0.0)", a, b);
    if (op == "&&") return fmt::format("((({}) != 0.0 && ({}) != 0.0) ? 1.0 : 0.0)", a, b);
    if (op == "+" || op == "-" || op == "*") return fmt::format("(({}) {} ({}))", a, op, b);
    if (op == "/") return fmt::format("detail::div({}, {})", a, b);
    if (op == "%") return fmt::format("detail::mod({}, {})", a, b);
    if (op == "^") return fmt::format("detail::pow_({}, {})", a, b);
    return fmt::format("(({}) {} ({}) ? 1.0 : 0.0)", a, op, b);  // comparisons
  }

  std::string unary() {
    skip_space();
    if (pos_ < text_.size() && (text_[pos_] == '-' || text_[pos_] == '+' || text_[pos_] == '!') &&
        text_.compare(pos_, 2, "!=") != 0) {
      const char sign = text_[pos_++];
      std::string operand = binary(kPowerPrecedence);
      if (sign == '-') return fmt::format("(-({}))", operand);
      if (sign == '!') return fmt::format("detail::not_({})", operand);
      return operand;
    }
    return primary();
  }

  std::string primary() {
    skip_space();
    if (pos_ >= text_.size()) fail("ends where a value was expected");
    const char c = text_[pos_];
    if (c == '(') {
      ++pos_;
      std::string inner = ternary();
      expect(")");
      return "(" + inner + ")";
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') return number();
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') return name();
    fail(fmt::format("unexpected '{}' at position {}", c, pos_ + 1));
  }

  std::string number() {
    const std::size_t start = pos_;
    while (pos_ < text_.size() && (std::isdigit(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '.')) ++pos_;
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      std::size_t p = pos_ + 1;
      if (p < text_.size() && (text_[p] == '+' || text_[p] == '-')) ++p;
      if (p < text_.size() && std::isdigit(static_cast<unsigned char>(text_[p]))) {
        pos_ = p;
        while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
      }
    }
    std::string literal = text_.substr(start, pos_ - start);
    std::size_t used = 0;
    try {
      (void)std::stod(literal, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != literal.size()) fail(fmt::format("'{}' is not a number", literal));
    // A double literal in C++: "4" -> "4.0", ".5" -> "0.5".
    if (literal.front() == '.') literal = std::string("0") + literal;
    if (literal.find_first_of(".eE") == std::string::npos) literal += ".0";
    return literal;
  }

  std::string name() {
    const std::size_t start = pos_;
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) ++pos_;
    const std::string id = text_.substr(start, pos_ - start);
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == '(') {
      ++pos_;
      return call(id);
    }
    if (auto resolved = resolve_(id)) return "(" + *resolved + ")";
    if (id == "true") return "1.0";
    if (id == "false") return "0.0";
    fail(fmt::format("unknown name '{}'", id));
  }

  std::string call(const std::string& id) {
    const Function* f = nullptr;
    for (const auto& candidate : kFunctions)
      if (id == candidate.name) f = &candidate;
    if (!f) fail(fmt::format("function '{}' has no constexpr C++ translation (use cdiv, floor, min, max, abs, ispow2)", id));
    std::vector<std::string> args;
    if (!take(")")) {
      do {
        args.push_back(ternary());
      } while (take(","));
      expect(")");
    }
    if ((f->arity >= 0 && static_cast<int>(args.size()) != f->arity) || args.empty())
      fail(fmt::format("{} takes {} argument(s), not {}", id, f->arity >= 0 ? std::to_string(f->arity) : "one or more",
                       args.size()));
    return fmt::format("{}({})", f->cpp, fmt::join(args, ", "));
  }
};

}  // namespace

std::string expression_to_cpp(const std::string& text,
                              const std::function<std::optional<std::string>(const std::string&)>& resolve) {
  return Translator(text, resolve).translate();
}

std::string cpp_expression_prelude() {
  return R"(// The functions of the space's expressions, on doubles as tune evaluates them (muParser).
namespace detail {
constexpr double nan() { return __builtin_nan(""); }
constexpr double inf() { return __builtin_inf(); }
constexpr bool finite(double x) { return x == x && x < inf() && x > -inf(); }
constexpr double div(double a, double b) { return b != 0.0 ? a / b : (a > 0.0 ? inf() : (a < 0.0 ? -inf() : nan())); }
constexpr double floor_(double x) {
  if (!finite(x) || x >= 9.0e18 || x <= -9.0e18) return x;
  const double t = static_cast<double>(static_cast<long long>(x));
  return t > x ? t - 1.0 : t;
}
constexpr double ceil_(double x) {
  if (!finite(x) || x >= 9.0e18 || x <= -9.0e18) return x;
  const double t = static_cast<double>(static_cast<long long>(x));
  return t < x ? t + 1.0 : t;
}
constexpr double cdiv(double a, double b) { return b == 0.0 ? nan() : ceil_(div(a, b)); }
// llround: half away from zero.
constexpr long long round_(double x) {
  return x >= 0.0 ? static_cast<long long>(x + 0.5) : -static_cast<long long>(-x + 0.5);
}
constexpr double mod(double a, double b) {
  if (!finite(a) || !finite(b) || a >= 9.0e18 || a <= -9.0e18 || b >= 9.0e18 || b <= -9.0e18) return nan();
  const long long y = round_(b);
  return y == 0 ? nan() : static_cast<double>(round_(a) % y);
}
constexpr double not_(double a) { return a == 0.0 ? 1.0 : 0.0; }
constexpr double ispow2(double a) {
  if (!finite(a) || a >= 9.0e18 || a <= -9.0e18) return 0.0;
  const long long x = round_(a);
  return (x > 0 && (x & (x - 1)) == 0) ? 1.0 : 0.0;
}
constexpr double abs_(double a) { return a >= 0.0 ? a : -a; }
constexpr double sign(double a) { return a > 0.0 ? 1.0 : (a < 0.0 ? -1.0 : 0.0); }
// rint as muParser defines it: floor(a + 0.5).
constexpr double rint(double a) { return floor_(a + 0.5); }
// Integer exponents by repeated multiplication: exact while the value is an integer below 2^53;
// other exponents give NaN.
constexpr double pow_(double a, double b) {
  if (b != floor_(b) || b > 1024.0 || b < -1024.0) return nan();
  double r = 1.0;
  for (long long i = 0; i < static_cast<long long>(b < 0.0 ? -b : b); ++i) r *= a;
  return b < 0.0 ? div(1.0, r) : r;
}
constexpr double min_(double a) { return a; }
template <class... T>
constexpr double min_(double a, double b, T... rest) { return min_(b < a ? b : a, rest...); }  // std::min
constexpr double max_(double a) { return a; }
template <class... T>
constexpr double max_(double a, double b, T... rest) { return max_(a < b ? b : a, rest...); }  // std::max
template <class... T>
constexpr double sum(T... x) { return (0.0 + ... + x); }
template <class... T>
constexpr double avg(T... x) { return sum(x...) / static_cast<double>(sizeof...(T)); }
}  // namespace detail
)";
}

}  // namespace tune::space

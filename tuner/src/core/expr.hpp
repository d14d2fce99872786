#pragma once
// Expressions of a search space (muParser), bound to one table of named variables.
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tune::space {

// Names are declared once; values are set before evaluating. Not thread-safe: one owner.
class VariableTable {
 public:
  // Returns the slot of a new variable; throws std::invalid_argument for a duplicate.
  std::size_t declare(const std::string& name);
  void define_constant(const std::string& name, double value);
  [[nodiscard]] bool has(const std::string& name) const;
  [[nodiscard]] std::size_t slot(const std::string& name) const;
  void set(std::size_t slot, double value) { values_->at(slot) = value; }
  [[nodiscard]] double get(std::size_t slot) const { return values_->at(slot); }
  [[nodiscard]] const std::map<std::string, std::size_t>& names() const { return slots_; }
  [[nodiscard]] const std::map<std::string, double>& constants() const { return constants_; }
  [[nodiscard]] double* address(std::size_t slot) const { return &values_->at(slot); }

 private:
  // Stable addresses: muParser keeps pointers to the values.
  std::unique_ptr<std::vector<double>> values_ = std::make_unique<std::vector<double>>(std::vector<double>(256));
  std::map<std::string, std::size_t> slots_;
  std::map<std::string, double> constants_;
};

// The names in `text` that are neither `known` nor built-ins of expressions (for a message that says which).
[[nodiscard]] std::vector<std::string> unknown_names(const std::string& text,
                                                     const std::function<bool(const std::string&)>& known);

// "a C++ keyword" or "a Python keyword" when `name` is one (generated headers and packages use the
// names of a problem as identifiers), else empty.
[[nodiscard]] std::string keyword_kind(const std::string& name);

class Expression {
 public:
  // Throws std::invalid_argument with muParser's message on a syntax error or unknown name.
  Expression(const std::string& text, const VariableTable& table);
  Expression(Expression&&) noexcept;
  Expression& operator=(Expression&&) noexcept;
  ~Expression();
  [[nodiscard]] double eval() const;
  [[nodiscard]] const std::string& text() const { return text_; }
  // True when it names no variable (its value is known before any shape is bound).
  [[nodiscard]] bool is_constant() const;
  // The variables it names.
  [[nodiscard]] std::vector<std::string> variables() const;

 private:
  struct Impl;
  std::string text_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tune::space

#pragma once
// A problem shape: named integer dimensions in the problem's own order (B, N, C, H, ...), and the
// values of the problem's dtype variables (T = bfloat16), in the problem's order.
#include <climits>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tune/dtype.hpp"

namespace tune {

// A dtype variable's value where the shape options travel as integers (--T bfloat16 among --B 4:
// TuneOptions::dims, sweep items): a code no dimension can have (dimensions are positive).
[[nodiscard]] constexpr std::int64_t dtype_flag_value(DType t) {
  return INT64_MIN + static_cast<std::int64_t>(static_cast<int>(t));
}
// The dtype of such a value; nullopt for any other integer.
[[nodiscard]] constexpr std::optional<DType> dtype_of_flag_value(std::int64_t v) {
  const std::uint64_t code = static_cast<std::uint64_t>(v) - static_cast<std::uint64_t>(INT64_MIN);  // wraps, defined
  if (code > static_cast<std::uint64_t>(DType::kBool)) return std::nullopt;
  return static_cast<DType>(code);
}

class Shape {
 public:
  Shape() = default;
  explicit Shape(std::vector<std::pair<std::string, std::int64_t>> dims) : dims_(std::move(dims)) {}

  // Throws InputError naming the dimension when it is absent.
  [[nodiscard]] std::int64_t at(std::string_view name) const;
  [[nodiscard]] bool has(std::string_view name) const;
  void set(std::string_view name, std::int64_t value);
  [[nodiscard]] const std::vector<std::pair<std::string, std::int64_t>>& dims() const { return dims_; }
  // Dtype variables: throws InputError naming the variable when it is absent.
  [[nodiscard]] DType dtype(std::string_view name) const;
  [[nodiscard]] bool has_dtype(std::string_view name) const;
  void set_dtype(std::string_view name, DType value);
  // The dtype variables in `order` (the problem's), any other after them: one shape, one tag and one
  // equality, whichever were given on the command line first.
  void order_dtypes(const std::vector<std::string>& order);
  [[nodiscard]] const std::vector<std::pair<std::string, DType>>& dtypes() const { return dtypes_; }
  // "B4_N64_C64_H32": the file stem of the shape's results. With one dtype variable its value
  // follows unless it is float32 ("B2_N512_C64_H32_bfloat16": every file of a float32 problem keeps
  // its name); with several, each as <variable><dtype> ("M64_Tbfloat16_Ufloat32").
  [[nodiscard]] std::string tag() const;
  // "B=4 N=64 C=64 H=32 T=bfloat16": for messages.
  [[nodiscard]] std::string describe() const;
  friend bool operator==(const Shape&, const Shape&) = default;

 private:
  std::vector<std::pair<std::string, std::int64_t>> dims_;
  std::vector<std::pair<std::string, DType>> dtypes_;
};

}  // namespace tune

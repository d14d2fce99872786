#pragma once
// The `dtypes` key of a problem file (issue 35): dtype variables, read the same way by the problem
// (tensors, inits, edits, work) and by the search space (constraints, derived values, launches).
// In an expression a dtype variable is its dtype's code, every dtype name is a constant of its code
// (`T == bfloat16`), and `<T>_bytes` is its element size.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/expr.hpp"
#include "problem/json_check.hpp"
#include "tune/problem.hpp"

namespace tune::dtype_vars {

// The `dtypes` object of the file (empty when absent); fails one line for a bad name or value.
[[nodiscard]] std::vector<DTypeVariable> parse(const nlohmann::ordered_json& file, const json_check::Fail& fail);

// Declares each variable and its `_bytes` in `table` (the slots, in pairs: variable, bytes) and the
// dtype names as constants when there is any variable; a clash fails one line naming both.
[[nodiscard]] std::vector<std::size_t> declare(const std::vector<DTypeVariable>& vars, space::VariableTable& table,
                                               const json_check::Fail& fail);

// Sets the slots `declare` returned to the shape's dtypes (a variable the shape lacks: its default).
void bind(const std::vector<DTypeVariable>& vars, const std::vector<std::size_t>& slots, const Shape& shape,
          space::VariableTable& table);

// The dtype of variable `v` at `shape`: the shape's, else the default; nullopt when neither.
[[nodiscard]] std::optional<DType> value(const DTypeVariable& v, const Shape& shape);

// The code of a dtype in expressions.
[[nodiscard]] inline double code(DType t) { return static_cast<double>(static_cast<int>(t)); }

}  // namespace tune::dtype_vars

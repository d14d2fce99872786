// The parsed problem.json, shared by its readers (problem.cpp: the file, dims, work, reference;
// problem_tensors.cpp: tensors, inits and data; problem_edits.cpp: edits and edge cases) and its
// checks of a shape (problem_checks.cpp).
#pragma once

#include <cmath>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "core/expr.hpp"
#include "problem/dtype_vars.hpp"
#include "problem/init.hpp"
#include "tune/errors.hpp"
#include "tune/problem.hpp"

namespace tune {

namespace problem_file {

using Json = nlohmann::ordered_json;

enum class Role { kParameter, kInput, kOutput };

enum class InitKind {
  kNone,
  kNormal,
  kUniform,
  kLinear,
  kLayerNormWeight,
  kLayerNormBias,
  kConstant,
  kBernoulli,
  kIndex,
  kIntegers
};

struct Init {
  InitKind kind = InitKind::kNone;
  double a = 0, b = 1;                      // normal: mean, std; uniform, integers: low, high; constant: a; bernoulli: p = a
  std::optional<space::Expression> fan_in;  // linear; index: its `high`
};

// Float inits draw real numbers: they need a floating tensor; index and integers an integer one.
inline bool float_init(InitKind k) {
  return k == InitKind::kNormal || k == InitKind::kUniform || k == InitKind::kLinear || k == InitKind::kLayerNormWeight ||
         k == InitKind::kLayerNormBias;
}

// Empty when the tensor's dtype holds `v` as written (floating: finite within its range; integers
// and bool: an integer within its range); else what to say after "which ...".
inline std::string beyond(DType d, double v, const std::string& tensor) {
  const std::string n(dtype_name(d));
  if (is_floating(d)) {
    if (std::abs(v) <= dtype_max(d)) return {};
    return fmt::format("makes tensor '{}' non-finite in {}; give a finite value within {}", tensor, n, n);
  }
  if (held_exactly(d, v)) return {};  // an integer within range (int64: +-2^53, every integer a double)
  return fmt::format("tensor '{}' ({}) cannot hold; give an integer within [{}, {}]", tensor, n, dtype_lowest(d),
                     dtype_max(d));
}

struct TensorDef {
  std::string name;
  Role role = Role::kInput;
  std::vector<space::Expression> shape;
  DType dtype = DType::kFloat32;
  std::optional<std::size_t> dtype_var;  // its dtype is this dtype variable's (then `dtype` is unused)
  Init init;
};

struct Edit {
  std::string where;  // its path in the file: "edits[2]", "edge_cases[1].edits[0]"
  std::size_t tensor = 0;
  bool parity_only = false;
  std::optional<space::Expression> when;
  std::vector<std::pair<std::size_t, space::Expression>> loops;  // variable slot, bound
  std::vector<space::Expression> index;
  std::optional<space::Expression> value;
};

// An edge case's operation on one tensor: every element x becomes (fill, else x) * scale + offset,
// computed in float64 and rounded to float32 once.
struct TensorSet {
  std::string where;  // "edge_cases[1].set.pair_repr"
  std::size_t tensor = 0;
  std::optional<double> fill;
  double scale = 1, offset = 0;
};

struct EdgeCase {
  std::string name;
  std::optional<space::Expression> when;
  std::vector<TensorSet> sets;
  std::vector<Edit> edits;
};

}  // namespace problem_file

struct Problem::Impl {
  using Json = problem_file::Json;
  using Role = problem_file::Role;
  using InitKind = problem_file::InitKind;
  using Init = problem_file::Init;
  using TensorDef = problem_file::TensorDef;
  using Edit = problem_file::Edit;
  using TensorSet = problem_file::TensorSet;
  using EdgeCase = problem_file::EdgeCase;

  std::filesystem::path file;
  Json json;
  std::string name, description;
  std::vector<std::string> dims;
  std::vector<std::size_t> dim_slots;
  std::vector<DTypeVariable> dtype_vars;
  std::vector<std::size_t> dtype_slots;     // variable, <variable>_bytes: two per dtype variable
  mutable std::vector<DType> bound_dtypes;  // each dtype variable's value at the bound shape (under mutex)
  TolerancePolicy tolerance;
  std::vector<TensorDef> tensors;
  std::size_t output = 0;
  std::vector<Edit> edits;
  std::vector<EdgeCase> edge_cases;
  bool deterministic = true;
  std::optional<space::Expression> flop, bytes;
  std::string flop_text, bytes_text;
  std::string builtin;
  std::optional<std::filesystem::path> python;
  std::filesystem::path golden;
  mutable space::VariableTable table;
  mutable std::mutex mutex;                    // one variable table for every expression
  mutable std::set<std::string> bound_shapes;  // shapes check_bound passed (under mutex)

  [[noreturn]] void fail(const std::string& what) const { throw ConfigError(file.string() + ": " + what); }

  // An expression of the file; `dims_only`: it may name the dims and nothing else the table holds
  // (a tensor's shape, a work count), or an edit's loop variables too.
  space::Expression expression(const Json& j, const std::string& where, bool dims_only = false) const {
    if (!j.is_string() && !j.is_number_integer()) fail(where + " must be an expression string or an integer");
    const std::string text = j.is_string() ? j.get<std::string>() : j.dump();
    const auto unknown = space::unknown_names(text, [&](const std::string& n) {
      if (table.constants().count(n) || is_dtype_name(n)) return true;
      return dims_only ? std::find(dims.begin(), dims.end(), n) != dims.end() : table.has(n);
    });
    if (!unknown.empty())
      fail(fmt::format("{}: '{}' uses '{}', which is not a dimension (dims: {}){}", where, text, unknown.front(),
                       fmt::join(dims, ", "), dims_only ? "" : " or a loop variable of an edit"));
    try {
      return space::Expression(text, table);
    } catch (const std::invalid_argument& e) {
      fail(fmt::format("{} '{}': {}", where, text, e.what()));
    }
  }

  // A dtype variable or its `_bytes`: known in every expression.
  bool is_dtype_name(const std::string& n) const {
    return std::any_of(dtype_vars.begin(), dtype_vars.end(),
                       [&](const DTypeVariable& v) { return n == v.name || n == v.name + "_bytes"; });
  }

  // A `when`: NaN is false, as a constraint's is (docs/problem-format.md).
  static bool holds(const space::Expression& e) {
    const double v = e.eval();
    return !std::isnan(v) && v != 0;
  }

  void bind(const Shape& shape) const {
    for (std::size_t d = 0; d < dims.size(); ++d) table.set(dim_slots[d], static_cast<double>(shape.at(dims[d])));
    dtype_vars::bind(dtype_vars, dtype_slots, shape, table);
    bound_dtypes.clear();
    for (const DTypeVariable& v : dtype_vars) bound_dtypes.push_back(dtype_vars::value(v, shape).value_or(v.values.front()));
  }

  // A tensor's dtype at the bound shape.
  DType dtype_of(const TensorDef& t) const { return t.dtype_var ? bound_dtypes.at(*t.dtype_var) : t.dtype; }
  // Every dtype the tensor may have (its variable's values).
  std::vector<DType> possible_dtypes(const TensorDef& t) const {
    return t.dtype_var ? dtype_vars[*t.dtype_var].values : std::vector<DType>{t.dtype};
  }

  std::int64_t integer(const space::Expression& e, const std::string& where) const {
    const double v = e.eval();
    if (!std::isfinite(v) || v != std::floor(v) || std::abs(v) > 9.0e15)
      fail(fmt::format("{} '{}' gives {}, not an integer", where, e.text(), v));
    return static_cast<std::int64_t>(v);
  }

  TensorSpec spec(const TensorDef& t) const {
    TensorSpec s{t.name, {}};
    s.dtype = dtype_of(t);
    for (std::size_t i = 0; i < t.shape.size(); ++i) {
      const std::int64_t n = integer(t.shape[i], fmt::format("tensor '{}' shape[{}]", t.name, i));
      if (n < 0) fail(fmt::format("tensor '{}' shape[{}] '{}' is negative ({})", t.name, i, t.shape[i].text(), n));
      s.shape.push_back(n);
    }
    return s;
  }

  std::vector<TensorSpec> specs(const Shape& shape, Role role) const {
    const std::lock_guard lock(mutex);
    bind(shape);
    std::vector<TensorSpec> out;
    for (const auto& t : tensors)
      if (t.role == role) out.push_back(spec(t));
    return out;
  }

  // What a shape binds, checked once per shape (check_shape): tensor sizes, work counts, every
  // edit's loops, indices and values, and the edge cases' values; throws ShapeError or ConfigError.
  void check_bound(const Shape& shape) const;
  void check_sizes(const Shape& shape) const;
  void check_work(const Shape& shape) const;
  void check_data(const Shape& shape) const;
  // The elements of tensor t at the bound shape; throws ShapeError past kMaxElements.
  std::int64_t elements(const TensorDef& t, const Shape& shape) const;
  // The lowest and highest value an init draws (an index init: its caller, from the shape).
  static std::pair<double, double> init_range(const Init& init);
  // Each element an edit writes, with its value (checked finite and within float32), at the bound
  // shape; `what` names the tensor for messages.
  void for_each_write(const Edit& e, const std::vector<std::int64_t>& shape, const std::string& what, DType dtype,
                      const std::function<void(std::int64_t, double)>& write) const;
  // The readers of the file's parts, in the order load() calls them (each expression may name only
  // what was declared before it).
  void read(const std::filesystem::path& problem_file);
  void parse_dims();
  std::vector<std::string> declare_loop_variables();
  void declare_loops(const Json& list, const std::string& where, std::vector<std::string>& loop_names);
  void parse_tensors();
  void parse_edits(const std::vector<std::string>& loop_names);
  void parse_tensor(const Json& j, std::size_t i);
  void parse_dtype_of(const Json& j, const std::string& where, TensorDef& t) const;
  void check_init(const TensorDef& t, const std::string& where) const;
  void parse_work();
  void parse_reference();
  void check_name() const;
  // `where` is the edit's path; the top-level edits take a `purpose`, an edge case's edits do not.
  Edit parse_edit(const Json& j, const std::string& where, const std::vector<std::string>& loop_names, bool top_level);
  void parse_edge_case(const Json& j, std::size_t i, const std::vector<std::string>& loop_names);
  // A tensor's draw at the bound shape.
  init::Draw draw_of(const TensorDef& t) const;
  // An index init's `high` at the bound shape: an integer >= 1 that the tensor's dtype holds.
  std::int64_t index_high(const TensorDef& t) const;
  void apply(const Edit& e, HostTensor& t) const;
  void apply(const TensorSet& s, HostTensor& t) const;
  // Every parameter and input of `seed` at `shape` (outputs left empty), indexed as `tensors`; the
  // expressions under the lock, the values outside it in parallel; and the same regrouped as ProblemData.
  std::vector<HostTensor> draw_all(const Shape& shape, std::uint64_t seed, DataPurpose purpose) const;
  ProblemData pack(std::vector<HostTensor> drawn) const;
};

}  // namespace tune

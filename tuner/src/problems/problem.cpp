// A problem read from its folder (docs/problem-format.md): dims, tensors, seeded data, edits,
// tolerance, work counts and the reference. The search-space keys of the same file are Space's.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>
#include <fstream>
#include <iterator>
#include <limits>
#include <mutex>
#include <optional>
#include <ranges>
#include <set>
#include <span>

#include <fmt/format.h>

#include "io/json_file.hpp"
#include "problems/dtype_vars.hpp"
#include "problems/init.hpp"
#include "problems/json_check.hpp"
#include "problems/python_reference.hpp"
#include "space/expr.hpp"
#include "tune/errors.hpp"
#include "tune/journal.hpp"
#include "tune/problem.hpp"
#include "tune/rng.hpp"

namespace tune {
namespace {

using Json = nlohmann::ordered_json;

enum class Role { kParameter, kInput, kOutput };

enum class InitKind { kNone, kNormal, kUniform, kLinear, kLayerNormWeight, kLayerNormBias, kConstant, kBernoulli, kIndex, kIntegers };

struct Init {
  InitKind kind = InitKind::kNone;
  double a = 0, b = 1;  // normal: mean, std; uniform, integers: low, high; constant: a; bernoulli: p = a
  std::optional<space::Expression> fan_in;  // linear; index: its `high`
};

// Float inits draw real numbers: they need a floating tensor; index and integers an integer one.
bool float_init(InitKind k) {
  return k == InitKind::kNormal || k == InitKind::kUniform || k == InitKind::kLinear || k == InitKind::kLayerNormWeight ||
         k == InitKind::kLayerNormBias;
}

// Empty when the tensor's dtype holds `v` as written (floating: finite within its range; integers
// and bool: an integer within its range); else what to say after "which ...".
std::string beyond(DType d, double v, const std::string& tensor) {
  const std::string n(dtype_name(d));
  if (is_floating(d)) {
    if (std::abs(v) <= dtype_max(d)) return {};
    return fmt::format("makes tensor '{}' non-finite in {}; give a finite value within {}", tensor, n, n);
  }
  if (v == std::floor(v) && v >= dtype_lowest(d) && v <= dtype_max(d)) return {};
  return fmt::format("tensor '{}' ({}) cannot hold; give an integer within [{}, {}]", tensor, n, dtype_lowest(d), dtype_max(d));
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

}  // namespace

struct Problem::Impl {
  std::filesystem::path file;
  Json json;
  std::string name, description;
  std::vector<std::string> dims;
  std::vector<std::size_t> dim_slots;
  std::vector<DTypeVariable> dtype_vars;
  std::vector<std::size_t> dtype_slots;  // variable, <variable>_bytes: two per dtype variable
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
  mutable std::mutex mutex;  // one variable table for every expression
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
    return std::any_of(dtype_vars.begin(), dtype_vars.end(), [&](const DTypeVariable& v) { return n == v.name || n == v.name + "_bytes"; });
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
  // The largest magnitude the tensor's init can draw (before edits).
  static double init_bound(const Init& init);
  // Each element an edit writes, with its value (checked finite and within float32), at the bound
  // shape; `what` names the tensor for messages.
  void for_each_write(const Edit& e, const std::vector<std::int64_t>& shape, const std::string& what, DType dtype,
                      const std::function<void(std::int64_t, double)>& write) const;
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

namespace {

Init parse_init(const Json& j, const std::string& where, const std::function<space::Expression(const Json&, const std::string&)>& expr,
                const std::function<void(const std::string&)>& fail) {
  static const std::map<std::string, InitKind> kinds{
      {"normal", InitKind::kNormal},   {"uniform", InitKind::kUniform},
      {"linear", InitKind::kLinear},   {"layernorm_weight", InitKind::kLayerNormWeight},
      {"layernorm_bias", InitKind::kLayerNormBias}, {"constant", InitKind::kConstant},
      {"bernoulli", InitKind::kBernoulli}, {"index", InitKind::kIndex}, {"integers", InitKind::kIntegers}};
  const std::string names = "normal, uniform, linear, layernorm_weight, layernorm_bias, constant, bernoulli, index, integers";
  Init init;
  const Json spec = j.is_string() ? Json{{"kind", j}} : j;
  if (!spec.is_object() || !spec.contains("kind") || !spec.at("kind").is_string())
    fail(fmt::format("{} must be a kind name or {{\"kind\": ...}} ({})", where, names));
  const auto kind = spec.at("kind").get<std::string>();
  const auto it = kinds.find(kind);
  if (it == kinds.end()) fail(fmt::format("{}.kind '{}' is not one of {}", where, kind, names));
  init.kind = it->second;
  auto number = [&](const char* key, double fallback) {
    if (!spec.contains(key)) return fallback;
    const Json& v = spec.at(key);
    if (!v.is_number() || !std::isfinite(v.get<double>())) fail(fmt::format("{}.{} must be a finite number", where, key));
    return v.get<double>();
  };
  switch (init.kind) {
    case InitKind::kNormal:
      json_check::keys(spec, {"kind", "mean", "std"}, where, fail);
      init.a = number("mean", 0);
      init.b = number("std", 1);
      break;
    case InitKind::kUniform:
      json_check::keys(spec, {"kind", "low", "high"}, where, fail);
      init.a = number("low", 0);
      init.b = number("high", 1);
      if (!(init.a < init.b)) fail(where + ": 'low' must be below 'high'");
      break;
    case InitKind::kLinear:
      json_check::keys(spec, {"kind", "fan_in"}, where, fail);
      if (!spec.contains("fan_in")) fail(where + " (linear) needs 'fan_in', an expression over the dims");
      init.fan_in = expr(spec.at("fan_in"), where + ".fan_in");  // dims only (the caller's expr)
      break;
    case InitKind::kConstant:
      json_check::keys(spec, {"kind", "value"}, where, fail);
      if (!spec.contains("value")) fail(where + " (constant) needs 'value'");
      init.a = number("value", 0);
      break;
    case InitKind::kBernoulli:
      json_check::keys(spec, {"kind", "p"}, where, fail);
      init.a = number("p", 0.5);
      if (init.a < 0 || init.a > 1) fail(where + ".p must be within [0, 1]");
      break;
    case InitKind::kIndex:
      json_check::keys(spec, {"kind", "high"}, where, fail);
      if (!spec.contains("high")) fail(where + " (index) needs 'high', an expression over the dims (\"N\": indices in [0, N))");
      init.fan_in = expr(spec.at("high"), where + ".high");
      break;
    case InitKind::kIntegers:
      json_check::keys(spec, {"kind", "low", "high"}, where, fail);
      if (!spec.contains("low") || !spec.contains("high")) fail(where + " (integers) needs 'low' and 'high' (integers in [low, high))");
      init.a = number("low", 0);
      init.b = number("high", 1);
      if (init.a != std::floor(init.a) || init.b != std::floor(init.b) || !(init.a < init.b) || std::abs(init.a) > 9.0e15 ||
          std::abs(init.b) > 9.0e15)
        fail(fmt::format("{}: 'low' {} and 'high' {} must be integers with low < high", where, init.a, init.b));
      break;
    default:
      json_check::keys(spec, {"kind"}, where, fail);
  }
  return init;
}

}  // namespace

void Problem::Impl::parse_tensor(const Json& j, std::size_t i) {
  const std::string where = fmt::format("tensors[{}]", i);
  auto f = [&](const std::string& m) { fail(m); };
  json_check::keys(j, {"name", "role", "shape", "dtype", "init"}, where, f);
  TensorDef t;
  t.name = json_check::string(j, "name", where, f);
  if (t.name.empty()) fail(where + ".name is empty");
  for (const auto& other : tensors)
    if (other.name == t.name) fail(fmt::format("{}: tensor '{}' is declared twice", where, t.name));
  const std::string role = json_check::string(j, "role", where, f);
  if (role == "parameter") t.role = Role::kParameter;
  else if (role == "input") t.role = Role::kInput;
  else if (role == "output") t.role = Role::kOutput;
  else fail(fmt::format("{}.role '{}' is not parameter, input or output", where, role));
  // A launch's args name the output 'out' whatever its name: a parameter or input of that name would
  // take its place (issue 34 #17).
  if (t.name == "out" && t.role != Role::kOutput)
    fail(fmt::format("{}: only the output may be named 'out' (launch args call the output 'out'); rename this {}", where, role));
  parse_dtype_of(j, where, t);
  if (!j.contains("shape") || !j.at("shape").is_array()) fail(where + ".shape must be a list of expressions over the dims");
  for (std::size_t d = 0; d < j.at("shape").size(); ++d)
    t.shape.push_back(expression(j.at("shape")[d], fmt::format("{}.shape[{}] of tensor '{}'", where, d, t.name), true));
  if (t.role == Role::kOutput && t.shape.empty())
    fail(fmt::format("{}: the output '{}' has shape [] (0-d), which the reference and the kernels cannot share; give it "
                     "shape [\"1\"]", where, t.name));
  if (t.role == Role::kOutput) {
    if (j.contains("init")) fail(where + ": an output has no 'init'");
  } else {
    if (!j.contains("init")) fail(fmt::format("{} ('{}') needs 'init' (normal, uniform, linear, ...)", where, t.name));
    t.init = parse_init(j.at("init"), where + ".init",
                        [&](const Json& e, const std::string& w) { return expression(e, w, true); }, f);
    check_init(t, where + ".init");
  }
  tensors.push_back(std::move(t));
}

void Problem::Impl::parse_dtype_of(const Json& j, const std::string& where, TensorDef& t) const {
  if (!j.contains("dtype")) return;  // float32
  const Json& d = j.at("dtype");
  const std::string text = d.is_string() ? d.get<std::string>() : d.dump();
  for (std::size_t v = 0; v < dtype_vars.size(); ++v)
    if (dtype_vars[v].name == text) {
      t.dtype_var = v;
      return;
    }
  const auto parsed = d.is_string() ? parse_dtype(text) : std::nullopt;
  if (!parsed) {
    std::string vars;
    for (const DTypeVariable& v : dtype_vars) vars += (vars.empty() ? "" : ", ") + v.name;
    fail(fmt::format("{}.dtype '{}' of tensor '{}' is not a dtype ({}){}", where, text, t.name, dtype_choices(),
                     vars.empty() ? "" : fmt::format(" nor a dtype variable ({})", vars)));
  }
  t.dtype = *parsed;
}

// The init suits every dtype the tensor may have: real-valued draws need a floating tensor, index
// and integers an integer one (not bool); an index's `high` names a dimension; a constant fits the dtype.
void Problem::Impl::check_init(const TensorDef& t, const std::string& where) const {
  const InitKind k = t.init.kind;
  for (const DType d : possible_dtypes(t)) {
    const std::string dn(dtype_name(d));
    if (float_init(k) && !is_floating(d))
      fail(fmt::format("{}: tensor '{}' is {}, an integer type, but its init draws real numbers; give it index, integers, "
                       "{} instead", where, t.name, dn, d == DType::kBool ? "bernoulli or constant" : "index, integers, constant or bernoulli"));
    if ((k == InitKind::kIndex || k == InitKind::kIntegers) && (is_floating(d) || d == DType::kBool))
      fail(fmt::format("{}: tensor '{}' is {}, but an {} init draws integers; use it on an int8/int32/int64/uint8 tensor, or "
                       "give a float init (normal, uniform, ...)", where, t.name, dn, k == InitKind::kIndex ? "index" : "integers"));
    if (k == InitKind::kConstant && !is_floating(d) && !representable(d, t.init.a))
      fail(fmt::format("{}: constant {} is not a value of {} (tensor '{}')", where, t.init.a, dn, t.name));
    if (k == InitKind::kIntegers && (t.init.a < dtype_lowest(d) || t.init.b - 1 > dtype_max(d)))
      fail(fmt::format("{}: integers in [{}, {}) do not fit {} (tensor '{}', [{}, {}])", where, t.init.a, t.init.b, dn, t.name,
                       dtype_lowest(d), dtype_max(d)));
  }
  if (k == InitKind::kIndex) {
    const std::string& text = t.init.fan_in->text();
    const auto names = space::unknown_names(text, [](const std::string&) { return false; });
    if (std::none_of(names.begin(), names.end(), [&](const std::string& n) { return std::find(dims.begin(), dims.end(), n) != dims.end(); }))
      fail(fmt::format("{}.high '{}' of tensor '{}' names no dimension; an index init's bound is a dimension (\"N\") or an "
                       "expression over the dims (use integers for fixed bounds)", where, text, t.name));
  }
}

Edit Problem::Impl::parse_edit(const Json& j, const std::string& where, const std::vector<std::string>& loop_names,
                               bool top_level) {
  auto f = [&](const std::string& m) { fail(m); };
  if (top_level) json_check::keys(j, {"tensor", "for", "index", "value", "when", "purpose"}, where, f);
  else json_check::keys(j, {"tensor", "for", "index", "value", "when"}, where, f);
  Edit e;
  e.where = where;
  const std::string target = json_check::string(j, "tensor", where, f);
  auto it = std::find_if(tensors.begin(), tensors.end(), [&](const TensorDef& t) { return t.name == target; });
  if (it == tensors.end() || it->role == Role::kOutput)
    fail(fmt::format("{}.tensor '{}' is not a parameter or input of the problem", where, target));
  e.tensor = static_cast<std::size_t>(it - tensors.begin());
  const std::string purpose = j.contains("purpose") ? json_check::string(j, "purpose", where, f) : "always";
  if (purpose != "always" && purpose != "parity") fail(fmt::format("{}.purpose '{}' is not always or parity", where, purpose));
  e.parity_only = purpose == "parity";
  if (j.contains("when")) e.when = expression(j.at("when"), where + ".when");
  if (j.contains("for")) {
    if (!j.at("for").is_object()) fail(where + ".for must map loop variables to their bounds");
    for (const auto& [var, bound] : j.at("for").items()) {
      if (std::find(loop_names.begin(), loop_names.end(), var) == loop_names.end()) fail(where + ".for: bad variable " + var);
      e.loops.emplace_back(table.slot(var), expression(bound, where + ".for." + var));
    }
  }
  if (!j.contains("index") || !j.at("index").is_array()) fail(where + ".index must list one expression per dimension");
  for (std::size_t d = 0; d < j.at("index").size(); ++d)
    e.index.push_back(expression(j.at("index")[d], fmt::format("{}.index[{}]", where, d)));
  if (e.index.size() != it->shape.size())
    fail(fmt::format("{}.index has {} entries but tensor '{}' has {} dimensions", where, e.index.size(), target, it->shape.size()));
  if (!j.contains("value")) fail(where + " needs 'value', an expression");
  e.value = expression(j.at("value"), where + ".value");
  if (e.value->is_constant())
    for (const DType d : possible_dtypes(*it))
      if (const std::string why = beyond(d, e.value->eval(), target); !why.empty())
        fail(fmt::format("{}.value '{}' gives {}, which {}", where, e.value->text(), e.value->eval(),
                         why.starts_with("makes ") ? "would make " + why.substr(6) : why));
  return e;
}

void Problem::Impl::parse_edge_case(const Json& j, std::size_t i, const std::vector<std::string>& loop_names) {
  const std::string where = fmt::format("edge_cases[{}]", i);
  auto f = [&](const std::string& m) { fail(m); };
  json_check::keys(j, {"name", "set", "edits", "when"}, where, f);
  EdgeCase c;
  c.name = json_check::string(j, "name", where, f);
  if (c.name.empty()) fail(where + ".name is empty");
  for (const auto& other : edge_cases)
    if (other.name == c.name) fail(fmt::format("{}.name: edge case '{}' is declared twice", where, c.name));
  if (j.contains("when")) c.when = expression(j.at("when"), where + ".when", true);
  if (j.contains("set")) {
    const Json& set = j.at("set");
    if (!set.is_object()) fail(where + ".set must map tensor names to operations ({\"pair_repr\": {\"scale\": 100}})");
    for (const auto& [target, ops] : set.items()) {
      if (target == "_comment") continue;
      TensorSet s;
      s.where = where + ".set." + target;
      const auto it = std::find_if(tensors.begin(), tensors.end(), [&](const TensorDef& t) { return t.name == target; });
      if (it == tensors.end()) fail(s.where + ": no parameter or input of the problem has that name");
      if (it->role == Role::kOutput) fail(s.where + ": '" + target + "' is the output; only parameters and inputs can be set");
      s.tensor = static_cast<std::size_t>(it - tensors.begin());
      json_check::keys(ops, {"fill", "scale", "offset"}, s.where, f);
      if (!ops.contains("fill") && !ops.contains("scale") && !ops.contains("offset"))
        fail(s.where + " needs an operation: fill, scale or offset (a number)");
      auto number = [&](const char* key) {
        const Json& v = ops.at(key);
        // A float32 value: the data is float32, and a larger number is infinite there.
        if (!v.is_number() || !std::isfinite(v.get<double>()) ||
            std::abs(v.get<double>()) > static_cast<double>(std::numeric_limits<float>::max()))
          fail(fmt::format("{}.{}: {} is not a finite float32 number", s.where, key, v.dump()));
        return v.get<double>();
      };
      if (ops.contains("fill")) s.fill = number("fill");
      if (ops.contains("scale")) s.scale = number("scale");
      if (ops.contains("offset")) s.offset = number("offset");
      if (s.fill && !(std::abs(*s.fill * s.scale + s.offset) <= static_cast<double>(std::numeric_limits<float>::max())))
        fail(fmt::format("{}: fill {} x scale {} + offset {} is {}, beyond float32; choose smaller numbers", s.where,
                         *s.fill, s.scale, s.offset, *s.fill * s.scale + s.offset));
      c.sets.push_back(std::move(s));
    }
  }
  if (j.contains("edits")) {
    if (!j.at("edits").is_array()) fail(where + ".edits must be a list (the syntax of the top-level edits)");
    for (std::size_t k = 0; k < j.at("edits").size(); ++k) {
      const std::string at = fmt::format("{}.edits[{}]", where, k);
      if (!j.at("edits")[k].is_object()) fail(at + " must be an object");
      c.edits.push_back(parse_edit(j.at("edits")[k], at, loop_names, false));
    }
  }
  if (c.sets.empty() && c.edits.empty())
    fail(where + " changes nothing: give 'set' ({\"<tensor>\": {\"scale\": 100}}) or 'edits'");
  edge_cases.push_back(std::move(c));
}

init::Draw Problem::Impl::draw_of(const TensorDef& t) const {
  using Kind = init::Draw::Kind;
  const Init& in = t.init;
  const DType dtype = dtype_of(t);
  switch (in.kind) {
    case InitKind::kLinear: {  // nn.Linear: uniform in (-1/sqrt(fan_in), 1/sqrt(fan_in))
      const std::int64_t fan_in = integer(*in.fan_in, "tensor '" + t.name + "' init fan_in");
      if (fan_in <= 0) fail(fmt::format("tensor '{}': fan_in '{}' gives {}", t.name, in.fan_in->text(), fan_in));
      const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
      return {Kind::kUniform, dtype, -bound, bound};
    }
    case InitKind::kLayerNormWeight: return init::layernorm_weight_draw(dtype);
    case InitKind::kLayerNormBias: return init::layernorm_bias_draw(dtype);
    case InitKind::kNormal: return {Kind::kNormal, dtype, in.a, in.b};
    case InitKind::kUniform: return {Kind::kUniform, dtype, in.a, in.b};
    case InitKind::kIndex: return {Kind::kIndex, dtype, static_cast<double>(index_high(t))};
    case InitKind::kIntegers: return {Kind::kIntegers, dtype, in.a, in.b};
    case InitKind::kBernoulli: return {Kind::kBernoulli, dtype, in.a};
    default: return {Kind::kConstant, dtype, in.a};  // kConstant (outputs are never drawn)
  }
}

std::int64_t Problem::Impl::index_high(const TensorDef& t) const {
  const std::int64_t high = integer(*t.init.fan_in, "tensor '" + t.name + "' init high");
  if (high < 1)
    fail(fmt::format("tensor '{}': index init high '{}' gives {} at this shape; it must be at least 1", t.name,
                     t.init.fan_in->text(), high));
  if (static_cast<double>(high - 1) > dtype_max(dtype_of(t)))
    fail(fmt::format("tensor '{}': index init high '{}' gives {}, beyond {} ({} at most)", t.name, t.init.fan_in->text(), high,
                     dtype_name(dtype_of(t)), dtype_max(dtype_of(t))));
  return high;
}

void Problem::Impl::for_each_write(const Edit& e, const std::vector<std::int64_t>& shape, const std::string& what,
                                   DType dtype, const std::function<void(std::int64_t, double)>& write) const {
  if (e.when && !holds(*e.when)) return;
  std::int64_t elements = 1;
  for (const auto n : shape) elements *= n;
  // Each iteration writes one element: more iterations than elements only repeat writes, and an
  // unbounded loop would hang the run (issue 34 #5).
  std::vector<std::int64_t> bounds;
  double iterations = 1;  // in double: a product of int64 bounds may overflow
  for (const auto& [slot, bound] : e.loops) {
    bounds.push_back(std::max<std::int64_t>(0, integer(bound, e.where + " loop bound")));
    iterations *= static_cast<double>(bounds.back());
  }
  if (iterations > static_cast<double>(std::max<std::int64_t>(elements, 1)))
    fail(fmt::format("{}.for: the loops run {:.0f} times at this shape, more than the {} elements of tensor '{}' (each "
                     "iteration writes one); bound them by the tensor's dims",
                     e.where, iterations, elements, what));
  if (iterations == 0) return;
  std::vector<std::int64_t> at(bounds.size(), 0);
  for (;;) {
    for (std::size_t l = 0; l < at.size(); ++l) table.set(e.loops[l].first, static_cast<double>(at[l]));
    std::int64_t flat = 0;
    for (std::size_t d = 0; d < e.index.size(); ++d) {
      const std::int64_t k = integer(e.index[d], fmt::format("{}.index[{}]", e.where, d));
      if (k < 0 || k >= shape[d])
        fail(fmt::format("{}.index[{}] '{}' gives {}, outside tensor '{}' (size {}) at this shape", e.where, d,
                         e.index[d].text(), k, what, shape[d]));
      flat = flat * shape[d] + k;
    }
    const double v = e.value->eval();
    if (const std::string why = beyond(dtype, v, what); !why.empty())
      fail(fmt::format("{}.value '{}' gives {} at element {}, which {}", e.where, e.value->text(), v, flat, why));
    write(flat, v);
    std::size_t l = at.size();
    while (l > 0) {
      --l;
      if (++at[l] < bounds[l]) break;
      at[l] = 0;
      if (l == 0) return;
    }
    if (at.empty()) return;
  }
}

void Problem::Impl::apply(const Edit& e, HostTensor& t) const {
  for_each_write(e, t.spec.shape, t.spec.name, t.spec.dtype,
                 [&](std::int64_t flat, double v) { t.data[static_cast<std::size_t>(flat)] = round_to(t.spec.dtype, v); });
}

void Problem::Impl::apply(const TensorSet& s, HostTensor& t) const {
  for (std::size_t k = 0; k < t.data.size(); ++k) {
    const double v = (s.fill ? *s.fill : t.data[k]) * s.scale + s.offset;
    if (const std::string why = beyond(t.spec.dtype, v, t.spec.name); !why.empty())
      fail(fmt::format("{}: element {} ({}) becomes {}, which {}", s.where, k, t.data[k], v, why));
    t.data[k] = round_to(t.spec.dtype, v);
  }
}

// A tensor of more elements is refused when the shape is bound: 4 TiB of float32, past any GPU's
// memory; and every size tune computes from it (bytes, float64 copies) stays within int64.
constexpr std::int64_t kMaxElements = std::int64_t{1} << 40;
// A dimension past this is not exact in the expressions' doubles (their integers stop at 2^53).
constexpr std::int64_t kMaxDimension = 9'000'000'000'000'000;

std::int64_t Problem::Impl::elements(const TensorDef& t, const Shape& shape) const {
  std::int64_t n = 1;
  bool over = false;
  for (std::size_t i = 0; i < t.shape.size(); ++i) {
    const std::int64_t d = integer(t.shape[i], fmt::format("tensor '{}' shape[{}]", t.name, i));
    if (d < 0) fail(fmt::format("tensor '{}' shape[{}] '{}' is negative ({})", t.name, i, t.shape[i].text(), d));
    over = over || __builtin_mul_overflow(n, d, &n) || n > kMaxElements;
  }
  if (over)
    throw ShapeError(fmt::format("shape {}: tensor '{}' (shape [{}]) has more than 2^40 elements (4 TiB of float32); "
                                 "pass a smaller shape", shape.describe(), t.name,
                                 fmt::join(t.shape | std::views::transform([](const auto& e) { return e.text(); }), ", ")));
  return n;
}

double Problem::Impl::init_bound(const Init& init) {
  constexpr double kNormal = 8.58;  // Box-Muller's largest |x|: sqrt(-2 ln 2^-53)
  switch (init.kind) {
    case InitKind::kNormal: return std::abs(init.a) + kNormal * std::abs(init.b);
    case InitKind::kUniform: return std::max(std::abs(init.a), std::abs(init.b));
    case InitKind::kConstant: return std::abs(init.a);
    case InitKind::kLayerNormWeight: return 1 + 0.2 * kNormal;
    case InitKind::kLayerNormBias: return 0.2 * kNormal;
    default: return 1;  // linear: 1/sqrt(fan_in); bernoulli: 0 or 1
  }
}

void Problem::Impl::check_sizes(const Shape& shape) const {
  for (const TensorDef& t : tensors) (void)elements(t, shape);
}

void Problem::Impl::check_work(const Shape& shape) const {
  for (const auto* w : {&flop, &bytes}) {
    if (!*w) continue;
    const double v = (*w)->eval();
    if (!std::isfinite(v) || v < 0)
      fail(fmt::format("work.{} '{}' gives {} at shape {}; a work count must be finite and >= 0", w == &flop ? "flop" : "bytes",
                       (*w)->text(), v, shape.describe()));
  }
}

// The values the edits write and the edge cases' sets make, without drawing the data: an edge case
// that would make an input non-finite is refused now, not when the gate runs it (issue 34 #14).
void Problem::Impl::check_data(const Shape& shape) const {
  std::vector<std::vector<std::int64_t>> shapes;
  std::vector<double> bound;
  for (const TensorDef& t : tensors) {
    shapes.push_back(spec(t).shape);
    bound.push_back(t.role == Role::kOutput ? 0 : t.init.kind == InitKind::kIndex ? static_cast<double>(index_high(t) - 1)
                                                                                   : init_bound(t.init));
  }
  for (const Edit& e : edits)
    for_each_write(e, shapes[e.tensor], tensors[e.tensor].name, dtype_of(tensors[e.tensor]),
                   [&](std::int64_t, double v) { bound[e.tensor] = std::max(bound[e.tensor], std::abs(v)); });
  for (const EdgeCase& c : edge_cases) {
    if (c.when && !holds(*c.when)) continue;
    for (const TensorSet& set : c.sets) {
      const double v = (set.fill ? std::abs(*set.fill) : bound[set.tensor]) * std::abs(set.scale) + std::abs(set.offset);
      const DType d = dtype_of(tensors[set.tensor]);
      if (!(v <= dtype_max(d)))
        fail(fmt::format("{}: scale {} and offset {} take the values of tensor '{}' (up to {:.3g} at shape {}) to {:.3g}, "
                         "beyond {}; choose a smaller scale or offset", set.where, set.scale, set.offset,
                         tensors[set.tensor].name, bound[set.tensor], shape.describe(), v, dtype_name(d)));
      for (const double x : {set.fill.value_or(0), set.scale, set.offset})
        if (!is_floating(d) && x != std::floor(x))
          fail(fmt::format("{}: {} is not an integer, and tensor '{}' is {}; give integers", set.where, x,
                           tensors[set.tensor].name, dtype_name(d)));
    }
    for (const Edit& e : c.edits)
      for_each_write(e, shapes[e.tensor], tensors[e.tensor].name, dtype_of(tensors[e.tensor]), [](std::int64_t, double) {});
  }
}

void Problem::Impl::check_bound(const Shape& shape) const {
  const std::lock_guard lock(mutex);
  const std::string key = shape.describe();
  if (bound_shapes.count(key)) return;
  bind(shape);
  check_sizes(shape);
  check_work(shape);
  check_data(shape);
  bound_shapes.insert(key);
}

std::vector<HostTensor> Problem::Impl::draw_all(const Shape& shape, std::uint64_t seed, DataPurpose purpose) const {
  std::vector<HostTensor> drawn(tensors.size());
  std::vector<init::Draw> draws;
  {
    const std::lock_guard lock(mutex);
    bind(shape);
    for (std::size_t i = 0; i < tensors.size(); ++i)
      if (tensors[i].role != Role::kOutput) {
        drawn[i].spec = spec(tensors[i]);
        draws.push_back(draw_of(tensors[i]));
      }
  }
  // The values outside the lock, on all cores: what needs the bound expressions was resolved above.
  std::vector<std::span<double>> out;
  for (std::size_t i = 0; i < tensors.size(); ++i)
    if (tensors[i].role != Role::kOutput) {
      drawn[i].data.resize(static_cast<std::size_t>(drawn[i].spec.elements()));
      out.emplace_back(drawn[i].data);
    }
  init::fill_all(seed, draws, out);
  if (edits.empty()) return drawn;
  const std::lock_guard lock(mutex);
  bind(shape);
  for (const Edit& e : edits)
    if (!e.parity_only || purpose == DataPurpose::kParity) apply(e, drawn[e.tensor]);
  return drawn;
}

ProblemData Problem::Impl::pack(std::vector<HostTensor> drawn) const {
  ProblemData data;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].role == Role::kParameter) data.params.push_back(std::move(drawn[i]));
    else if (tensors[i].role == Role::kInput) data.inputs.push_back(std::move(drawn[i]));
  }
  return data;
}

Problem::Problem(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Problem::~Problem() = default;

std::unique_ptr<Problem> Problem::load(const std::filesystem::path& problem_file) {
  auto impl = std::make_unique<Impl>();
  Impl& p = *impl;
  std::error_code ec;
  p.file = std::filesystem::weakly_canonical(std::filesystem::absolute(problem_file), ec);
  if (ec) p.file = std::filesystem::absolute(problem_file);
  if (!std::ifstream(p.file)) throw ConfigError(p.file.string() + ": cannot be read (pass --problem a folder with a problem.json)");
  try {
    p.json = json_file::read(p.file);  // bounded in size and depth
  } catch (const InputError& e) {
    throw ConfigError(e.what());
  }
  auto f = [&](const std::string& m) { p.fail(m); };
  const Json& j = p.json;
  if (!j.is_object()) p.fail("the top level must be a JSON object");
  for (const auto& [k, v] : j.items())
    if (k != "_comment" && !json_check::problem_file_keys().count(k))
      p.fail(fmt::format("unknown key '{}' (known: {})", k, fmt::join(json_check::problem_file_keys(), ", ")));
  p.name = json_check::string(j, "problem", "the file", f);
  p.check_name();
  if (j.contains("description")) p.description = json_check::string(j, "description", "the file", f);

  // Dims first: every expression binds the whole variable table when it is built.
  if (!j.contains("shape") || !j.at("shape").is_object() || !j.at("shape").contains("dims") || !j.at("shape").at("dims").is_array())
    p.fail("'shape.dims' must list the dimension names");
  for (const Json& d : j.at("shape").at("dims")) {
    if (!d.is_string()) p.fail("'shape.dims' must list names");
    p.dims.push_back(d.get<std::string>());
    try {
      p.dim_slots.push_back(p.table.declare(p.dims.back()));
    } catch (const std::invalid_argument& e) {
      p.fail(std::string("'shape.dims': ") + e.what());
    }
    if (reserved_dimension_names().count(p.dims.back()))
      p.fail(fmt::format("'shape.dims': '{0}' is an option of tune (--{0}), so --{0} could not give the dimension; rename it",
                         p.dims.back()));
  }
  p.dtype_vars = dtype_vars::parse(j, f);
  p.dtype_slots = dtype_vars::declare(p.dtype_vars, p.table, f);
  // The loop variables of every edit (top level and edge cases') are declared before any
  // expression is built.
  std::vector<std::string> loop_names;
  auto declare_loops = [&](const Json& edits, const std::string& where) {
    for (std::size_t i = 0; i < edits.size(); ++i) {
      const Json& e = edits[i];
      if (!e.is_object() || !e.contains("for")) continue;
      if (!e.at("for").is_object()) p.fail(fmt::format("{}[{}].for must map loop variables to their bounds", where, i));
      for (const auto& [var, bound] : e.at("for").items()) {
        if (std::find(loop_names.begin(), loop_names.end(), var) != loop_names.end()) continue;
        if (std::find(p.dims.begin(), p.dims.end(), var) != p.dims.end())
          p.fail(fmt::format("{}[{}].for: loop variable '{}' is also a dimension; choose another name", where, i, var));
        try {
          (void)p.table.declare(var);
        } catch (const std::invalid_argument& e2) {
          p.fail(fmt::format("{}[{}].for: {}", where, i, e2.what()));
        }
        loop_names.push_back(var);
      }
    }
  };
  if (j.contains("edits")) {
    if (!j.at("edits").is_array()) p.fail("'edits' must be a list");
    declare_loops(j.at("edits"), "edits");
  }
  if (j.contains("edge_cases")) {
    if (!j.at("edge_cases").is_array()) p.fail("'edge_cases' must be a list of {\"name\": ..., \"set\": {...}}");
    for (std::size_t i = 0; i < j.at("edge_cases").size(); ++i) {
      const Json& c = j.at("edge_cases")[i];
      if (c.is_object() && c.contains("edits") && c.at("edits").is_array())
        declare_loops(c.at("edits"), fmt::format("edge_cases[{}].edits", i));
    }
  }

  if (j.contains("tolerance")) p.tolerance = parse_tolerance(j.at("tolerance"), p.file.string());

  if (!j.contains("tensors") || !j.at("tensors").is_array() || j.at("tensors").empty())
    p.fail("'tensors' must list the problem's parameters, inputs and its output");
  for (std::size_t i = 0; i < j.at("tensors").size(); ++i) p.parse_tensor(j.at("tensors")[i], i);
  std::size_t outputs = 0;
  for (std::size_t i = 0; i < p.tensors.size(); ++i)
    if (p.tensors[i].role == Role::kOutput) {
      p.output = i;
      ++outputs;
    }
  if (outputs != 1) p.fail(fmt::format("'tensors' must have exactly one output (role \"output\"), it has {}", outputs));
  if (j.contains("edits"))
    for (std::size_t i = 0; i < j.at("edits").size(); ++i) {
      if (!j.at("edits")[i].is_object()) p.fail(fmt::format("edits[{}] must be an object", i));
      p.edits.push_back(p.parse_edit(j.at("edits")[i], fmt::format("edits[{}]", i), loop_names, true));
    }
  if (j.contains("edge_cases"))
    for (std::size_t i = 0; i < j.at("edge_cases").size(); ++i) p.parse_edge_case(j.at("edge_cases")[i], i, loop_names);
  if (j.contains("deterministic")) {
    if (!j.at("deterministic").is_boolean())
      p.fail("'deterministic' must be true or false (false: the kernels may give other bits from launch to launch)");
    p.deterministic = j.at("deterministic").get<bool>();
  }

  p.parse_work();
  p.parse_reference();
  p.golden = p.file.parent_path() / (j.contains("golden") ? json_check::string(j, "golden", "the file", f) : "golden");
  return std::unique_ptr<Problem>(new Problem(std::move(impl)));
}

void Problem::Impl::parse_work() {
  Impl& p = *this;
  auto f = [&](const std::string& m) { p.fail(m); };
  const Json& j = p.json;
  if (j.contains("work")) {
    const Json& w = j.at("work");
    json_check::keys(w, {"flop", "bytes"}, "work", f);
    if (w.contains("flop")) {
      p.flop = p.expression(w.at("flop"), "work.flop", true);
      p.flop_text = p.flop->text();
    }
    if (w.contains("bytes")) {
      p.bytes = p.expression(w.at("bytes"), "work.bytes", true);
      p.bytes_text = p.bytes->text();
    }
    for (const auto& [key, e] : {std::pair{"flop", &p.flop}, std::pair{"bytes", &p.bytes}})
      if (*e && (*e)->is_constant() && !((*e)->eval() >= 0 && std::isfinite((*e)->eval())))
        p.fail(fmt::format("work.{} '{}' gives {}; a work count must be finite and >= 0", key, (*e)->text(), (*e)->eval()));
  }
}

namespace {

// The folder of a problem.json that lies in a built-in folder (configs/<name>/problem.json).
bool in_builtin_folder(const std::filesystem::path& file) {
  std::error_code ec;
  const auto parent = std::filesystem::weakly_canonical(file.parent_path().parent_path(), ec);
  for (const auto& d : builtin_problem_dirs())
    if (std::filesystem::weakly_canonical(d, ec) == parent) return true;
  return false;
}

std::string slurp(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// What of a folder outside configs/ differs from the built-in problem whose C++ reference it
// names (empty: an unchanged copy, such as tools/plant.py makes): its dims, its tensors or its
// reference.py. The fast path computes the built-in's function on the built-in's tensors only.
std::string builtin_mismatch(const Json& j, const std::optional<std::filesystem::path>& python, const std::string& builtin) {
  for (const auto& d : builtin_problem_dirs()) {
    const auto file = d / builtin / "problem.json";
    std::error_code ec;
    if (!std::filesystem::is_regular_file(file, ec)) continue;
    Json o;
    try {
      o = json_file::read(file);
    } catch (const InputError&) {
      return "problem.json (the built-in one cannot be read)";
    }
    if (!o.is_object()) return "problem.json (the built-in one cannot be read)";
    if (!o.contains("shape") || !j.contains("shape") || o.at("shape").value("dims", Json()) != j.at("shape").value("dims", Json()))
      return "dims";
    if (o.value("tensors", Json()) != j.value("tensors", Json())) return "tensors";
    const Json ref = o.value("reference", Json::object());
    if (python && ref.contains("python") && ref.at("python").is_string() &&
        slurp(*python) != slurp(file.parent_path() / ref.at("python").get<std::string>()))
      return "reference.py";
    return {};
  }
  return "problem (no built-in problem has that name)";
}

}  // namespace

void Problem::Impl::parse_reference() {
  Impl& p = *this;
  auto f = [&](const std::string& m) { p.fail(m); };
  const Json& j = p.json;

  if (!j.contains("reference")) p.fail("'reference' must name the reference: {\"python\": \"reference.py\"}");
  const Json& r = j.at("reference");
  json_check::keys(r, {"python", "builtin"}, "reference", f);
  if (r.contains("python")) {
    p.python = p.file.parent_path() / json_check::string(r, "python", "reference", f);
    if (std::error_code ec; std::filesystem::is_directory(*p.python, ec))
      p.fail(fmt::format("reference.python: {} is a folder; name the Python file (reference.py)", p.python->string()));
    if (!std::filesystem::is_regular_file(*p.python))
      p.fail(fmt::format("reference.python: {} does not exist", p.python->string()));
  }
  if (r.contains("builtin")) {
    p.builtin = json_check::string(r, "builtin", "reference", f);
    // The C++ fast path is tied to the built-in problem: a copy of its folder elsewhere with other
    // tensors or another reference.py would be checked against the wrong function (issue 34 #9).
    if (!in_builtin_folder(p.file))
      if (const std::string what = builtin_mismatch(j, p.python, p.builtin); !what.empty())
        p.fail(fmt::format("reference.builtin '{0}' is the C++ reference of the built-in problem {0}, but this folder's {1} "
                           "differ from it; remove reference.builtin (the folder's reference.py then runs)",
                           p.builtin, what));
    if (!builtin_reference(p.builtin))
      p.fail(fmt::format("reference.builtin '{}' is not a reference built into this tune ({})", p.builtin,
                         fmt::join(builtin_reference_names(), ", ")));
  }
  if (!p.python && p.builtin.empty()) p.fail("'reference' must name a Python module: {\"python\": \"reference.py\"}");
}

// The name names the results folder, the header's namespace and the exported Python module.
void Problem::Impl::check_name() const {
  if (name.empty() || name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != std::string::npos ||
      std::isdigit(static_cast<unsigned char>(name.front())))
    fail(fmt::format("problem name '{}' must be letters, digits, '_' and '-', not starting with a digit (it names the "
                     "results folder and the generated code's namespace)", name));
  if (const std::string kind = space::keyword_kind(name); !kind.empty())
    fail(fmt::format("problem name '{}' is {}, which the generated headers and packages cannot use; rename it", name, kind));
}

namespace {

std::mutex g_reserved_mutex;
std::set<std::string> g_reserved;

}  // namespace

void set_reserved_dimension_names(std::set<std::string> names) {
  const std::lock_guard lock(g_reserved_mutex);
  g_reserved = std::move(names);
}

std::set<std::string> reserved_dimension_names() {
  const std::lock_guard lock(g_reserved_mutex);
  return g_reserved;
}

std::string_view Problem::name() const { return impl_->name; }
const std::string& Problem::description() const { return impl_->description; }
const std::filesystem::path& Problem::file() const { return impl_->file; }
std::filesystem::path Problem::golden_dir() const { return impl_->golden; }
const nlohmann::ordered_json& Problem::json() const { return impl_->json; }
std::vector<std::string> Problem::dims() const { return impl_->dims; }
const std::vector<DTypeVariable>& Problem::dtype_variables() const { return impl_->dtype_vars; }

void Problem::add_dtype_defaults(Shape& shape) const {
  for (const DTypeVariable& v : impl_->dtype_vars)
    if (!shape.has_dtype(v.name) && v.default_value) shape.set_dtype(v.name, *v.default_value);
}
Tolerance Problem::tolerance(const Shape& shape) const { return tolerance(output_spec(shape).dtype); }
Tolerance Problem::tolerance(DType output_dtype) const { return impl_->tolerance.of(output_dtype); }
bool Problem::has_builtin_reference() const { return !impl_->builtin.empty(); }

bool Problem::uses_builtin(ReferenceBackend backend) const {
  return !impl_->builtin.empty() && (backend != ReferenceBackend::kPython || !impl_->python);
}

std::string Problem::reference_identity(ReferenceBackend backend) const {
  if (uses_builtin(backend)) return "built-in C++ (" + impl_->builtin + ")";
  const std::filesystem::path& file = *impl_->python;
  std::ifstream f(file, std::ios::binary);
  if (!f) throw InputError(fmt::format("{} cannot be read; check its permissions", file.string()));
  const std::string text{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
  const char* choice = std::getenv("TUNE_REFERENCE_BACKEND");
  return fmt::format("{} xxh3:{} ({})", file.filename().string(), content_hash({text}),
                     choice && *choice ? choice : "numpy or torch");
}
bool Problem::deterministic() const { return impl_->deterministic; }
std::optional<std::filesystem::path> Problem::python_reference() const { return impl_->python; }

std::string Problem::work_expression(const std::string& which) const {
  return which == "flop" ? impl_->flop_text : which == "bytes" ? impl_->bytes_text : std::string();
}

void Problem::check_shape(const Shape& shape) const {
  for (const auto& d : impl_->dims) {
    if (!shape.has(d))
      throw ShapeError(fmt::format("the shape needs --{} (problem {} takes {})", d, name(), fmt::join(impl_->dims, ", ")));
    const auto v = shape.at(d);
    if (v <= 0) throw ShapeError(fmt::format("--{} must be a positive integer, got {}", d, v));
    // Expressions compute in double: past 2^53 a dimension is no longer itself there.
    if (v > kMaxDimension)
      throw ShapeError(fmt::format("--{} {} is too large (a dimension is at most {})", d, v, kMaxDimension));
  }
  for (const DTypeVariable& v : impl_->dtype_vars) {
    const std::string allowed = fmt::format("{}", fmt::join(v.values | std::views::transform(dtype_name), ", "));
    const auto t = dtype_vars::value(v, shape);
    if (!t) throw ShapeError(fmt::format("the shape needs --{} (a dtype: {})", v.name, allowed));
    if (std::find(v.values.begin(), v.values.end(), *t) == v.values.end())
      throw ShapeError(fmt::format("--{} {} is not a dtype problem {} takes (--{}: {})", v.name, dtype_name(*t), name(), v.name,
                                   allowed));
  }
  impl_->check_bound(shape);
}

void Problem::check_host_memory(const Shape& shape) const {
  check_shape(shape);
  const Impl& p = *impl_;
  std::uint64_t need = 0;
  std::pair<std::int64_t, std::string> largest{-1, ""};
  {
    const std::lock_guard lock(p.mutex);
    p.bind(shape);
    for (const TensorDef& t : p.tensors) {
      const std::int64_t n = p.elements(t, shape);  // at most 2^40: the sum stays far within 64 bits
      need += static_cast<std::uint64_t>(n) * (sizeof(double) + sizeof(double));
      largest = std::max(largest, std::pair{n, t.name});
    }
  }
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return;  // unknown: the allocation itself will tell
  const auto have = static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page);
  if (need > have)
    throw ShapeError(fmt::format("shape {}: the tensors of problem {} take {:.3g} GB of host memory (their data and the "
                                 "reference's float64 copies, 16 bytes an element; the largest is '{}', {} elements), more than this machine's "
                                 "{:.3g} GB; pass a smaller shape",
                                 shape.describe(), name(), static_cast<double>(need) / 1e9, largest.second, largest.first,
                                 static_cast<double>(have) / 1e9));
}

std::vector<TensorSpec> Problem::param_specs(const Shape& shape) const { return impl_->specs(shape, Role::kParameter); }
std::vector<TensorSpec> Problem::input_specs(const Shape& shape) const { return impl_->specs(shape, Role::kInput); }
TensorSpec Problem::output_spec(const Shape& shape) const { return impl_->specs(shape, Role::kOutput).at(0); }

ProblemData Problem::make_data(const Shape& shape, std::uint64_t seed, DataPurpose purpose) const {
  check_host_memory(shape);
  return impl_->pack(impl_->draw_all(shape, seed, purpose));
}

std::vector<std::string> Problem::edge_cases(const Shape& shape) const {
  check_shape(shape);
  const Impl& p = *impl_;
  const std::lock_guard lock(p.mutex);
  p.bind(shape);
  std::vector<std::string> out;
  for (const EdgeCase& c : p.edge_cases)
    if (!c.when || Impl::holds(*c.when)) out.push_back(c.name);
  return out;
}

ProblemData Problem::make_edge_case(const Shape& shape, std::uint64_t seed, const std::string& name) const {
  return make_edge_case(shape, make_data(shape, seed, DataPurpose::kParity), name);
}

ProblemData Problem::make_edge_case(const Shape& shape, const ProblemData& parity, const std::string& name) const {
  check_shape(shape);
  const Impl& p = *impl_;
  const auto c = std::find_if(p.edge_cases.begin(), p.edge_cases.end(), [&](const EdgeCase& e) { return e.name == name; });
  if (c == p.edge_cases.end()) {
    std::vector<std::string> names;
    for (const EdgeCase& e : p.edge_cases) names.push_back("'" + e.name + "'");
    throw InputError(fmt::format("problem {} has no edge case '{}' ({})", p.name, name,
                                 names.empty() ? "it declares none" : fmt::format("it has {}", fmt::join(names, ", "))));
  }
  const std::lock_guard lock(p.mutex);
  p.bind(shape);
  if (c->when && !Impl::holds(*c->when))
    throw InputError(fmt::format("problem {}: edge case '{}' does not apply at shape {} (when '{}')", p.name, name,
                                 shape.describe(), c->when->text()));
  // The parity data back in the file's tensor order, where the sets and edits index it.
  std::vector<HostTensor> drawn(p.tensors.size());
  for (std::size_t i = 0; i < p.tensors.size(); ++i) {
    if (p.tensors[i].role == Role::kOutput) continue;
    const HostTensor* t = parity.find(p.tensors[i].name);
    if (!t) throw InputError(fmt::format("problem {}: the data has no tensor '{}'", p.name, p.tensors[i].name));
    drawn[i] = *t;
  }
  for (const TensorSet& s : c->sets) p.apply(s, drawn[s.tensor]);
  for (const Edit& e : c->edits) p.apply(e, drawn[e.tensor]);
  return p.pack(std::move(drawn));
}

std::vector<double> Problem::reference(const Shape& shape, const ProblemData& data, ReferenceBackend backend,
                                       std::string* how, std::vector<double>* module_output) const {
  check_shape(shape);
  const Impl& p = *impl_;
  const TensorSpec out = output_spec(shape);
  for (const auto& specs : {param_specs(shape), input_specs(shape)})
    for (const auto& s : specs) {
      const HostTensor* t = data.find(s.name);
      if (!t || t->data.size() != static_cast<std::size_t>(s.elements()))
        throw InputError(fmt::format("{}: tensor '{}' {} for shape {}; make the data for the same shape as the reference",
                                     p.name, s.name, t ? fmt::format("has {} elements, not {}", t->data.size(), s.elements()) : "is missing",
                                     shape.describe()));
    }
  std::vector<double> ref;
  // The module rule's run, only where it applies: a low-precision output and a reference.py.
  const bool module_run = module_output && is_low_precision(out.dtype) && p.python;
  if (module_output) module_output->clear();
  if (uses_builtin(backend)) {
    ref = builtin_reference(p.builtin)(shape, data);
    if (how) *how = "built-in C++ (" + p.builtin + ")";
    if (module_run) (void)run_python_reference(*p.python, p.name, shape, data, out, nullptr, ModuleRun::kOnly, module_output);
  } else {
    if (!p.python) throw ConfigError(p.file.string() + ": no Python reference to run (reference.python)");
    ref = run_python_reference(*p.python, p.name, shape, data, out, how, module_run ? ModuleRun::kAlso : ModuleRun::kNo,
                               module_run ? module_output : nullptr);
  }
  if (ref.size() != static_cast<std::size_t>(out.elements()))
    throw InputError(fmt::format("{}: the reference returned {} values, the output '{}' has {}", p.name, ref.size(), out.name,
                                 out.elements()));
  for (std::size_t i = 0; i < ref.size(); ++i)
    if (!std::isfinite(ref[i]))
      throw InputError(fmt::format("{}: the reference output '{}' is {} at element {} for shape {}; a reference must be finite",
                                   p.name, out.name, ref[i], i, shape.describe()));
  return ref;
}

WorkCounts Problem::counts(const Shape& shape) const {
  const Impl& p = *impl_;
  WorkCounts c;
  double tensor_bytes = 0;
  for (const auto& specs : {param_specs(shape), input_specs(shape), std::vector<TensorSpec>{output_spec(shape)}})
    for (const auto& s : specs) tensor_bytes += static_cast<double>(s.bytes());
  const std::lock_guard lock(p.mutex);
  p.bind(shape);
  c.flop = p.flop ? p.flop->eval() : 0;
  c.bytes = p.bytes ? p.bytes->eval() : tensor_bytes;  // default: every tensor moved once
  return c;
}

ReferenceBackend reference_backend_from_env() {
  const char* v = std::getenv("TUNE_REFERENCE");
  if (!v || !*v) return ReferenceBackend::kAuto;
  const std::string s(v);
  if (s == "python") return ReferenceBackend::kPython;
  if (s == "builtin") return ReferenceBackend::kBuiltin;
  if (s == "auto") return ReferenceBackend::kAuto;
  throw InputError("TUNE_REFERENCE='" + s + "' is not python, builtin or auto");
}

}  // namespace tune

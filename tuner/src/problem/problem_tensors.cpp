// problem.json's tensors: their shapes, dtypes and inits, and the data drawn from them.
#include "problem/problem_impl.hpp"

#include <algorithm>
#include <map>

#include "problem/json_check.hpp"
#include "tune/rng.hpp"

namespace tune {

using namespace problem_file;

void Problem::Impl::parse_tensors() {
  const Json& j = json;
  if (!j.contains("tensors") || !j.at("tensors").is_array() || j.at("tensors").empty())
    fail("'tensors' must list the problem's parameters, inputs and its output");
  for (std::size_t i = 0; i < j.at("tensors").size(); ++i) parse_tensor(j.at("tensors")[i], i);
  std::size_t outputs = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i)
    if (tensors[i].role == Role::kOutput) {
      output = i;
      ++outputs;
    }
  if (outputs != 1) fail(fmt::format("'tensors' must have exactly one output (role \"output\"), it has {}", outputs));
}

namespace {

Init parse_init(const Json& j, const std::string& where,
                const std::function<space::Expression(const Json&, const std::string&)>& expr,
                const std::function<void(const std::string&)>& fail) {
  static const std::map<std::string, InitKind> kinds{{"normal", InitKind::kNormal},
                                                     {"uniform", InitKind::kUniform},
                                                     {"linear", InitKind::kLinear},
                                                     {"layernorm_weight", InitKind::kLayerNormWeight},
                                                     {"layernorm_bias", InitKind::kLayerNormBias},
                                                     {"constant", InitKind::kConstant},
                                                     {"bernoulli", InitKind::kBernoulli},
                                                     {"index", InitKind::kIndex},
                                                     {"integers", InitKind::kIntegers}};
  const std::string names =
      "normal, uniform, linear, layernorm_weight, layernorm_bias, constant, bernoulli, index, integers";
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
      if (!spec.contains("high"))
        fail(where + " (index) needs 'high', an expression over the dims (\"N\": indices in [0, N))");
      init.fan_in = expr(spec.at("high"), where + ".high");
      break;
    case InitKind::kIntegers:
      json_check::keys(spec, {"kind", "low", "high"}, where, fail);
      if (!spec.contains("low") || !spec.contains("high"))
        fail(where + " (integers) needs 'low' and 'high' (integers in [low, high))");
      init.a = number("low", 0);
      init.b = number("high", 1);
      if (init.a != std::floor(init.a) || init.b != std::floor(init.b) || !(init.a < init.b) || std::abs(init.a) > 9.0e15 ||
          std::abs(init.b) > 9.0e15)
        fail(
            fmt::format("{}: 'low' {} and 'high' {} must be integers with low < high, each within +-9e15 (the data "
                        "are held as doubles)",
                        where, init.a, init.b));
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
  if (role == "parameter")
    t.role = Role::kParameter;
  else if (role == "input")
    t.role = Role::kInput;
  else if (role == "output")
    t.role = Role::kOutput;
  else
    fail(fmt::format("{}.role '{}' is not parameter, input or output", where, role));
  // A launch's args name the output 'out' whatever its name: a parameter or input of that name would
  // take its place (issue 34 #17).
  if (t.name == "out" && t.role != Role::kOutput)
    fail(fmt::format("{}: only the output may be named 'out' (launch args call the output 'out'); rename this {}", where,
                     role));
  parse_dtype_of(j, where, t);
  if (!j.contains("shape") || !j.at("shape").is_array()) fail(where + ".shape must be a list of expressions over the dims");
  for (std::size_t d = 0; d < j.at("shape").size(); ++d)
    t.shape.push_back(expression(j.at("shape")[d], fmt::format("{}.shape[{}] of tensor '{}'", where, d, t.name), true));
  if (t.role == Role::kOutput && t.shape.empty())
    fail(
        fmt::format("{}: the output '{}' has shape [] (0-d), which the reference and the kernels cannot share; give it "
                    "shape [\"1\"]",
                    where, t.name));
  if (t.role == Role::kOutput) {
    if (j.contains("init")) fail(where + ": an output has no 'init'");
  } else {
    if (!j.contains("init")) fail(fmt::format("{} ('{}') needs 'init' (normal, uniform, linear, ...)", where, t.name));
    t.init = parse_init(
        j.at("init"), where + ".init", [&](const Json& e, const std::string& w) { return expression(e, w, true); }, f);
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

namespace {

// "a bool tensor takes bernoulli or constant": the inits check_init lets a tensor of `d` have.
std::string inits_taken(DType d) {
  const std::string n(dtype_name(d));
  const char* article = n.front() == 'i' ? "an" : "a";  // an int8, a uint8
  if (d == DType::kBool) return "a bool tensor takes bernoulli or constant";
  if (!is_floating(d)) return fmt::format("{} {} tensor takes index, integers, constant or bernoulli", article, n);
  return fmt::format("{} {} tensor takes normal, uniform, linear, layernorm_weight, layernorm_bias, constant or bernoulli",
                     article, n);
}

}  // namespace

// The init suits every dtype the tensor may have: real-valued draws need a floating tensor, index
// and integers an integer one (not bool); an index's `high` names a dimension; a constant fits the dtype.
void Problem::Impl::check_init(const TensorDef& t, const std::string& where) const {
  const InitKind k = t.init.kind;
  for (const DType d : possible_dtypes(t)) {
    const std::string dn(dtype_name(d));
    if (float_init(k) && !is_floating(d))
      fail(fmt::format("{}: tensor '{}' is {}{}, but its init draws real numbers; {}", where, t.name, dn,
                       d == DType::kBool ? "" : ", an integer type", inits_taken(d)));
    if ((k == InitKind::kIndex || k == InitKind::kIntegers) && (is_floating(d) || d == DType::kBool))
      fail(fmt::format("{}: tensor '{}' is {}, but an {} init draws integers; {}", where, t.name, dn,
                       k == InitKind::kIndex ? "index" : "integers", inits_taken(d)));
    if (k == InitKind::kConstant && !is_floating(d) && !held_exactly(d, t.init.a))
      fail(fmt::format("{}: constant {} is not a value of {} (tensor '{}'); give an integer within [{}, {}]", where,
                       t.init.a, dn, t.name, dtype_lowest(d), dtype_max(d)));
    if (k == InitKind::kConstant && is_floating(d))
      if (const std::string why = beyond(d, t.init.a, t.name); !why.empty())
        fail(fmt::format("{}: constant {} {}", where, t.init.a, why));
    if (k == InitKind::kUniform && is_floating(d))
      if (const std::string why = beyond(d, std::max(std::abs(t.init.a), std::abs(t.init.b)), t.name); !why.empty())
        fail(fmt::format("{}: a uniform draw in [{}, {}] {}", where, t.init.a, t.init.b, why));
    constexpr double kNormalReach = 8.58;  // Box-Muller's largest |x| (problem_checks.cpp)
    if (const double reach = std::abs(t.init.a) + kNormalReach * t.init.b; k == InitKind::kNormal && is_floating(d))
      if (const std::string why = beyond(d, reach, t.name); !why.empty())
        fail(fmt::format("{}: a normal draw (mean {}, std {}) reaches {:.3g}, which {}", where, t.init.a, t.init.b, reach,
                         why));
    if (k == InitKind::kIntegers && (t.init.a < dtype_lowest(d) || t.init.b - 1 > dtype_max(d)))
      fail(fmt::format("{}: integers in [{}, {}) do not fit {} (tensor '{}', [{}, {}])", where, t.init.a, t.init.b, dn,
                       t.name, dtype_lowest(d), dtype_max(d)));
  }
  if (k == InitKind::kIndex) {
    const std::string& text = t.init.fan_in->text();
    const auto names = space::unknown_names(text, [](const std::string&) { return false; });
    if (std::none_of(names.begin(), names.end(),
                     [&](const std::string& n) { return std::find(dims.begin(), dims.end(), n) != dims.end(); }))
      fail(
          fmt::format("{}.high '{}' of tensor '{}' names no dimension; an index init's bound is a dimension (\"N\") or an "
                      "expression over the dims (use integers for fixed bounds)",
                      where, text, t.name));
  }
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
    case InitKind::kLayerNormWeight:
      return init::layernorm_weight_draw(dtype);
    case InitKind::kLayerNormBias:
      return init::layernorm_bias_draw(dtype);
    case InitKind::kNormal:
      return {Kind::kNormal, dtype, in.a, in.b};
    case InitKind::kUniform:
      return {Kind::kUniform, dtype, in.a, in.b};
    case InitKind::kIndex:
      return {Kind::kIndex, dtype, static_cast<double>(index_high(t))};
    case InitKind::kIntegers:
      return {Kind::kIntegers, dtype, in.a, in.b};
    case InitKind::kBernoulli:
      return {Kind::kBernoulli, dtype, in.a};
    default:
      return {Kind::kConstant, dtype, in.a};  // kConstant (outputs are never drawn)
  }
}

std::int64_t Problem::Impl::index_high(const TensorDef& t) const {
  const std::int64_t high = integer(*t.init.fan_in, "tensor '" + t.name + "' init high");
  if (high < 1)
    fail(fmt::format("tensor '{}': index init high '{}' gives {} at this shape; it must be at least 1", t.name,
                     t.init.fan_in->text(), high));
  if (static_cast<double>(high - 1) > dtype_max(dtype_of(t)))
    fail(fmt::format("tensor '{}': index init high '{}' gives {}, beyond {} ({} at most)", t.name, t.init.fan_in->text(),
                     high, dtype_name(dtype_of(t)), dtype_max(dtype_of(t))));
  return high;
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
    if (tensors[i].role == Role::kParameter)
      data.params.push_back(std::move(drawn[i]));
    else if (tensors[i].role == Role::kInput)
      data.inputs.push_back(std::move(drawn[i]));
  }
  return data;
}

}  // namespace tune

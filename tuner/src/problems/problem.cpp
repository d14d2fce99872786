// A problem read from its folder (docs/problem-format.md): dims, tensors, seeded data, edits,
// tolerance, work counts and the reference. The search-space keys of the same file are Space's.
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
#include <set>

#include <fmt/format.h>

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

enum class InitKind { kNone, kNormal, kUniform, kLinear, kLayerNormWeight, kLayerNormBias, kConstant, kBernoulli };

struct Init {
  InitKind kind = InitKind::kNone;
  double a = 0, b = 1;                    // normal: mean, std; uniform: low, high; constant: a; bernoulli: p = a
  std::optional<space::Expression> fan_in;  // linear
};

struct TensorDef {
  std::string name;
  Role role = Role::kInput;
  std::vector<space::Expression> shape;
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
  Tolerance tolerance;
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

  [[noreturn]] void fail(const std::string& what) const { throw ConfigError(file.string() + ": " + what); }

  space::Expression expression(const Json& j, const std::string& where) const {
    if (!j.is_string() && !j.is_number_integer()) fail(where + " must be an expression string or an integer");
    const std::string text = j.is_string() ? j.get<std::string>() : j.dump();
    try {
      return space::Expression(text, table);
    } catch (const std::invalid_argument& e) {
      fail(fmt::format("{} '{}': {}", where, text, e.what()));
    }
  }

  void bind(const Shape& shape) const {
    for (std::size_t d = 0; d < dims.size(); ++d) table.set(dim_slots[d], static_cast<double>(shape.at(dims[d])));
  }

  std::int64_t integer(const space::Expression& e, const std::string& where) const {
    const double v = e.eval();
    if (!std::isfinite(v) || v != std::floor(v) || std::abs(v) > 9.0e15)
      fail(fmt::format("{} '{}' gives {}, not an integer", where, e.text(), v));
    return static_cast<std::int64_t>(v);
  }

  TensorSpec spec(const TensorDef& t) const {
    TensorSpec s{t.name, {}};
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

  void parse_tensor(const Json& j, std::size_t i);
  // `where` is the edit's path; the top-level edits take a `purpose`, an edge case's edits do not.
  Edit parse_edit(const Json& j, const std::string& where, const std::vector<std::string>& loop_names, bool top_level);
  void parse_edge_case(const Json& j, std::size_t i, const std::vector<std::string>& loop_names);
  HostTensor draw(const TensorDef& t, Rng& rng) const;
  void apply(const Edit& e, HostTensor& t) const;
  void apply(const TensorSet& s, HostTensor& t) const;
  // With the table bound to a shape: every parameter and input of `seed` (outputs left empty),
  // indexed as `tensors`, and the same regrouped as ProblemData.
  std::vector<HostTensor> draw_all(std::uint64_t seed, DataPurpose purpose) const;
  ProblemData pack(std::vector<HostTensor> drawn) const;
};

namespace {

Init parse_init(const Json& j, const std::string& where, const std::function<space::Expression(const Json&, const std::string&)>& expr,
                const std::function<void(const std::string&)>& fail) {
  static const std::map<std::string, InitKind> kinds{
      {"normal", InitKind::kNormal},   {"uniform", InitKind::kUniform},
      {"linear", InitKind::kLinear},   {"layernorm_weight", InitKind::kLayerNormWeight},
      {"layernorm_bias", InitKind::kLayerNormBias}, {"constant", InitKind::kConstant},
      {"bernoulli", InitKind::kBernoulli}};
  const std::string names = "normal, uniform, linear, layernorm_weight, layernorm_bias, constant, bernoulli";
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
      init.fan_in = expr(spec.at("fan_in"), where + ".fan_in");
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
  const std::string dtype = j.contains("dtype") ? json_check::string(j, "dtype", where, f) : "float32";
  if (dtype != "float32") fail(fmt::format("{}.dtype '{}' is not supported (tensors are float32)", where, dtype));
  if (!j.contains("shape") || !j.at("shape").is_array()) fail(where + ".shape must be a list of expressions over the dims");
  for (std::size_t d = 0; d < j.at("shape").size(); ++d)
    t.shape.push_back(expression(j.at("shape")[d], fmt::format("{}.shape[{}]", where, d)));
  if (t.role == Role::kOutput) {
    if (j.contains("init")) fail(where + ": an output has no 'init'");
  } else {
    if (!j.contains("init")) fail(fmt::format("{} ('{}') needs 'init' (normal, uniform, linear, ...)", where, t.name));
    t.init = parse_init(j.at("init"), where + ".init", [&](const Json& e, const std::string& w) { return expression(e, w); }, f);
  }
  tensors.push_back(std::move(t));
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
  if (j.contains("when")) c.when = expression(j.at("when"), where + ".when");
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

HostTensor Problem::Impl::draw(const TensorDef& t, Rng& rng) const {
  HostTensor out{spec(t), {}};
  const Init& in = t.init;
  // The PyTorch-style initialisers are init.cpp's (the built-in problems' draws, bit for bit).
  switch (in.kind) {
    case InitKind::kLinear: {
      const std::int64_t fan_in = integer(*in.fan_in, "tensor '" + t.name + "' init fan_in");
      if (fan_in <= 0) fail(fmt::format("tensor '{}': fan_in '{}' gives {}", t.name, in.fan_in->text(), fan_in));
      return init::linear(out.spec, fan_in, rng);
    }
    case InitKind::kLayerNormWeight:
      return init::layernorm_weight(out.spec, rng);
    case InitKind::kLayerNormBias:
      return init::layernorm_bias(out.spec, rng);
    default:
      break;
  }
  out.data.resize(static_cast<std::size_t>(out.spec.elements()));
  switch (in.kind) {
    case InitKind::kNormal:
      for (float& v : out.data) v = static_cast<float>(in.a + in.b * rng.normal());
      break;
    case InitKind::kUniform:
      for (float& v : out.data) v = static_cast<float>(rng.uniform(in.a, in.b));
      break;
    case InitKind::kConstant:
      for (float& v : out.data) v = static_cast<float>(in.a);
      break;
    case InitKind::kBernoulli:
      for (float& v : out.data) v = rng.uniform01() < in.a ? 1.0f : 0.0f;
      break;
    default:  // kNone (outputs are never drawn); the initialisers above returned
      break;
  }
  return out;
}

void Problem::Impl::apply(const Edit& e, HostTensor& t) const {
  if (e.when && e.when->eval() == 0) return;
  std::vector<std::int64_t> bounds;
  for (const auto& [slot, bound] : e.loops) bounds.push_back(integer(bound, e.where + " loop bound"));
  for (const auto b : bounds)
    if (b <= 0) return;
  std::vector<std::int64_t> at(bounds.size(), 0);
  for (;;) {
    for (std::size_t l = 0; l < at.size(); ++l) table.set(e.loops[l].first, static_cast<double>(at[l]));
    std::int64_t flat = 0;
    for (std::size_t d = 0; d < e.index.size(); ++d) {
      const std::int64_t k = integer(e.index[d], fmt::format("{}.index[{}]", e.where, d));
      if (k < 0 || k >= t.spec.shape[d])
        fail(fmt::format("{}.index[{}] '{}' gives {}, outside tensor '{}' (size {}) at this shape", e.where, d,
                         e.index[d].text(), k, t.spec.name, t.spec.shape[d]));
      flat = flat * t.spec.shape[d] + k;
    }
    t.data[static_cast<std::size_t>(flat)] = static_cast<float>(e.value->eval());
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

void Problem::Impl::apply(const TensorSet& s, HostTensor& t) const {
  for (std::size_t k = 0; k < t.data.size(); ++k) {
    const double v = (s.fill ? *s.fill : static_cast<double>(t.data[k])) * s.scale + s.offset;
    if (!(std::abs(v) <= static_cast<double>(std::numeric_limits<float>::max())))
      fail(fmt::format("{}: element {} ({}) becomes {}, beyond float32; choose a smaller scale or offset", s.where, k,
                       t.data[k], v));
    t.data[k] = static_cast<float>(v);
  }
}

std::vector<HostTensor> Problem::Impl::draw_all(std::uint64_t seed, DataPurpose purpose) const {
  Rng rng(seed);
  std::vector<HostTensor> drawn(tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i)
    if (tensors[i].role != Role::kOutput) drawn[i] = draw(tensors[i], rng);
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
  std::ifstream in(p.file);
  if (!in) throw ConfigError(p.file.string() + ": cannot be read (pass --problem a folder with a problem.json)");
  try {
    p.json = Json::parse(in);
  } catch (const Json::exception& e) {  // syntax, and numbers out of range (1e999)
    p.fail(std::string("not valid JSON (") + e.what() + ")");
  }
  auto f = [&](const std::string& m) { p.fail(m); };
  const Json& j = p.json;
  if (!j.is_object()) p.fail("the top level must be a JSON object");
  for (const auto& [k, v] : j.items())
    if (k != "_comment" && !json_check::problem_file_keys().count(k))
      p.fail(fmt::format("unknown key '{}' (known: {})", k, fmt::join(json_check::problem_file_keys(), ", ")));
  p.name = json_check::string(j, "problem", "the file", f);
  if (p.name.empty() || p.name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != std::string::npos)
    p.fail(fmt::format("problem name '{}' must be letters, digits, '_' and '-' (it names the results folder)", p.name));
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
  }
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

  if (j.contains("tolerance")) {
    const Json& t = j.at("tolerance");
    json_check::keys(t, {"atol", "rtol"}, "tolerance", f);
    for (const char* k : {"atol", "rtol"}) {
      if (!t.contains(k)) continue;
      if (!t.at(k).is_number() || !(t.at(k).get<double>() >= 0) || !std::isfinite(t.at(k).get<double>()))
        p.fail(fmt::format("tolerance.{} must be a finite number >= 0", k));
    }
    p.tolerance.atol = t.value("atol", 1e-4);
    p.tolerance.rtol = t.value("rtol", 1e-4);
  }

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

  if (j.contains("work")) {
    const Json& w = j.at("work");
    json_check::keys(w, {"flop", "bytes"}, "work", f);
    if (w.contains("flop")) {
      p.flop = p.expression(w.at("flop"), "work.flop");
      p.flop_text = p.flop->text();
    }
    if (w.contains("bytes")) {
      p.bytes = p.expression(w.at("bytes"), "work.bytes");
      p.bytes_text = p.bytes->text();
    }
  }

  if (!j.contains("reference")) p.fail("'reference' must name the reference: {\"python\": \"reference.py\"}");
  const Json& r = j.at("reference");
  json_check::keys(r, {"python", "builtin"}, "reference", f);
  if (r.contains("python")) {
    p.python = p.file.parent_path() / json_check::string(r, "python", "reference", f);
    if (!std::filesystem::is_regular_file(*p.python))
      p.fail(fmt::format("reference.python: {} does not exist", p.python->string()));
  }
  if (r.contains("builtin")) {
    p.builtin = json_check::string(r, "builtin", "reference", f);
    if (!builtin_reference(p.builtin))
      p.fail(fmt::format("reference.builtin '{}' is not a reference built into this tune ({})", p.builtin,
                         fmt::join(builtin_reference_names(), ", ")));
  }
  if (!p.python && p.builtin.empty()) p.fail("'reference' must name a Python module: {\"python\": \"reference.py\"}");
  p.golden = p.file.parent_path() / (j.contains("golden") ? json_check::string(j, "golden", "the file", f) : "golden");
  return std::unique_ptr<Problem>(new Problem(std::move(impl)));
}

std::string_view Problem::name() const { return impl_->name; }
const std::string& Problem::description() const { return impl_->description; }
const std::filesystem::path& Problem::file() const { return impl_->file; }
std::filesystem::path Problem::golden_dir() const { return impl_->golden; }
const nlohmann::ordered_json& Problem::json() const { return impl_->json; }
std::vector<std::string> Problem::dims() const { return impl_->dims; }
Tolerance Problem::tolerance() const { return impl_->tolerance; }
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

std::string Problem::work_expression(const std::string& which) const {
  return which == "flop" ? impl_->flop_text : which == "bytes" ? impl_->bytes_text : std::string();
}

void Problem::check_shape(const Shape& shape) const {
  for (const auto& d : impl_->dims) {
    if (!shape.has(d))
      throw ShapeError(fmt::format("the shape needs --{} (problem {} takes {})", d, name(), fmt::join(impl_->dims, ", ")));
    const auto v = shape.at(d);
    if (v <= 0) throw ShapeError(fmt::format("--{} must be a positive integer, got {}", d, v));
  }
}

std::vector<TensorSpec> Problem::param_specs(const Shape& shape) const { return impl_->specs(shape, Role::kParameter); }
std::vector<TensorSpec> Problem::input_specs(const Shape& shape) const { return impl_->specs(shape, Role::kInput); }
TensorSpec Problem::output_spec(const Shape& shape) const { return impl_->specs(shape, Role::kOutput).at(0); }

ProblemData Problem::make_data(const Shape& shape, std::uint64_t seed, DataPurpose purpose) const {
  check_shape(shape);
  const Impl& p = *impl_;
  const std::lock_guard lock(p.mutex);
  p.bind(shape);
  return p.pack(p.draw_all(seed, purpose));
}

std::vector<std::string> Problem::edge_cases(const Shape& shape) const {
  check_shape(shape);
  const Impl& p = *impl_;
  const std::lock_guard lock(p.mutex);
  p.bind(shape);
  std::vector<std::string> out;
  for (const EdgeCase& c : p.edge_cases)
    if (!c.when || c.when->eval() != 0) out.push_back(c.name);
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
  if (c->when && c->when->eval() == 0)
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
                                       std::string* how) const {
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
  if (uses_builtin(backend)) {
    ref = builtin_reference(p.builtin)(shape, data);
    if (how) *how = "built-in C++ (" + p.builtin + ")";
  } else {
    if (!p.python) throw ConfigError(p.file.string() + ": no Python reference to run (reference.python)");
    ref = run_python_reference(*p.python, p.name, shape, data, out, how);
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

#include "tune/space.hpp"

#include <cmath>
#include <fstream>
#include <mutex>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "space/expr.hpp"
#include "tune/errors.hpp"

namespace tune {

DeviceLimits DeviceLimits::for_arch(int compute_capability) {
  DeviceLimits l;
  l.compute_capability = compute_capability;
  if (compute_capability >= 90) {
    l.max_smem_per_block = 227 * 1024;
    l.sm_count = 132;
  } else if (compute_capability >= 80) {
    l.max_smem_per_block = 163 * 1024;
    l.sm_count = 108;
  } else {
    l.max_smem_per_block = 64 * 1024;
    l.sm_count = 80;
  }
  return l;
}

namespace {

using Json = nlohmann::ordered_json;

struct Derived {
  std::string name;
  std::size_t slot;
  space::Expression expr;
};

struct ShapeRule {
  space::Expression expr;
  std::string message;
};

struct Launch {
  std::string kernel;
  space::Expression when;
  std::vector<std::string> template_args;
  std::vector<space::Expression> grid;
  std::vector<space::Expression> block;
  space::Expression dynamic_smem;
  std::vector<std::string> args;
};

struct Scratch {
  std::string name;
  space::Expression elements;
  space::Expression when;
};

}  // namespace

struct Space::Impl {
  std::string source_name;
  std::string problem;
  std::string template_name;
  std::vector<std::string> dims;
  std::map<std::string, std::int64_t> defaults;
  std::vector<Parameter> parameters;
  std::vector<double> numeric;  // flattened per parameter: numeric value of each choice
  std::vector<std::size_t> numeric_offset;
  mutable space::VariableTable table;  // values change per evaluation, under the mutex
  std::vector<std::size_t> dim_slots, param_slots;
  std::size_t dev_threads = 0, dev_smem = 0, dev_sms = 0, dev_cc = 0;
  std::vector<ShapeRule> shape_rules;
  std::vector<Derived> derived;
  std::vector<space::Expression> constraints;
  std::vector<Launch> launches;
  std::vector<Scratch> scratch;
  Config baseline;
  mutable std::mutex mutex;  // the variable table is shared by every expression

  [[noreturn]] void fail(const std::string& what) const { throw ConfigError(source_name + ": " + what); }

  space::Expression expression(const Json& j, const std::string& where) const {
    if (!j.is_string() && !j.is_number() && !j.is_boolean()) fail(where + " must be an expression string");
    std::string text = j.is_string() ? j.get<std::string>() : j.dump();
    if (j.is_boolean()) text = j.get<bool>() ? "1" : "0";
    try {
      return space::Expression(text, table);
    } catch (const std::invalid_argument& e) {
      fail(fmt::format("{} '{}': {}", where, text, e.what()));
    }
  }

  double value_of(std::size_t p, std::size_t choice) const { return numeric[numeric_offset[p] + choice]; }

  void bind(const Config& config, const Shape& shape, const DeviceLimits* limits) const {
    for (std::size_t d = 0; d < dims.size(); ++d) table.set(dim_slots[d], static_cast<double>(shape.at(dims[d])));
    for (std::size_t p = 0; p < parameters.size(); ++p) table.set(param_slots[p], value_of(p, config.choice[p]));
    const DeviceLimits l = limits ? *limits : DeviceLimits::for_arch(90);
    table.set(dev_threads, l.max_threads_per_block);
    table.set(dev_smem, static_cast<double>(l.max_smem_per_block));
    table.set(dev_sms, l.sm_count);
    table.set(dev_cc, l.compute_capability);
    for (const Derived& d : derived) table.set(d.slot, d.expr.eval());
  }

  std::string first_violation(const Config& config, const Shape& shape, const DeviceLimits& limits) const {
    bind(config, shape, &limits);
    for (const auto& c : constraints) {
      const double v = c.eval();
      if (!(v != 0) || std::isnan(v)) return c.text();
    }
    return {};
  }

  std::int64_t integer(const space::Expression& e, const std::string& where) const {
    const double v = e.eval();
    if (!std::isfinite(v) || v < 0 || v != std::floor(v))
      fail(fmt::format("{} '{}' gives {}, not a non-negative integer", where, e.text(), v));
    return static_cast<std::int64_t>(v);
  }

  std::int64_t arg_value(const std::string& name) const { return static_cast<std::int64_t>(std::llround(table.get(table.slot(name)))); }
};

Space::Space(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Space::Space(Space&&) noexcept = default;
Space& Space::operator=(Space&&) noexcept = default;
Space::~Space() = default;

Space Space::load(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw ConfigError(file.string() + ": cannot be read (does it exist? pass --config to choose another file)");
  Json json;
  try {
    json = Json::parse(in);
  } catch (const Json::parse_error& e) {
    throw ConfigError(file.string() + ": not valid JSON (" + std::string(e.what()) + ")");
  }
  return parse(json, file.string());
}

Space Space::parse(const Json& json, const std::string& source_name) {
  auto impl = std::make_unique<Impl>();
  Impl& s = *impl;
  s.source_name = source_name;
  auto need = [&](const Json& obj, const char* key, Json::value_t type, const std::string& where) -> const Json& {
    if (!obj.is_object() || !obj.contains(key)) s.fail(fmt::format("{} has no '{}'", where, key));
    const Json& v = obj.at(key);
    const bool ok = type == Json::value_t::number_integer ? v.is_number_integer() : v.type() == type;
    if (!ok) s.fail(fmt::format("'{}' in {} has the wrong type ({})", key, where, v.type_name()));
    return v;
  };
  if (!json.is_object()) s.fail("the top level must be a JSON object");
  const auto version = need(json, "schema_version", Json::value_t::number_integer, "the file").get<int>();
  if (version != 1) s.fail(fmt::format("schema_version {} is not supported (this tune reads 1)", version));
  s.problem = need(json, "problem", Json::value_t::string, "the file").get<std::string>();
  s.template_name = need(json, "template", Json::value_t::string, "the file").get<std::string>();

  // Shape dimensions.
  const Json& shape = need(json, "shape", Json::value_t::object, "the file");
  for (const Json& d : need(shape, "dims", Json::value_t::array, "'shape'")) {
    if (!d.is_string()) s.fail("'shape.dims' must list names");
    s.dims.push_back(d.get<std::string>());
  }
  if (s.dims.empty()) s.fail("'shape.dims' is empty");
  if (shape.contains("defaults")) {
    for (const auto& [k, v] : shape.at("defaults").items()) {
      if (std::find(s.dims.begin(), s.dims.end(), k) == s.dims.end()) s.fail("'shape.defaults' names unknown dimension '" + k + "'");
      if (!v.is_number_integer() || v.get<std::int64_t>() <= 0) s.fail("'shape.defaults." + k + "' must be a positive integer");
      s.defaults[k] = v.get<std::int64_t>();
    }
  }
  try {
    for (const auto& d : s.dims) s.dim_slots.push_back(s.table.declare(d));
  } catch (const std::invalid_argument& e) {
    s.fail(std::string("'shape.dims': ") + e.what());
  }

  // Parameters.
  const Json& params = need(json, "parameters", Json::value_t::array, "the file");
  if (params.empty()) s.fail("'parameters' is empty");
  for (const Json& p : params) {
    Parameter param;
    param.name = need(p, "name", Json::value_t::string, "a parameter").get<std::string>();
    const std::string where = "parameter '" + param.name + "'";
    const Json& values = need(p, "values", Json::value_t::array, where);
    if (values.empty()) s.fail(where + " has no values");
    std::set<std::string> seen;
    s.numeric_offset.push_back(s.numeric.size());
    for (std::size_t i = 0; i < values.size(); ++i) {
      const Json& v = values[i];
      if (!seen.insert(v.dump()).second) s.fail(fmt::format("{} lists {} twice", where, v.dump()));
      if (v.is_number_integer()) {
        s.numeric.push_back(static_cast<double>(v.get<std::int64_t>()));
      } else if (v.is_boolean()) {
        s.numeric.push_back(v.get<bool>() ? 1.0 : 0.0);
      } else if (v.is_string()) {
        s.numeric.push_back(static_cast<double>(i));
        try {
          s.table.define_constant(v.get<std::string>(), static_cast<double>(i));
        } catch (const std::invalid_argument& e) {
          s.fail(fmt::format("{} value {}: {}", where, v.dump(), e.what()));
        }
      } else {
        s.fail(fmt::format("{} value {} must be an integer, a boolean or a string", where, v.dump()));
      }
      param.values.push_back(v);
    }
    if (p.contains("absent")) {
      if (std::find(param.values.begin(), param.values.end(), p.at("absent")) == param.values.end())
        s.fail(fmt::format("{}: 'absent' value {} is not one of its values", where, p.at("absent").dump()));
      param.absent = p.at("absent");
    }
    try {
      s.param_slots.push_back(s.table.declare(param.name));
    } catch (const std::invalid_argument&) {
      s.fail(where + " is defined twice (or shares its name with a dimension)");
    }
    s.parameters.push_back(std::move(param));
  }
  s.dev_threads = s.table.declare("dev_max_threads");
  s.dev_smem = s.table.declare("dev_max_smem");
  s.dev_sms = s.table.declare("dev_sm_count");
  s.dev_cc = s.table.declare("dev_cc");

  // Derived values: each may use what precedes it. Declare all first, so the table is complete
  // before any expression binds its variables.
  std::vector<std::pair<std::string, Json>> derived_src;
  if (json.contains("derived")) {
    for (const Json& d : json.at("derived")) {
      const auto name = need(d, "name", Json::value_t::string, "a derived value").get<std::string>();
      if (!d.contains("expr")) s.fail("derived value '" + name + "' has no 'expr'");
      try {
        s.table.declare(name);
      } catch (const std::invalid_argument&) {
        s.fail("derived value '" + name + "' is defined twice (or shares a parameter's name)");
      }
      derived_src.emplace_back(name, d.at("expr"));
    }
  }
  for (const auto& [name, expr] : derived_src)
    s.derived.push_back({name, s.table.slot(name), s.expression(expr, "derived value '" + name + "'")});

  if (shape.contains("constraints")) {
    for (const Json& c : shape.at("constraints")) {
      const auto msg = need(c, "message", Json::value_t::string, "a shape constraint").get<std::string>();
      s.shape_rules.push_back({s.expression(c.value("expr", Json()), "shape constraint"), msg});
    }
  }
  if (json.contains("constraints")) {
    for (const Json& c : json.at("constraints")) s.constraints.push_back(s.expression(c, "constraint"));
  }

  // Launches.
  const Json& launches = need(json, "launches", Json::value_t::array, "the file");
  if (launches.empty()) s.fail("'launches' is empty");
  auto dims3 = [&](const Json& j, const std::string& where) {
    std::vector<space::Expression> out;
    if (j.is_array()) {
      if (j.empty() || j.size() > 3) s.fail(where + " must have 1 to 3 entries");
      for (const Json& e : j) out.push_back(s.expression(e, where));
    } else {
      out.push_back(s.expression(j, where));
    }
    return out;
  };
  for (const Json& l : launches) {
    const auto kernel = need(l, "kernel", Json::value_t::string, "a launch").get<std::string>();
    const std::string where = "launch '" + kernel + "'";
    std::vector<std::string> targs;
    for (const Json& a : need(l, "template_args", Json::value_t::array, where)) {
      if (!a.is_string() || !s.table.has(a.get<std::string>()))
        s.fail(fmt::format("{} template argument {} is not a dimension, parameter or derived value", where, a.dump()));
      targs.push_back(a.get<std::string>());
    }
    std::vector<std::string> args;
    for (const Json& a : need(l, "args", Json::value_t::array, where)) {
      if (!a.is_string()) s.fail(where + " 'args' must list buffer names");
      args.push_back(a.get<std::string>());
    }
    if (!l.contains("grid") || !l.contains("block")) s.fail(where + " needs 'grid' and 'block'");
    s.launches.push_back(Launch{kernel, s.expression(l.value("when", Json("1")), where + " 'when'"), std::move(targs),
                                dims3(l.at("grid"), where + " 'grid'"), dims3(l.at("block"), where + " 'block'"),
                                s.expression(l.value("dynamic_smem", Json("0")), where + " 'dynamic_smem'"),
                                std::move(args)});
  }
  if (json.contains("scratch")) {
    for (const Json& b : json.at("scratch")) {
      const auto name = need(b, "name", Json::value_t::string, "a scratch buffer").get<std::string>();
      if (!b.contains("elements")) s.fail("scratch buffer '" + name + "' has no 'elements'");
      s.scratch.push_back({name, s.expression(b.at("elements"), "scratch '" + name + "' elements"),
                           s.expression(b.value("when", Json("1")), "scratch '" + name + "' when")});
    }
  }

  Space space(std::move(impl));
  const Json& base = need(json, "baseline", Json::value_t::object, "the file");
  try {
    space.impl_->baseline = space.from_json(base);
  } catch (const InputError& e) {
    s.fail(std::string("'baseline' is not in the space: ") + e.what());
  }
  return space;
}

const std::string& Space::problem() const { return impl_->problem; }
const std::string& Space::template_name() const { return impl_->template_name; }
const std::string& Space::source_name() const { return impl_->source_name; }
const std::vector<Parameter>& Space::parameters() const { return impl_->parameters; }
const std::map<std::string, std::int64_t>& Space::default_dims() const { return impl_->defaults; }
const Config& Space::baseline() const { return impl_->baseline; }

void Space::check_shape(const Shape& shape) const {
  std::lock_guard lock(impl_->mutex);
  const Impl& s = *impl_;
  for (std::size_t d = 0; d < s.dims.size(); ++d) s.table.set(s.dim_slots[d], static_cast<double>(shape.at(s.dims[d])));
  for (const ShapeRule& r : s.shape_rules) {
    const double v = r.expr.eval();
    if (!(v != 0) || std::isnan(v)) throw ShapeError(fmt::format("shape {} is not supported: {}", shape.describe(), r.message));
  }
}

Enumeration Space::enumerate(const Shape& shape, const DeviceLimits& limits) const {
  std::lock_guard lock(impl_->mutex);
  const Impl& s = *impl_;
  Enumeration out;
  std::map<std::string, std::size_t> rejected;
  std::vector<std::string> order;
  Config c;
  c.choice.assign(s.parameters.size(), 0);
  for (;;) {
    ++out.total;
    const std::string why = s.first_violation(c, shape, limits);
    if (why.empty()) {
      out.configs.push_back(c);
    } else if (rejected[why]++ == 0) {
      order.push_back(why);
    }
    // Odometer: the last parameter varies fastest.
    std::size_t p = s.parameters.size();
    while (p > 0) {
      --p;
      if (++c.choice[p] < s.parameters[p].values.size()) break;
      c.choice[p] = 0;
      if (p == 0) {
        for (const auto& w : order) out.rejected_by.emplace_back(w, rejected[w]);
        return out;
      }
    }
    if (s.parameters.empty()) break;
  }
  return out;
}

std::string Space::violated_constraint(const Config& config, const Shape& shape, const DeviceLimits& limits) const {
  std::lock_guard lock(impl_->mutex);
  return impl_->first_violation(config, shape, limits);
}

Lowered Space::lower(const Config& config, const Shape& shape) const {
  std::lock_guard lock(impl_->mutex);
  const Impl& s = *impl_;
  s.bind(config, shape, nullptr);
  Lowered out;
  out.template_name = s.template_name;
  for (const Launch& l : s.launches) {
    if (l.when.eval() == 0) continue;
    KernelLaunch k;
    k.kernel = l.kernel;
    std::vector<std::int64_t> values;
    for (const auto& a : l.template_args) values.push_back(s.arg_value(a));
    k.name_expression = fmt::format("{}<{}>", l.kernel, fmt::join(values, ","));
    for (std::size_t i = 0; i < l.grid.size(); ++i)
      k.grid[i] = static_cast<unsigned>(s.integer(l.grid[i], "launch '" + l.kernel + "' grid"));
    for (std::size_t i = 0; i < l.block.size(); ++i)
      k.block[i] = static_cast<unsigned>(s.integer(l.block[i], "launch '" + l.kernel + "' block"));
    k.dynamic_smem = static_cast<unsigned>(s.integer(l.dynamic_smem, "launch '" + l.kernel + "' dynamic_smem"));
    k.args = l.args;
    out.launches.push_back(std::move(k));
  }
  for (const Scratch& b : s.scratch) {
    if (b.when.eval() == 0) continue;
    out.scratch.push_back({b.name, {s.integer(b.elements, "scratch '" + b.name + "' elements")}});
  }
  if (out.launches.empty()) s.fail("no launch applies to configuration " + name(config));
  return out;
}

nlohmann::ordered_json Space::to_json(const Config& config) const {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (std::size_t p = 0; p < impl_->parameters.size(); ++p)
    j[impl_->parameters[p].name] = impl_->parameters[p].values.at(config.choice.at(p));
  return j;
}

Config Space::from_json(const nlohmann::ordered_json& params) const {
  if (!params.is_object()) throw InputError("a configuration must be a JSON object of parameter values");
  Config c;
  for (const Parameter& p : impl_->parameters) {
    if (!params.contains(p.name) && !p.absent) throw InputError("parameter '" + p.name + "' is missing");
    const auto& v = params.contains(p.name) ? params.at(p.name) : *p.absent;
    auto it = std::find(p.values.begin(), p.values.end(), v);
    if (it == p.values.end()) throw InputError(fmt::format("parameter '{}' has no value {}", p.name, v.dump()));
    c.choice.push_back(static_cast<std::size_t>(it - p.values.begin()));
  }
  for (const auto& [k, v] : params.items()) {
    const auto& ps = impl_->parameters;
    if (std::none_of(ps.begin(), ps.end(), [&](const Parameter& p) { return p.name == k; }))
      throw InputError("unknown parameter '" + k + "'");
  }
  return c;
}

std::string Space::name(const Config& config) const {
  std::string out;
  for (std::size_t p = 0; p < impl_->parameters.size(); ++p) {
    const auto& v = impl_->parameters[p].values.at(config.choice.at(p));
    out += fmt::format("{}{}={}", p ? "," : "", impl_->parameters[p].name,
                       v.is_string() ? v.get<std::string>() : v.dump());
  }
  return out;
}

std::int64_t Space::numeric(const Config& config, const std::string& parameter) const {
  for (std::size_t p = 0; p < impl_->parameters.size(); ++p)
    if (impl_->parameters[p].name == parameter)
      return static_cast<std::int64_t>(impl_->value_of(p, config.choice.at(p)));
  throw InputError("unknown parameter '" + parameter + "'");
}

}  // namespace tune

// Reading a space file: its shape, parameters, derived values, constraints, launches and scratch
// buffers into Space::Impl (space_impl.hpp).
#include <algorithm>
#include <fstream>
#include <set>

#include <fmt/format.h>

#include "core/json_file.hpp"
#include "problem/json_check.hpp"
#include "space/kernel_scan.hpp"
#include "space/space_impl.hpp"
#include "tune/dtype.hpp"
#include "tune/hash.hpp"

namespace tune {

using space_file::Derived;
using space_file::Json;
using space_file::Launch;
using space_file::Scratch;
using space_file::ShapeRule;

void Space::Impl::load_sources(const std::filesystem::path& base, const std::vector<std::filesystem::path>& template_dirs,
                               const std::vector<std::string>& include_dirs) {
  sources = load_kernel_sources({base, template_name, template_dirs, include_dirs}, failer());
}

Space Space::load(const std::filesystem::path& file, const std::vector<std::filesystem::path>& template_dirs) {
  if (!std::ifstream(file))
    throw ConfigError(file.string() + ": cannot be read (does it exist? pass --config to choose another file)");
  Json json;
  try {
    json = json_file::read(file);  // bounded in size and depth
  } catch (const InputError& e) {
    throw ConfigError(e.what());
  }
  return parse(json, file.string(), file.parent_path().empty() ? std::filesystem::path(".") : file.parent_path(),
               template_dirs);
}

const Json& Space::Impl::need(const Json& obj, const char* key, Json::value_t type, const std::string& where) const {
  if (!obj.is_object() || !obj.contains(key)) fail(fmt::format("{} has no '{}'", where, key));
  const Json& v = obj.at(key);
  const bool ok = type == Json::value_t::number_integer ? v.is_number_integer() : v.type() == type;
  if (!ok) fail(fmt::format("'{}' in {} has the wrong type ({})", key, where, v.type_name()));
  return v;
}

void Space::Impl::parse_header(const Json& json) {
  if (!json.is_object()) fail("the top level must be a JSON object");
  for (const auto& [k, v] : json.items())
    if (k != "_comment" && !json_check::problem_file_keys().count(k))
      fail(fmt::format("unknown key '{}' (known: {})", k, fmt::join(json_check::problem_file_keys(), ", ")));
  const auto version = need(json, "schema_version", Json::value_t::number_integer, "the file").get<int>();
  if (version != 1) fail(fmt::format("schema_version {} is not supported (this tune reads 1)", version));
  problem = need(json, "problem", Json::value_t::string, "the file").get<std::string>();
  template_name = need(json, "template", Json::value_t::string, "the file").get<std::string>();
}

// Shape dimensions, their defaults and their variables (the constraints come after the derived values).
const Json& Space::Impl::parse_shape(const Json& json) {
  const Json& shape = need(json, "shape", Json::value_t::object, "the file");
  json_check::keys(shape, {"dims", "defaults", "constraints"}, "shape", failer());
  for (const Json& d : need(shape, "dims", Json::value_t::array, "'shape'")) {
    if (!d.is_string()) fail("'shape.dims' must list names");
    dims.push_back(d.get<std::string>());
  }
  if (dims.empty()) fail("'shape.dims' is empty");
  if (shape.contains("defaults")) {
    for (const auto& [k, v] : shape.at("defaults").items()) {
      if (std::find(dims.begin(), dims.end(), k) == dims.end()) fail("'shape.defaults' names unknown dimension '" + k + "'");
      if (!v.is_number_integer() || v.get<std::int64_t>() <= 0)
        fail("'shape.defaults." + k + "' must be a positive integer");
      defaults[k] = v.get<std::int64_t>();
    }
  }
  for (const auto& d : dims)
    if (d.starts_with("dev_"))
      fail(fmt::format("'shape.dims': '{}': names starting with dev_ are the device's limits; rename it", d));
  try {
    for (const auto& d : dims) dim_slots.push_back(table.declare(d));
  } catch (const std::invalid_argument& e) {
    fail(std::string("'shape.dims': ") + e.what());
  }
  dtype_vars = dtype_vars::parse(json, failer());
  dtype_slots = dtype_vars::declare(dtype_vars, table, failer());
  return shape;
}

// Value i of a parameter: its number in expressions (a string is a constant named by itself).
void Space::Impl::parse_parameter_value(const Json& v, std::size_t i, const std::string& where) {
  if (v.is_number_integer()) {
    numeric.push_back(static_cast<double>(v.get<std::int64_t>()));
  } else if (v.is_boolean()) {
    numeric.push_back(v.get<bool>() ? 1.0 : 0.0);
  } else if (v.is_string()) {
    numeric.push_back(static_cast<double>(i));
    // A string value is a constant of every expression: it may not take a device limit's name.
    if (v.get<std::string>().starts_with("dev_"))
      fail(
          fmt::format("{} value {}: names starting with dev_ are the device's limits (dev_max_threads, "
                      "dev_max_smem, dev_sm_count, dev_cc); rename it",
                      where, v.dump()));
    try {
      table.define_constant(v.get<std::string>(), static_cast<double>(i));
    } catch (const std::invalid_argument& e) {
      fail(fmt::format("{} value {}: {}", where, v.dump(), e.what()));
    }
  } else {
    fail(fmt::format("{} value {} must be an integer, a boolean or a string", where, json_file::brief(v)));
  }
}

// What holds `name` in the expressions already, for a refusal ("the dimension 'N'"); "" when none
// of the file's dims, dtype variables, parameters and their string values does.
std::string Space::Impl::holder_of(const std::string& name) const {
  if (std::find(dims.begin(), dims.end(), name) != dims.end()) return fmt::format("the dimension '{}'", name);
  for (const DTypeVariable& v : dtype_vars)
    if (v.name == name || v.name + "_bytes" == name)
      return fmt::format("the dtype variable '{}'{}", v.name, v.name == name ? "" : "'s size in bytes");
  if (!dtype_vars.empty() && parse_dtype(name))
    return "a dtype's name (a constant of expressions once the file declares 'dtypes')";
  for (const Parameter& p : parameters) {
    if (p.name == name) return fmt::format("the parameter '{}'", name);
    for (const Json& v : p.values)
      if (v.is_string() && v.get<std::string>() == name)
        return fmt::format("a value of the parameter '{}' ({}, a constant of expressions)", p.name, v.dump());
  }
  return "";
}

// A variable of the expressions, its slot. `where` names it ("derived value 'x'"), `kind` says
// what it is ("derived value"): a name taken by another of its kind is defined twice.
std::size_t Space::Impl::declare_name(const std::string& name, const std::string& where, const std::string& kind) {
  try {
    return table.declare(name);
  } catch (const std::invalid_argument& e) {
    if (std::string(e.what()).find("defined twice") == std::string::npos) fail(fmt::format("{}: {}", where, e.what()));
    const std::string holder = holder_of(name);
    if (holder.empty() || holder.starts_with("the " + kind + " '")) fail(where + " is defined twice; rename one");
    fail(fmt::format("{} has the name of {}; rename it", where, holder));
  }
}

void Space::Impl::parse_parameters(const Json& json) {
  const Json& params = need(json, "parameters", Json::value_t::array, "the file");
  if (params.empty()) fail("'parameters' is empty");
  for (std::size_t pi = 0; pi < params.size(); ++pi) {
    const Json& p = params[pi];
    json_check::keys(p, {"name", "values", "absent"}, fmt::format("parameters[{}]", pi), failer());
    Parameter param;
    param.name = need(p, "name", Json::value_t::string, "a parameter").get<std::string>();
    const std::string where = "parameter '" + param.name + "'";
    const Json& values = need(p, "values", Json::value_t::array, where);
    if (values.empty()) fail(where + " has no values");
    std::set<std::string> seen;
    numeric_offset.push_back(numeric.size());
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (!seen.insert(values[i].dump()).second) fail(fmt::format("{} lists {} twice", where, values[i].dump()));
      parse_parameter_value(values[i], i, where);
      param.values.push_back(values[i]);
    }
    if (p.contains("absent")) {
      if (std::find(param.values.begin(), param.values.end(), p.at("absent")) == param.values.end())
        fail(fmt::format("{}: 'absent' value {} is not one of its values", where, json_file::brief(p.at("absent"))));
      param.absent = p.at("absent");
    }
    if (param.name.starts_with("dev_"))
      fail(
          fmt::format("{}: names starting with dev_ are the device's limits (dev_max_threads, dev_max_smem, "
                      "dev_sm_count, dev_cc); rename it",
                      where));
    param_slots.push_back(declare_name(param.name, where, "parameter"));
    parameters.push_back(std::move(param));
  }
  dev_threads = table.declare("dev_max_threads");
  dev_smem = table.declare("dev_max_smem");
  dev_sms = table.declare("dev_sm_count");
  dev_cc = table.declare("dev_cc");
}

// Derived values: each may use what precedes it. Declare all first, so the table is complete
// before any expression binds its variables.
void Space::Impl::parse_derived(const Json& json) {
  std::vector<std::pair<std::string, Json>> derived_src;
  if (json.contains("derived")) {
    if (!json.at("derived").is_array()) fail("'derived' must be a list");
    for (std::size_t di = 0; di < json.at("derived").size(); ++di) {
      const Json& d = json.at("derived")[di];
      json_check::keys(d, {"name", "expr"}, fmt::format("derived[{}]", di), failer());
      const auto name = need(d, "name", Json::value_t::string, "a derived value").get<std::string>();
      if (!d.contains("expr")) fail("derived value '" + name + "' has no 'expr'");
      if (name.starts_with("dev_"))
        fail(
            fmt::format("derived value '{}': names starting with dev_ are the device's limits (dev_max_threads, "
                        "dev_max_smem, dev_sm_count, dev_cc); rename it",
                        name));
      declare_name(name, "derived value '" + name + "'", "derived value");
      derived_src.emplace_back(name, d.at("expr"));
    }
  }
  // Each is computed in order: one that names itself or a later one would read a value left from the
  // configuration evaluated before (refused here, as a constraint naming a later value is).
  for (std::size_t k = 0; k < derived_src.size(); ++k) {
    const auto& [name, expr] = derived_src[k];
    const std::string where = "derived value '" + name + "'";
    space::Expression e = expression(expr, where);
    for (const auto& v : e.variables())
      for (std::size_t later = k; later < derived_src.size(); ++later)
        if (derived_src[later].first == v)
          fail(
              fmt::format("{} uses '{}', {}; a derived value may use only the dimensions, parameters and the "
                          "derived values declared before it: reorder 'derived'",
                          where, v, later == k ? "itself" : "which is declared after it"));
    derived.push_back({name, table.slot(name), std::move(e)});
  }
}

void Space::Impl::parse_constraints(const Json& json, const Json& shape) {
  if (shape.contains("constraints")) {
    if (!shape.at("constraints").is_array()) fail("'shape.constraints' must be a list");
    for (std::size_t ci = 0; ci < shape.at("constraints").size(); ++ci) {
      const Json& c = shape.at("constraints")[ci];
      json_check::keys(c, {"expr", "message"}, fmt::format("shape.constraints[{}]", ci), failer());
      const auto msg = need(c, "message", Json::value_t::string, "a shape constraint").get<std::string>();
      shape_rules.push_back({expression(c.value("expr", Json()), "shape constraint"), msg});
    }
  }
  if (json.contains("constraints")) {
    for (const Json& c : json.at("constraints")) constraints.push_back(expression(c, "constraint"));
  }
}

// A grid or block: one expression, or a list of 1 to 3.
std::vector<space::Expression> Space::Impl::dims3(const Json& j, const std::string& where) const {
  std::vector<space::Expression> out;
  if (j.is_array()) {
    if (j.empty() || j.size() > 3) fail(where + " must have 1 to 3 entries");
    for (const Json& e : j) out.push_back(expression(e, where));
  } else {
    out.push_back(expression(j, where));
  }
  return out;
}

void Space::Impl::parse_launches(const Json& json) {
  const Json& list = need(json, "launches", Json::value_t::array, "the file");
  if (list.empty()) fail("'launches' is empty");
  for (std::size_t li = 0; li < list.size(); ++li) {
    const Json& l = list[li];
    json_check::keys(l, {"kernel", "when", "template_args", "grid", "block", "dynamic_smem", "args"},
                     fmt::format("launches[{}]", li), failer());
    const auto kernel = need(l, "kernel", Json::value_t::string, "a launch").get<std::string>();
    const std::string where = "launch '" + kernel + "'";
    std::vector<std::string> targs;
    for (const Json& a : need(l, "template_args", Json::value_t::array, where)) {
      if (!a.is_string() || !table.has(a.get<std::string>()))
        fail(fmt::format("{} template argument {} is not a dimension, dtype variable, parameter or derived value", where,
                         json_file::brief(a)));
      targs.push_back(a.get<std::string>());
    }
    std::vector<std::string> args;
    for (const Json& a : need(l, "args", Json::value_t::array, where)) {
      if (!a.is_string()) fail(where + " 'args' must list buffer names");
      args.push_back(a.get<std::string>());
    }
    if (!l.contains("grid") || !l.contains("block")) fail(where + " needs 'grid' and 'block'");
    launches.push_back(Launch{kernel, expression(l.value("when", Json("1")), where + " 'when'"), std::move(targs),
                              dims3(l.at("grid"), where + " 'grid'"), dims3(l.at("block"), where + " 'block'"),
                              expression(l.value("dynamic_smem", Json("0")), where + " 'dynamic_smem'"), std::move(args)});
  }
}

void Space::Impl::parse_scratch(const Json& json) {
  if (!json.contains("scratch")) return;
  if (!json.at("scratch").is_array()) fail("'scratch' must be a list");
  for (std::size_t bi = 0; bi < json.at("scratch").size(); ++bi) {
    const Json& b = json.at("scratch")[bi];
    json_check::keys(b, {"name", "elements", "when"}, fmt::format("scratch[{}]", bi), failer());
    const auto name = need(b, "name", Json::value_t::string, "a scratch buffer").get<std::string>();
    if (name.empty()) fail(fmt::format("scratch[{}].name is empty", bi));
    if (std::any_of(scratch.begin(), scratch.end(), [&](const Scratch& o) { return o.name == name; }))
      fail(fmt::format("scratch[{}]: scratch buffer '{}' is declared twice", bi, name));
    if (!b.contains("elements")) fail("scratch buffer '" + name + "' has no 'elements'");
    scratch.push_back({name, expression(b.at("elements"), "scratch '" + name + "' elements"),
                       expression(b.value("when", Json("1")), "scratch '" + name + "' when")});
  }
}

// Every launch names a __global__ function of the templates, with as many parameters as its args.
void Space::Impl::check_kernels() {
  const std::vector<std::string> stripped = stripped_sources(*sources);
  for (const Launch& l : launches) {
    const std::optional<int> count = kernel_parameter_count(stripped, l.kernel);
    if (!count) {
      std::vector<std::string> files;
      for (const auto& f : sources->files) files.push_back(f.string());
      fail(fmt::format("launch '{}': no __global__ function '{}' in the template files ({})", l.kernel, l.kernel,
                       fmt::join(files, ", ")));
    }
    if (*count != kUncounted && *count != static_cast<int>(l.args.size()))
      fail(fmt::format("launch '{}' passes {} args but the kernel takes {} parameters", l.kernel, l.args.size(), *count));
  }
}

// What source_hash covers: the file, and with a folder the templates it loads (checked here).
std::string Space::Impl::hash_input(const Json& json, const std::optional<std::filesystem::path>& base_dir,
                                    const std::vector<std::filesystem::path>& template_dirs) {
  std::vector<std::string> include_dirs;
  if (json.contains("include_dirs")) {
    if (!json.at("include_dirs").is_array()) fail("'include_dirs' must list folders relative to the file");
    for (const Json& d : json.at("include_dirs")) {
      if (!d.is_string()) fail("'include_dirs' must list folders relative to the file");
      include_dirs.push_back(d.get<std::string>());
    }
  }
  std::string hashed = json.dump();
  if (!base_dir) return hashed;
  load_sources(*base_dir, template_dirs, include_dirs);
  check_kernels();
  hashed += '\0' + sources->main;
  for (const auto& [name, text] : sources->headers) hashed += '\0' + name + '\0' + text;
  return hashed;
}

Space Space::parse(const Json& json, const std::string& source_name, const std::optional<std::filesystem::path>& base_dir,
                   const std::vector<std::filesystem::path>& template_dirs) {
  auto impl = std::make_unique<Impl>();
  Impl& s = *impl;
  s.source_name = source_name;
  s.parse_header(json);
  const Json& shape = s.parse_shape(json);
  s.parse_parameters(json);
  s.parse_derived(json);
  s.parse_constraints(json, shape);
  s.parse_launches(json);
  s.parse_scratch(json);
  s.source_hash = content_hash({s.hash_input(json, base_dir, template_dirs)});

  Space space(std::move(impl));
  const Json& base = s.need(json, "baseline", Json::value_t::object, "the file");
  try {
    space.impl_->baseline = space.from_json(base);
  } catch (const InputError& e) {
    s.fail(std::string("'baseline' is not in the space: ") + e.what());
  }
  return space;
}

}  // namespace tune

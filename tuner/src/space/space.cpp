#include "tune/space.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <mutex>
#include <optional>
#include <random>
#include <set>

#include <fmt/format.h>

#include "io/json_file.hpp"
#include "problems/dtype_vars.hpp"
#include "problems/json_check.hpp"
#include "space/expr.hpp"
#include "space/kernel_scan.hpp"
#include "space/sources.hpp"
#include "tune/errors.hpp"
#include "tune/journal.hpp"

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

// A scratch buffer past this is refused when lowered: 4 TiB of float32, past any GPU's memory.
constexpr std::int64_t kMaxScratchElements = std::int64_t{1} << 40;

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
  std::vector<DTypeVariable> dtype_vars;  // the file's `dtypes` (issue 35)
  std::vector<std::size_t> dtype_slots;   // dtype_vars::declare's
  std::size_t dev_threads = 0, dev_smem = 0, dev_sms = 0, dev_cc = 0;
  std::vector<ShapeRule> shape_rules;
  std::vector<Derived> derived;
  std::vector<space::Expression> constraints;
  std::vector<Launch> launches;
  std::vector<Scratch> scratch;
  Config baseline;
  std::shared_ptr<const KernelSources> sources;
  std::string source_hash;
  mutable std::mutex mutex;  // the variable table is shared by every expression

  [[noreturn]] void fail(const std::string& what) const { throw ConfigError(source_name + ": " + what); }

  space::Expression expression(const Json& j, const std::string& where) const {
    if (!j.is_string() && !j.is_number() && !j.is_boolean()) fail(where + " must be an expression string");
    std::string text = j.is_string() ? j.get<std::string>() : j.dump();
    if (j.is_boolean()) text = j.get<bool>() ? "1" : "0";
    const auto unknown = space::unknown_names(
        text, [&](const std::string& n) { return table.has(n) || table.constants().count(n) > 0; });
    if (!unknown.empty())
      fail(fmt::format("{} '{}' uses '{}', which is not a dimension, parameter or derived value declared before it", where,
                       text, unknown.front()));
    try {
      return space::Expression(text, table);
    } catch (const std::invalid_argument& e) {
      fail(fmt::format("{} '{}': {}", where, text, e.what()));
    }
  }

  double value_of(std::size_t p, std::size_t choice) const { return numeric[numeric_offset[p] + choice]; }

  void bind(const Config& config, const Shape& shape, const DeviceLimits& l) const {
    for (std::size_t d = 0; d < dims.size(); ++d) table.set(dim_slots[d], static_cast<double>(shape.at(dims[d])));
    dtype_vars::bind(dtype_vars, dtype_slots, shape, table);
    for (std::size_t p = 0; p < parameters.size(); ++p) table.set(param_slots[p], value_of(p, config.choice[p]));
    table.set(dev_threads, l.max_threads_per_block);
    table.set(dev_smem, static_cast<double>(l.max_smem_per_block));
    table.set(dev_sms, l.sm_count);
    table.set(dev_cc, l.compute_capability);
    for (const Derived& d : derived) table.set(d.slot, d.expr.eval());
  }

  std::string first_violation(const Config& config, const Shape& shape, const DeviceLimits& limits) const {
    bind(config, shape, limits);
    for (const auto& c : constraints) {
      const double v = c.eval();
      if (!(v != 0) || std::isnan(v)) return c.text();
    }
    return {};
  }

  std::int64_t integer(const space::Expression& e, const std::string& where) const {
    const double v = e.eval();
    if (!std::isfinite(v) || v < 0 || v != std::floor(v) || v > 9.0e18)
      fail(fmt::format("{} '{}' gives {}, not a non-negative integer", where, e.text(), v));
    return static_cast<std::int64_t>(v);
  }

  // A template argument: an integer that fits a C++ int, or the configuration is refused.
  std::int64_t arg_value(const std::string& kernel, const std::string& name) const {
    const double v = table.get(table.slot(name));
    if (!std::isfinite(v) || v != std::floor(v) || v < -2147483648.0 || v > 2147483647.0)
      fail(fmt::format("launch '{}' template argument '{}' is {}, not an integer that fits an int; make it an integer "
                       "expression (cdiv, floor) or constrain it",
                       kernel, name, v));
    return static_cast<std::int64_t>(v);
  }

  // A template argument as the kernel's name expression spells it: a dtype variable's CUDA type
  // (__nv_bfloat16), else the integer value.
  std::string template_arg(const std::string& kernel, const std::string& name, const Shape& shape) const {
    for (const DTypeVariable& v : dtype_vars)
      if (v.name == name) return std::string(dtype_cuda_type(dtype_vars::value(v, shape).value_or(v.values.front())));
    return std::to_string(arg_value(kernel, name));
  }

  // Launch geometry: grid.x below 2^31, grid.y/z and block below 2^16, at least 1.
  unsigned geometry(const space::Expression& e, const std::string& where, std::int64_t limit) const {
    const std::int64_t v = integer(e, where);
    if (v < 1 || v > limit)
      fail(fmt::format("{} '{}' gives {}, outside [1, {}]; constrain the shape or the parameters", where, e.text(), v, limit));
    return static_cast<unsigned>(v);
  }

  void load_sources(const std::filesystem::path& base, const std::vector<std::filesystem::path>& template_dirs,
                    const std::vector<std::string>& include_dirs);

  // The readers of a problem file's parts (Space::parse calls them in the file's order of meaning:
  // each expression may name only what was declared before it). Each fails with the key's path.
  const Json& need(const Json& obj, const char* key, Json::value_t type, const std::string& where) const;
  // fail() as json_check::keys takes it.
  auto failer() const {
    return [this](const std::string& m) { fail(m); };
  }
  void parse_header(const Json& json);
  const Json& parse_shape(const Json& json);
  void parse_parameters(const Json& json);
  void parse_parameter_value(const Json& v, std::size_t i, const std::string& where);
  std::size_t declare_name(const std::string& name, const std::string& where, const std::string& twice);
  void parse_derived(const Json& json);
  void parse_constraints(const Json& json, const Json& shape);
  std::vector<space::Expression> dims3(const Json& j, const std::string& where) const;
  void parse_launches(const Json& json);
  void parse_scratch(const Json& json);
  void check_kernels();
  std::string hash_input(const Json& json, const std::optional<std::filesystem::path>& base_dir,
                         const std::vector<std::filesystem::path>& template_dirs);
};

void Space::Impl::load_sources(const std::filesystem::path& base, const std::vector<std::filesystem::path>& template_dirs,
                               const std::vector<std::string>& include_dirs) {
  sources = load_kernel_sources({base, template_name, template_dirs, include_dirs}, failer());
}

Space::Space(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Space::Space(Space&&) noexcept = default;
Space& Space::operator=(Space&&) noexcept = default;
Space::~Space() = default;

Space Space::load(const std::filesystem::path& file, const std::vector<std::filesystem::path>& template_dirs) {
  if (!std::ifstream(file))
    throw ConfigError(file.string() + ": cannot be read (does it exist? pass --config to choose another file)");
  Json json;
  try {
    json = json_file::read(file);  // bounded in size and depth
  } catch (const InputError& e) {
    throw ConfigError(e.what());
  }
  return parse(json, file.string(), file.parent_path().empty() ? std::filesystem::path(".") : file.parent_path(), template_dirs);
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
      if (!v.is_number_integer() || v.get<std::int64_t>() <= 0) fail("'shape.defaults." + k + "' must be a positive integer");
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
      fail(fmt::format("{} value {}: names starting with dev_ are the device's limits (dev_max_threads, "
                       "dev_max_smem, dev_sm_count, dev_cc); rename it", where, v.dump()));
    try {
      table.define_constant(v.get<std::string>(), static_cast<double>(i));
    } catch (const std::invalid_argument& e) {
      fail(fmt::format("{} value {}: {}", where, v.dump(), e.what()));
    }
  } else {
    fail(fmt::format("{} value {} must be an integer, a boolean or a string", where, json_file::brief(v)));
  }
}

// A variable of the expressions, its slot; `twice` is the message when the name is taken.
std::size_t Space::Impl::declare_name(const std::string& name, const std::string& where, const std::string& twice) {
  try {
    return table.declare(name);
  } catch (const std::invalid_argument& e) {
    fail(std::string(e.what()).find("defined twice") != std::string::npos ? twice : fmt::format("{}: {}", where, e.what()));
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
      fail(fmt::format("{}: names starting with dev_ are the device's limits (dev_max_threads, dev_max_smem, "
                       "dev_sm_count, dev_cc); rename it", where));
    param_slots.push_back(declare_name(param.name, where, where + " is defined twice (or shares its name with a dimension)"));
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
        fail(fmt::format("derived value '{}': names starting with dev_ are the device's limits (dev_max_threads, "
                         "dev_max_smem, dev_sm_count, dev_cc); rename it", name));
      declare_name(name, "derived value '" + name + "'",
                   "derived value '" + name + "' is defined twice (or shares a parameter's name)");
      derived_src.emplace_back(name, d.at("expr"));
    }
  }
  for (const auto& [name, expr] : derived_src)
    derived.push_back({name, table.slot(name), expression(expr, "derived value '" + name + "'")});
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
                              expression(l.value("dynamic_smem", Json("0")), where + " 'dynamic_smem'"),
                              std::move(args)});
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
    if (*count != static_cast<int>(l.args.size()))
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

const std::string& Space::problem() const { return impl_->problem; }
const std::string& Space::template_name() const { return impl_->template_name; }
const std::string& Space::source_name() const { return impl_->source_name; }
const std::vector<Parameter>& Space::parameters() const { return impl_->parameters; }
const std::map<std::string, std::int64_t>& Space::default_dims() const { return impl_->defaults; }
const Config& Space::baseline() const { return impl_->baseline; }
std::shared_ptr<const KernelSources> Space::sources() const { return impl_->sources; }
const std::string& Space::source_hash() const { return impl_->source_hash; }

std::vector<std::pair<std::string, std::vector<std::string>>> Space::launch_args() const {
  std::vector<std::pair<std::string, std::vector<std::string>>> out;
  for (const auto& l : impl_->launches) out.emplace_back(l.kernel, l.args);
  return out;
}

std::vector<std::string> Space::scratch_names() const {
  std::vector<std::string> out;
  for (const auto& b : impl_->scratch) out.push_back(b.name);
  return out;
}

void Space::check_shape(const Shape& shape) const {
  std::lock_guard lock(impl_->mutex);
  const Impl& s = *impl_;
  for (std::size_t d = 0; d < s.dims.size(); ++d) s.table.set(s.dim_slots[d], static_cast<double>(shape.at(s.dims[d])));
  dtype_vars::bind(s.dtype_vars, s.dtype_slots, shape, s.table);
  for (const ShapeRule& r : s.shape_rules) {
    const double v = r.expr.eval();
    if (!(v != 0) || std::isnan(v)) throw ShapeError(fmt::format("shape {} is not supported: {}", shape.describe(), r.message));
  }
}

std::string describe_count(std::uint64_t count) {
  const auto approx = static_cast<double>(count);
  if (count == std::numeric_limits<std::uint64_t>::max()) return fmt::format("at least {:.2g}", approx);
  return count >= 10'000'000 ? fmt::format("{} ({:.2g})", count, approx) : std::to_string(count);
}

std::uint64_t Space::size() const {
  std::uint64_t product = 1;
  for (const Parameter& p : impl_->parameters) {
    const std::uint64_t n = p.values.size();
    if (n != 0 && product > std::numeric_limits<std::uint64_t>::max() / n) return std::numeric_limits<std::uint64_t>::max();
    product *= n;
  }
  return product;
}

namespace {

// The configurations a pass over the space keeps, and the first failing constraint of the others
// (in the order the constraints were first seen failing).
class Tally {
 public:
  Tally(Enumeration& out, const SpaceProgressFn& progress, std::uint64_t of) : out_(out), progress_(progress), of_(of) {}
  void add(const Config& c, const std::string& violated) {
    if (violated.empty()) out_.configs.push_back(c);
    else if (rejected_[violated]++ == 0) order_.push_back(violated);
    if (progress_ && (++checked_ & 0xffff) == 0) progress_({checked_, of_, out_.configs.size()});
  }
  ~Tally() {
    for (const auto& w : order_) out_.rejected_by.emplace_back(w, rejected_[w]);
  }
  Tally(const Tally&) = delete;
  Tally& operator=(const Tally&) = delete;

 private:
  Enumeration& out_;
  const SpaceProgressFn& progress_;
  std::uint64_t of_, checked_ = 0;
  std::map<std::string, std::size_t> rejected_;
  std::vector<std::string> order_;
};

}  // namespace

Enumeration Space::enumerate(const Shape& shape, const DeviceLimits& limits, std::uint64_t max_configurations,
                             const SpaceProgressFn& progress) const {
  const std::uint64_t count = size();
  if (count > max_configurations)
    throw InputError(fmt::format("{}: the space has {} configurations (the product of its parameters' values), more than "
                                 "--max-space {} allows to enumerate; restrict the parameters' values, sample it with "
                                 "--budget N, or raise --max-space",
                                 impl_->source_name, describe_count(count), max_configurations));
  std::lock_guard lock(impl_->mutex);
  const Impl& s = *impl_;
  Enumeration out;
  out.total = count;
  {
    Tally tally(out, progress, count);
    Config c;
    c.choice.assign(s.parameters.size(), 0);
    for (std::uint64_t k = 0; k < count; ++k) {
      tally.add(c, s.first_violation(c, shape, limits));
      // Odometer: the last parameter varies fastest.
      for (std::size_t p = s.parameters.size(); p-- > 0;) {
        if (++c.choice[p] < s.parameters[p].values.size()) break;
        c.choice[p] = 0;
      }
    }
  }
  return out;
}

Enumeration Space::sample(const Shape& shape, const DeviceLimits& limits, std::size_t count, std::uint64_t seed,
                          std::uint64_t max_draws, const SpaceProgressFn& progress) const {
  std::lock_guard lock(impl_->mutex);
  const Impl& s = *impl_;
  Enumeration out;
  out.total = size();
  std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15ULL);  // its own stream, not the inputs'
  // Only the valid draws are remembered (a repeat of one is skipped): memory grows with the sample,
  // not with the draws; a rejected draw is tallied each time it is drawn.
  std::set<Config> kept;
  {
    Tally tally(out, progress, max_draws);
    Config c;
    c.choice.assign(s.parameters.size(), 0);
    while (out.configs.size() < count && out.draws < max_draws) {
      for (std::size_t p = 0; p < s.parameters.size(); ++p) c.choice[p] = rng() % s.parameters[p].values.size();
      ++out.draws;
      if (kept.count(c)) continue;
      const std::string violated = s.first_violation(c, shape, limits);
      if (violated.empty()) kept.insert(c);
      tally.add(c, violated);
    }
  }
  std::sort(out.configs.begin(), out.configs.end());
  return out;
}

std::string Space::violated_constraint(const Config& config, const Shape& shape, const DeviceLimits& limits) const {
  std::lock_guard lock(impl_->mutex);
  return impl_->first_violation(config, shape, limits);
}

Lowered Space::lower(const Config& config, const Shape& shape, const DeviceLimits& limits) const {
  std::lock_guard lock(impl_->mutex);
  const Impl& s = *impl_;
  s.bind(config, shape, limits);
  Lowered out;
  out.template_name = s.sources ? s.sources->main_name : s.template_name;
  out.sources = s.sources;
  // A `when` holds as a constraint does: neither zero nor NaN.
  auto holds = [](const space::Expression& e) {
    const double v = e.eval();
    return v != 0 && !std::isnan(v);
  };
  for (const Launch& l : s.launches) {
    if (!holds(l.when)) continue;
    KernelLaunch k;
    k.kernel = l.kernel;
    std::vector<std::string> values;
    for (const auto& a : l.template_args) values.push_back(s.template_arg(l.kernel, a, shape));
    k.name_expression = fmt::format("{}<{}>", l.kernel, fmt::join(values, ","));
    for (std::size_t i = 0; i < l.grid.size(); ++i)
      k.grid[i] = s.geometry(l.grid[i], fmt::format("launch '{}' grid[{}]", l.kernel, i), i == 0 ? 2147483647 : 65535);
    for (std::size_t i = 0; i < l.block.size(); ++i)
      k.block[i] = s.geometry(l.block[i], fmt::format("launch '{}' block[{}]", l.kernel, i), 1024);
    const std::int64_t smem = s.integer(l.dynamic_smem, "launch '" + l.kernel + "' dynamic_smem");
    if (smem > 2147483647) s.fail(fmt::format("launch '{}' dynamic_smem gives {} bytes", l.kernel, smem));
    k.dynamic_smem = static_cast<unsigned>(smem);
    k.args = l.args;
    out.launches.push_back(std::move(k));
  }
  for (const Scratch& b : s.scratch) {
    if (!holds(b.when)) continue;
    const std::int64_t n = s.integer(b.elements, "scratch '" + b.name + "' elements");
    if (n > kMaxScratchElements)
      s.fail(fmt::format("scratch '{}' elements '{}' gives {}, more than 2^40 (4 TiB of float32); constrain the shape or "
                         "the parameters", b.name, b.elements.text(), n));
    out.scratch.push_back({b.name, {n}});
  }
  if (out.launches.empty()) s.fail("no launch applies to configuration " + name(config));
  return out;
}

SpaceExpressions Space::expressions() const {
  const Impl& s = *impl_;
  SpaceExpressions e;
  e.dims = s.dims;
  for (const Derived& d : s.derived) e.derived.push_back({d.name, d.expr.text()});
  for (const ShapeRule& r : s.shape_rules) e.shape_rules.push_back({r.message, r.expr.text()});
  for (const auto& c : s.constraints) e.constraints.push_back(c.text());
  for (const Launch& l : s.launches) {
    SpaceExpressions::LaunchText t{l.kernel, l.when.text(), l.template_args, {}, {}, l.dynamic_smem.text()};
    for (const auto& g : l.grid) t.grid.push_back(g.text());
    for (const auto& b : l.block) t.block.push_back(b.text());
    t.grid.resize(3, "1");  // as lower() leaves the dimensions a launch does not name
    t.block.resize(3, "1");
    e.launches.push_back(std::move(t));
  }
  e.constants = s.table.constants();
  return e;
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

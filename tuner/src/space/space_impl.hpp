// The parsed space file, shared by its reader (space_parse.cpp) and the enumeration and lowering
// (space.cpp).
#pragma once

#include <cmath>
#include <filesystem>
#include <mutex>
#include <optional>

#include <fmt/format.h>

#include "core/expr.hpp"
#include "problem/dtype_vars.hpp"
#include "space/expr_cpp.hpp"
#include "space/sources.hpp"
#include "tune/errors.hpp"
#include "tune/space.hpp"

namespace tune {

namespace space_file {

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

}  // namespace space_file

struct Space::Impl {
  using Json = space_file::Json;
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
  std::vector<space_file::ShapeRule> shape_rules;
  std::vector<space_file::Derived> derived;
  std::vector<space::Expression> constraints;
  std::vector<space_file::Launch> launches;
  std::vector<space_file::Scratch> scratch;
  Config baseline;
  std::shared_ptr<const KernelSources> sources;
  std::string source_hash;
  mutable std::mutex mutex;  // the variable table is shared by every expression

  [[noreturn]] void fail(const std::string& what) const { throw ConfigError(source_name + ": " + what); }

  space::Expression expression(const Json& j, const std::string& where) const {
    if (!j.is_string() && !j.is_number() && !j.is_boolean()) fail(where + " must be an expression string");
    // One initialisation, not an assignment after it: GCC 12's -Wrestrict misreads the latter at -O3.
    const std::string text = j.is_boolean()  ? std::string(j.get<bool>() ? "1" : "0")
                             : j.is_string() ? j.get<std::string>()
                                             : j.dump();
    const auto unknown =
        space::unknown_names(text, [&](const std::string& n) { return table.has(n) || table.constants().count(n) > 0; });
    if (!unknown.empty())
      fail(fmt::format("{} '{}' uses '{}', which is not a dimension, parameter or derived value declared before it", where,
                       text, unknown.front()));
    space::Expression e = [&] {
      try {
        return space::Expression(text, table);
      } catch (const std::invalid_argument& err) {
        fail(fmt::format("{} '{}': {}", where, text, err.what()));
      }
    }();
    // The generated header computes these in constexpr C++: a function it has no translation for
    // (muParser's sqrt, rint, ...) is refused here, not when a tuned record is shipped.
    try {
      (void)space::expression_to_cpp(text, [](const std::string& n) -> std::optional<std::string> { return n; });
    } catch (const std::invalid_argument& err) {
      fail(fmt::format("{} {}", where, err.what()));  // the message quotes the expression
    }
    return e;
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
    for (const space_file::Derived& d : derived) table.set(d.slot, d.expr.eval());
  }

  // Space::lower's work, the mutex held; config_name: the configuration's name, for the messages.
  Lowered lower(const Config& config, const Shape& shape, const DeviceLimits& limits, const std::string& config_name) const;

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
      fail(
          fmt::format("{} '{}' gives {}, not a non-negative integer; make it a whole number (cdiv, floor) or "
                      "constrain the shape or the parameters",
                      where, e.text(), v));
    return static_cast<std::int64_t>(v);
  }

  // A template argument: an integer that fits a C++ int, or the configuration is refused.
  std::int64_t arg_value(const std::string& kernel, const std::string& name) const {
    const double v = table.get(table.slot(name));
    if (!std::isfinite(v) || v != std::floor(v) || v < -2147483648.0 || v > 2147483647.0)
      fail(
          fmt::format("launch '{}' template argument '{}' is {}, not an integer that fits an int; make it an integer "
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
      fail(fmt::format("{} '{}' gives {}, outside [1, {}]; constrain the shape or the parameters", where, e.text(), v,
                       limit));
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
  std::string holder_of(const std::string& name) const;
  std::size_t declare_name(const std::string& name, const std::string& where, const std::string& kind);
  void parse_derived(const Json& json);
  void parse_constraints(const Json& json, const Json& shape);
  std::vector<space::Expression> dims3(const Json& j, const std::string& where) const;
  void parse_launches(const Json& json);
  void parse_scratch(const Json& json);
  void check_kernels();
  std::string hash_input(const Json& json, const std::optional<std::filesystem::path>& base_dir,
                         const std::vector<std::filesystem::path>& template_dirs);
};

}  // namespace tune

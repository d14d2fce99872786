#include "problem/dtype_vars.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace tune::dtype_vars {

using Json = nlohmann::ordered_json;

namespace {

DType named(const Json& v, const std::string& where, const json_check::Fail& fail) {
  const auto t = v.is_string() ? parse_dtype(v.get<std::string>()) : std::nullopt;
  if (!t) fail(fmt::format("{}: {} is not a dtype (one of {})", where, v.dump(), dtype_choices()));
  return t.value_or(DType::kFloat32);
}

}  // namespace

std::vector<DTypeVariable> parse(const Json& file, const json_check::Fail& fail) {
  std::vector<DTypeVariable> out;
  if (!file.is_object() || !file.contains("dtypes")) return out;
  const Json& d = file.at("dtypes");
  if (!d.is_object())
    fail("'dtypes' must map variable names to {\"values\": [\"float32\", \"bfloat16\"], \"default\": \"float32\"}");
  for (const auto& [name, spec] : d.items()) {
    if (name == "_comment") continue;
    const std::string where = "dtypes." + name;
    json_check::keys(spec, {"values", "default"}, where, fail);
    DTypeVariable v;
    v.name = name;
    if (!spec.contains("values") || !spec.at("values").is_array() || spec.at("values").empty())
      fail(fmt::format("{} needs 'values', a list of dtypes (of {})", where, dtype_choices()));
    for (const Json& x : spec.at("values")) {
      const DType t = named(x, where + ".values", fail);
      if (std::find(v.values.begin(), v.values.end(), t) != v.values.end())
        fail(fmt::format("{}.values lists {} twice", where, x.dump()));
      v.values.push_back(t);
    }
    if (spec.contains("default")) {
      v.default_value = named(spec.at("default"), where + ".default", fail);
      if (std::find(v.values.begin(), v.values.end(), *v.default_value) == v.values.end())
        fail(fmt::format("{}.default {} is not one of its values", where, spec.at("default").dump()));
    }
    out.push_back(std::move(v));
  }
  return out;
}

std::vector<std::size_t> declare(const std::vector<DTypeVariable>& vars, space::VariableTable& table,
                                 const json_check::Fail& fail) {
  std::vector<std::size_t> slots;
  if (vars.empty()) return slots;
  for (const DType t : all_dtypes()) {
    const std::string name(dtype_name(t));
    if (table.has(name))
      fail(
          fmt::format("'{}' is a dtype's name, a constant of expressions once the file declares 'dtypes'; rename the "
                      "dimension",
                      name));
    try {
      table.define_constant(name, code(t));
    } catch (const std::invalid_argument& e) {
      fail(fmt::format("'dtypes': the dtype name '{}' {}", name, e.what()));
    }
  }
  for (const DTypeVariable& v : vars) {
    if (v.name.starts_with("dev_"))
      fail(
          fmt::format("dtypes.{}: names starting with dev_ are the device's limits (dev_max_threads, dev_max_smem, "
                      "dev_sm_count, dev_cc); rename it",
                      v.name));
    if (reserved_dimension_names().count(v.name))
      fail(fmt::format("dtypes.{0}: '{0}' is an option of tune (--{0}), so --{0} could not give the dtype; rename it",
                       v.name));
    for (const std::string& name : {v.name, v.name + "_bytes"}) {
      if (parse_dtype(name))
        fail(fmt::format("dtypes.{}: '{}' is a dtype's name; name the variable otherwise (T, U, ...)", v.name, name));
      try {
        slots.push_back(table.declare(name));
      } catch (const std::invalid_argument& e) {
        const std::string what = e.what();
        fail(what.find("defined twice") != std::string::npos
                 ? fmt::format("dtypes.{}: '{}' is already a dimension's name (or another dtype variable's); rename it",
                               v.name, name)
                 : fmt::format("dtypes.{}: {}", v.name, what));
      }
    }
  }
  return slots;
}

std::optional<DType> value(const DTypeVariable& v, const Shape& shape) {
  if (shape.has_dtype(v.name)) return shape.dtype(v.name);
  return v.default_value;
}

void bind(const std::vector<DTypeVariable>& vars, const std::vector<std::size_t>& slots, const Shape& shape,
          space::VariableTable& table) {
  for (std::size_t i = 0; i < vars.size(); ++i) {
    const DType t = value(vars[i], shape).value_or(vars[i].values.front());
    table.set(slots[2 * i], code(t));
    table.set(slots[2 * i + 1], static_cast<double>(dtype_size(t)));
  }
}

}  // namespace tune::dtype_vars

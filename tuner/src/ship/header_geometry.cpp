// The geometry of a configuration for any shape, as constexpr C++ generated from the space's own
// expressions (shape rules, derived values, constraints, launches): what lets a merged header
// launch a fallback at a shape nobody tuned, with the numbers tune's lowering gives.
#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <string>

#include <fmt/format.h>

#include "ship/header_text.hpp"
#include "space/expr_cpp.hpp"
#include "tune/dtype.hpp"
#include "tune/errors.hpp"

namespace tune {
namespace {

// "%.17g" of a double, as a C++ literal that reads back the same value.
std::string double_literal(double v) {
  std::string s = fmt::format("{:.17g}", v);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

// The header's fixed part before geometry()'s body: the expression prelude, Limits and
// limits_for_arch, the launch and geometry records, detail:: helpers and geometry()'s signature.
std::string geometry_prelude(const SpaceExpressions& e, std::size_t max_args) {
  const DeviceLimits sm80 = DeviceLimits::for_arch(80), sm90 = DeviceLimits::for_arch(90),
                     older = DeviceLimits::for_arch(70);
  std::string h;
  h += space::cpp_expression_prelude();
  h += "\n// The device limits a configuration is checked and lowered against (dev_max_threads, dev_max_smem,\n"
       "// dev_sm_count, dev_cc in the config's expressions).\n"
       "struct Limits {\n  int max_threads;\n  long long max_smem;  // opt-in maximum per block, bytes\n"
       "  int sm_count;\n  int cc;  // major * 10 + minor\n};\n\n";
  h += "// tune's limits of an arch when no device is at hand (DeviceLimits::for_arch, its compile-only\n"
       "// targets); a tune on a device lowers with that device's own, as select() does when given them.\n";
  h += fmt::format(
      "constexpr Limits limits_for_arch(int arch) {{\n"
      "  return arch >= 90 ? Limits{{{}, {}, {}, arch}}\n"
      "                    : (arch >= 80 ? Limits{{{}, {}, {}, arch}} : Limits{{{}, {}, {}, arch}});\n}}\n\n",
      sm90.max_threads_per_block, sm90.max_smem_per_block, sm90.sm_count, sm80.max_threads_per_block,
      sm80.max_smem_per_block, sm80.sm_count, older.max_threads_per_block, older.max_smem_per_block, older.sm_count);
  std::size_t max_buffers = 1;
  for (const auto& l : e.launches) max_buffers = std::max(max_buffers, l.args.size());
  h += fmt::format(
      "inline constexpr int kMaxTemplateArgs = {};\ninline constexpr int kMaxGeometryLaunches = {};\n"
      "inline constexpr int kMaxGeometryArgs = {};\ninline constexpr int kMaxGeometryScratch = {};\n\n",
      max_args, e.launches.size(), max_buffers, std::max<std::size_t>(1, e.scratch.size()));
  h += "// One launch of a configuration at a shape: the kernel, its template arguments (the name\n"
       "// expression is kernel<args...>), grid, block, dynamic shared memory and the buffers it takes by\n"
       "// name (the problem's tensors, \"out\", the scratch buffers of Geometry::scratch).\n"
       "struct LaunchGeometry {\n  const char* kernel;\n  int template_arg_count;\n"
       "  long long template_args[kMaxTemplateArgs];\n  unsigned grid[3];\n  unsigned block[3];\n"
       "  unsigned dynamic_smem_bytes;\n  int arg_count;\n  const char* args[kMaxGeometryArgs];\n};\n\n";
  h += "// A scratch buffer of a configuration at a shape: float32 elements, allocated when its `when` holds.\n"
       "struct ScratchGeometry {\n  const char* name;\n  long long elements;\n};\n\n";
  h += "// ok: the configuration is valid at the shape (every shape rule and constraint holds, every\n"
       "// launch and scratch buffer lowers); else why names the first failure. The scratch buffers are\n"
       "// those at this shape, which may differ from an entry's Variant::buffers, recorded at its own.\n"
       "struct Geometry {\n  bool ok;\n  const char* why;\n  int launch_count;\n"
       "  LaunchGeometry launches[kMaxGeometryLaunches];\n  int scratch_count;\n"
       "  ScratchGeometry scratch[kMaxGeometryScratch];\n};\n\n";
  h +=
      "namespace detail {\n"
      "// A rule holds when it is neither zero nor NaN (as tune checks constraints).\n"
      "constexpr bool holds(double x) { return x != 0.0 && x == x; }\n"
      "constexpr Geometry refuse(Geometry g, const char* why) {\n  g.ok = false;\n  g.why = why;\n  return g;\n}\n"
      "// A grid, block or shared-memory value: a whole number in [low, high].\n"
      "constexpr bool whole(double x, double low, double high) { return x == x && x >= low && x <= high && x == floor_(x); }\n"
      "}  // namespace detail\n\n";
  h += "// The configuration `p` at shape `s` on a device with limits `l`, as tune lowers it.\n";
  h += "constexpr Geometry geometry(const Shape& s, const Params& p, const Limits& l) {\n  Geometry g{};\n";
  return h;
}

using ToCpp = std::function<std::string(const std::string& text, const std::string& where)>;

// geometry()'s lines for one launch `l`: when it applies, its kernel, template arguments, grid,
// block and dynamic shared memory, each checked to be a whole number in range.
std::string launch_code(const SpaceExpressions::LaunchText& l, std::size_t index,
                        const std::map<std::string, std::string>& locals, const ToCpp& cpp) {
  std::string h;
  // ran_<index>: whether it applies, for the scratch buffers' check after them.
  h += fmt::format("  const bool ran_{} = detail::holds({});\n  static_cast<void>(ran_{});\n  if (ran_{}) {{\n", index,
                   cpp(l.when, "launch " + l.kernel + " 'when'"), index, index);
  h += "    LaunchGeometry& x = g.launches[g.launch_count++];\n";
  h += fmt::format("    x.kernel = {};\n    x.template_arg_count = {};\n", header_text::c_string(l.kernel),
                   l.template_args.size());
  std::vector<std::string> args;
  for (const auto& a : l.args) args.push_back(header_text::c_string(a));
  h += fmt::format("    x.arg_count = {};\n", l.args.size());
  for (std::size_t a = 0; a < args.size(); ++a) h += fmt::format("    x.args[{}] = {};\n", a, args[a]);
  for (std::size_t a = 0; a < l.template_args.size(); ++a) {
    const std::string& v = locals.at(l.template_args[a]);
    h += fmt::format("    if (!detail::whole({}, -2147483648.0, 2147483647.0)) return detail::refuse(g, {});\n", v,
                     header_text::c_string(
                         fmt::format("launch {}: template argument {} is not an int", l.kernel, l.template_args[a])));
    h += fmt::format("    x.template_args[{}] = static_cast<long long>({});\n", a, v);
  }
  const auto dim = [&](const std::string& field, const std::string& text, const std::string& where, double high) {
    h += fmt::format("    {{\n      const double d = {};\n", cpp(text, where));
    h += fmt::format("      if (!detail::whole(d, {}, {})) return detail::refuse(g, {});\n",
                     field == "dynamic_smem_bytes" ? "0.0" : "1.0", double_literal(high),
                     header_text::c_string(fmt::format("launch {}: {} is not a whole number in [{}, {:.0f}]", l.kernel,
                                                       where, field == "dynamic_smem_bytes" ? 0 : 1, high)));
    h += fmt::format("      x.{} = static_cast<unsigned>(d);\n    }}\n", field);
  };
  for (std::size_t i = 0; i < 3; ++i)
    dim(fmt::format("grid[{}]", i), l.grid.at(i), fmt::format("grid[{}]", i), i == 0 ? 2147483647.0 : 65535.0);
  for (std::size_t i = 0; i < 3; ++i) dim(fmt::format("block[{}]", i), l.block.at(i), fmt::format("block[{}]", i), 1024.0);
  dim("dynamic_smem_bytes", l.dynamic_smem, "dynamic_smem", 2147483647.0);
  h += "  }\n";
  return h;
}

// geometry()'s lines for the scratch buffers, after the launches, as Space::lower checks them: each
// whose `when` holds is a whole number of elements in [0, 2^40], and a launch that runs takes no
// buffer absent at this configuration.
std::string scratch_code(const SpaceExpressions& e, const ToCpp& cpp) {
  std::string h;
  for (std::size_t b = 0; b < e.scratch.size(); ++b) {
    const auto& s = e.scratch[b];
    h += fmt::format("  const bool has_{} = detail::holds({});\n  static_cast<void>(has_{});\n  if (has_{}) {{\n", b,
                     cpp(s.when, "scratch " + s.name + " 'when'"), b, b);
    h += fmt::format("    const double d = {};\n", cpp(s.elements, "scratch " + s.name + " elements"));
    h += fmt::format("    if (!detail::whole(d, 0.0, {})) return detail::refuse(g, {});\n",
                     double_literal(static_cast<double>(std::int64_t{1} << 40)),
                     header_text::c_string(fmt::format("scratch {}: elements is not a whole number in [0, 2^40]", s.name)));
    h += fmt::format("    g.scratch[g.scratch_count++] = ScratchGeometry{{{}, static_cast<long long>(d)}};\n  }}\n",
                     header_text::c_string(s.name));
  }
  h += "  if (g.launch_count == 0) return detail::refuse(g, \"no launch applies to this configuration\");\n";
  for (std::size_t l = 0; l < e.launches.size(); ++l)
    for (const auto& a : e.launches[l].args)
      for (std::size_t b = 0; b < e.scratch.size(); ++b)
        if (e.scratch[b].name == a)
          h += fmt::format("  if (ran_{} && !has_{}) return detail::refuse(g, {});\n", l, b,
                           header_text::c_string(fmt::format("launch {}: scratch buffer {} is absent (its when does not "
                                                             "hold)",
                                                             e.launches[l].kernel, a)));
  return h;
}

// A dtype variable holds one of the values the problem takes, or select() says so (kNone): the
// header never hands out an instantiation tune refuses to compile.
std::string dtype_checks(const std::vector<DTypeVariable>& dtypes) {
  std::string h;
  for (const auto& d : dtypes) {
    std::vector<std::string> tests, names;
    for (const DType t : d.values) {
      tests.push_back(fmt::format("s.{} == {}", header_text::identifier(d.name), header_text::dtype_enumerator(t)));
      names.emplace_back(dtype_name(t));
    }
    h += fmt::format("  if (!({})) return detail::refuse(g, {});\n", fmt::join(tests, " || "),
                     header_text::c_string(
                         fmt::format("dtype: {} is not one the problem takes ({})", d.name, fmt::join(names, ", "))));
  }
  return h;
}

}  // namespace

std::string geometry_code(const Space& space, const std::vector<DTypeVariable>& dtypes) {
  const SpaceExpressions e = space.expressions();
  std::vector<std::string> dtype_variables;
  for (const auto& d : dtypes) dtype_variables.push_back(d.name);
  // Every name of the space as a local double "v_<name>": no clash with C++ keywords or the
  // header's own names.
  std::map<std::string, std::string> locals;
  for (const auto& d : e.dims) locals[d] = "v_" + header_text::identifier(d);
  for (const auto& p : space.parameters()) locals[p.name] = "v_" + header_text::identifier(p.name);
  for (const char* dev : {"dev_max_threads", "dev_max_smem", "dev_sm_count", "dev_cc"})
    locals[dev] = std::string("v_") + dev;
  // A dtype variable T is its dtype's number (DType), T_bytes its size; the dtype names are constants.
  std::map<std::string, std::string> dtype_locals, dtype_constants;
  // <variable>_bytes, unless the space derives it itself (then its expression gives it).
  const auto derived = [&](const std::string& name) {
    return std::any_of(e.derived.begin(), e.derived.end(), [&](const auto& d) { return d.name == name; });
  };
  for (const auto& v : dtype_variables) {
    dtype_locals[v] = "v_" + header_text::identifier(v);
    if (!derived(v + "_bytes")) dtype_locals[v + "_bytes"] = "v_" + header_text::identifier(v + "_bytes");
  }
  locals.insert(dtype_locals.begin(), dtype_locals.end());
  if (!dtype_variables.empty())
    for (const DType t : all_dtypes()) dtype_constants[std::string(dtype_name(t))] = double_literal(static_cast<int>(t));
  const auto cpp = [&](const std::string& text, const std::string& where) {
    const auto resolve = [&](const std::string& name) -> std::optional<std::string> {
      if (auto it = locals.find(name); it != locals.end()) return it->second;
      if (auto it = e.constants.find(name); it != e.constants.end()) return double_literal(it->second);
      if (auto it = dtype_constants.find(name); it != dtype_constants.end()) return it->second;
      return std::nullopt;
    };
    try {
      return space::expression_to_cpp(text, resolve);
    } catch (const std::invalid_argument& err) {
      throw InputError(fmt::format("{}: {} {} cannot be written as constexpr C++ for the header: {}", space.source_name(),
                                   where, text, err.what()));
    }
  };

  std::size_t max_args = 1;
  for (const auto& l : e.launches) max_args = std::max(max_args, l.template_args.size());
  std::string h = geometry_prelude(e, max_args);
  const auto is_dtype = [&](const std::string& d) {
    return std::find(dtype_variables.begin(), dtype_variables.end(), d) != dtype_variables.end();
  };
  for (const auto& d : e.dims)
    if (!is_dtype(d))
      h += fmt::format("  const double {} = static_cast<double>(s.{});\n", locals[d], header_text::identifier(d));
  for (const auto& v : dtype_variables) {
    h += fmt::format("  const double {} = static_cast<double>(static_cast<int>(s.{}));\n", locals[v],
                     header_text::identifier(v));
    if (!derived(v + "_bytes"))
      h += fmt::format("  const double {} = static_cast<double>(dtype_bytes(s.{}));\n", locals[v + "_bytes"],
                       header_text::identifier(v));
  }
  for (const auto& p : space.parameters())
    h += fmt::format("  const double {} = static_cast<double>(p.{});\n", locals[p.name], header_text::identifier(p.name));
  h += "  const double v_dev_max_threads = static_cast<double>(l.max_threads);\n"
       "  const double v_dev_max_smem = static_cast<double>(l.max_smem);\n"
       "  const double v_dev_sm_count = static_cast<double>(l.sm_count);\n"
       "  const double v_dev_cc = static_cast<double>(l.cc);\n";
  // Not every expression reads every name.
  for (const auto& [name, local] : locals) h += fmt::format("  static_cast<void>({});\n", local);
  h += dtype_checks(dtypes);
  for (const auto& rule : e.shape_rules)
    h += fmt::format("  if (!detail::holds({})) return detail::refuse(g, {});\n", cpp(rule.text, "shape constraint"),
                     header_text::c_string("shape: " + rule.name));
  for (const auto& d : e.derived) {
    locals[d.name] = "v_" + header_text::identifier(d.name);
    h += fmt::format("  const double {} = {};\n  static_cast<void>({});\n", locals[d.name],
                     cpp(d.text, "derived value " + d.name), locals[d.name]);
  }
  for (const auto& c : e.constraints)
    h += fmt::format("  if (!detail::holds({})) return detail::refuse(g, {});\n", cpp(c, "constraint"),
                     header_text::c_string("constraint: " + c));
  for (std::size_t l = 0; l < e.launches.size(); ++l) h += launch_code(e.launches[l], l, locals, cpp);
  h += scratch_code(e, cpp);
  h += "  g.ok = true;\n  return g;\n}\n\n";
  return h;
}

}  // namespace tune

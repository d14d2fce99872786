// The merged header computes a configuration's geometry for any shape from the space's own
// expressions, translated to constexpr C++: these tests compile that C++ with the host compiler
// and hold it to what tune computes (muParser for single expressions, Space::lower for whole
// configurations at many shapes, valid or not).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include <fmt/format.h>

#include "core/expr.hpp"
#include "space/expr_cpp.hpp"
#include "support/test_dir.hpp"
#include "tune/dtype.hpp"
#include "tune/errors.hpp"
#include "tune/io.hpp"
#include "tune/problem.hpp"
#include "tune/space.hpp"
#include "tune/tune.hpp"

namespace tune {
namespace {

// Compiles `source` with the host compiler and returns the program's standard output.
std::string compile_and_run(const std::filesystem::path& dir, const std::string& source, const std::string& include = "") {
  std::ofstream(dir / "check.cpp") << source;
  const std::string exe = (dir / "check").string();
  const std::string cmd = fmt::format("{} -std=c++17 -Wall -Wextra -Werror {} -o {} {}", TUNE_CXX_COMPILER,
                                      include.empty() ? "" : "-I" + include, exe, (dir / "check.cpp").string());
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const std::string out_file = (dir / "out.txt").string();
  EXPECT_EQ(std::system((exe + " > " + out_file).c_str()), 0);
  std::ifstream in(out_file);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

bool same_double(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

TEST(ExpressionToCpp, AgreesWithMuParserBitwise) {
  const std::vector<std::string> expressions = {"!a*b",
                                                "-a^2",
                                                "2^3^2",
                                                "a - b - c",
                                                "a / b / c",
                                                "a % b",
                                                "-a % b",
                                                "a ? b : c ? 1 : 2",
                                                "a < b == c",
                                                "!a + b",
                                                "a && b || c",
                                                "a || b && c",
                                                "cdiv(a, b)",
                                                "floor(a / b)",
                                                "min(a, b, c)",
                                                "max(a, b)",
                                                "abs(a - b)",
                                                "sign(a - b)",
                                                "rint(a / 4)",
                                                "ispow2(a)",
                                                "a == 1 ? 2 : 3 * b",
                                                "1e3 * a + .5",
                                                "sum(a, b, c)",
                                                "avg(a, b)",
                                                "-(-a)",
                                                "a^-1",
                                                "!(a == b) && c",
                                                "a >= b != c <= a",
                                                "a * -b",
                                                "cdiv(a, 0)",
                                                "a / 0 > 1",
                                                "(a + b) % (c - 1)",
                                                "a - -b",
                                                "!(!a)",
                                                "true + false * a",
                                                "a % 3 == 0 ? a / 3 : cdiv(a, 3) * 3",
                                                "max(1, min(floor(2048 / a), b))",
                                                "a ^ 2 ^ 2",
                                                "- a ^ 3",
                                                "c ? a : b ? c : a"};
  const std::vector<double> values = {-3, -1, 0, 0.5, 1, 2, 7, 64};
  space::VariableTable table;
  const std::size_t a = table.declare("a"), b = table.declare("b"), c = table.declare("c");
  const auto resolve = [](const std::string& name) -> std::optional<std::string> {
    if (name == "a" || name == "b" || name == "c") return "v_" + name;
    return std::nullopt;
  };
  std::string src = "#include <cstdio>\nnamespace gen {\n" + space::cpp_expression_prelude();
  for (std::size_t i = 0; i < expressions.size(); ++i) {
    src += fmt::format(
        "constexpr double e{}(double v_a, double v_b, double v_c) {{\n  (void)v_a, (void)v_b, (void)v_c;\n"
        "  return {};\n}}\n",
        i, space::expression_to_cpp(expressions[i], resolve));
    // Constant evaluation at one point: the translation is a constant expression.
    src += fmt::format("constexpr double k{} = e{}(2.0, 3.0, 5.0);\n", i, i);
  }
  src += "}  // namespace gen\nint main() {\n  const double v[] = {";
  for (double x : values) src += fmt::format("{}, ", x);
  src += "};\n  for (double a : v) for (double b : v) for (double c : v) {\n";
  for (std::size_t i = 0; i < expressions.size(); ++i)
    src += fmt::format("    std::printf(\"%a\\n\", gen::e{}(a, b, c));\n", i);
  src += "  }\n}\n";
  std::istringstream out(compile_and_run(test_dir("geometry_test"), src));

  std::vector<space::Expression> parsed;
  for (const auto& e : expressions) parsed.emplace_back(e, table);
  for (double x : values)
    for (double y : values)
      for (double z : values) {
        table.set(a, x), table.set(b, y), table.set(c, z);
        for (std::size_t i = 0; i < expressions.size(); ++i) {
          std::string line;
          ASSERT_TRUE(std::getline(out, line)) << "the program printed too little";
          const double got = std::strtod(line.c_str(), nullptr), want = parsed[i].eval();
          // a ^ b is repeated multiplication: exact while the value is an integer below 2^53 (as
          // geometry is); beyond, std::pow's rounding may differ in the last bit.
          if (expressions[i].find('^') != std::string::npos && std::fabs(want) > 9007199254740992.0) continue;
          EXPECT_TRUE(same_double(got, want))
              << expressions[i] << " at a=" << x << " b=" << y << " c=" << z << ": C++ " << got << ", muParser " << want;
        }
      }
}

TEST(ExpressionToCpp, RefusesWhatItCannotTranslate) {
  const auto resolve = [](const std::string& name) -> std::optional<std::string> {
    if (name == "a") return "v_a";
    return std::nullopt;
  };
  EXPECT_THROW((void)space::expression_to_cpp("sin(a)", resolve), std::invalid_argument);
  EXPECT_THROW((void)space::expression_to_cpp("a + unknown", resolve), std::invalid_argument);
  EXPECT_THROW((void)space::expression_to_cpp("a +", resolve), std::invalid_argument);
  EXPECT_THROW((void)space::expression_to_cpp("(a", resolve), std::invalid_argument);
  EXPECT_THROW((void)space::expression_to_cpp("cdiv(a)", resolve), std::invalid_argument);
  EXPECT_THROW((void)space::expression_to_cpp("a a", resolve), std::invalid_argument);
}

// Shapes of a problem around its defaults (a dimension without one: around 32), some odd; each
// dtype variable takes its values in turn (shape i: value i mod count), so every dtype is covered.
std::vector<Shape> shapes_around(const Space& space, const Problem& problem, std::mt19937_64& rng, int count) {
  std::vector<Shape> out;
  const std::vector<double> scale = {0.25, 0.5, 1, 1, 2, 3, 0.37, 1.5};
  for (int i = 0; i < count; ++i) {
    std::vector<std::pair<std::string, std::int64_t>> dims;
    for (const auto& name : space.expressions().dims) {
      const auto it = space.default_dims().find(name);
      const double base = it != space.default_dims().end() ? static_cast<double>(it->second) : 32.0;
      dims.emplace_back(name, std::max<std::int64_t>(1, std::llround(base * scale[rng() % scale.size()])));
    }
    Shape shape(std::move(dims));
    for (const DTypeVariable& v : problem.dtype_variables())
      shape.set_dtype(v.name, v.values[static_cast<std::size_t>(i) % v.values.size()]);
    out.push_back(std::move(shape));
  }
  return out;
}

// A lowered launch as the header's geometry() prints it: kernel<args> with a dtype variable's
// argument (its CUDA type in the name expression) as the dtype's number, as the header passes it.
std::string launch_text(const KernelLaunch& launch, const Shape& shape) {
  std::string args = launch.name_expression.substr(launch.kernel.size() + 1);
  args.pop_back();  // '>'
  std::vector<std::string> out;
  for (std::size_t at = 0; at <= args.size();) {
    const std::size_t comma = std::min(args.find(',', at), args.size());
    std::string arg = args.substr(at, comma - at);
    for (const auto& [name, dtype] : shape.dtypes())
      if (arg == dtype_cuda_type(dtype)) arg = std::to_string(static_cast<int>(dtype));
    out.push_back(arg);
    at = comma + 1;
  }
  return fmt::format("{}<{}> {},{},{} {},{},{} {} ({})", launch.kernel, fmt::join(out, ","), launch.grid[0], launch.grid[1],
                     launch.grid[2], launch.block[0], launch.block[1], launch.block[2], launch.dynamic_smem,
                     fmt::join(launch.args, ","));
}

// The header's initializer of a shape: its dims, then its dtype variables (t::DType::bfloat16).
std::string shape_init(const Shape& shape) {
  std::vector<std::string> v;
  for (const auto& d : shape.dims()) v.push_back(std::to_string(d.second));
  for (const auto& d : shape.dtypes())
    v.push_back("t::DType::" + std::string(dtype_name(d.second)) +
                (d.second == DType::kBool ? "_" : ""));  // bool_: a keyword
  return fmt::format("{{{}}}", fmt::join(v, ", "));
}

// For `problem`'s merged header: geometry() at many (shape, configuration, limits) equals
// Space::lower where tune accepts the configuration, and refuses where tune does.
void expect_geometry_matches_lowering(const std::string& problem) {
  const auto dir = test_dir("geometry_test");
  std::vector<std::filesystem::path> files;
  for (const auto& f : std::filesystem::directory_iterator(std::filesystem::path(TUNE_FIXTURES) / "merge" / problem))
    files.push_back(f.path());
  std::ofstream(dir / "tuned.hpp") << merge_result_files(files, std::nullopt, /*allow_synthetic=*/true);
  const Space space = load_space(problem, std::nullopt);
  const std::vector<DeviceLimits> limits = {DeviceLimits::for_arch(90), [] {
                                              DeviceLimits l = DeviceLimits::for_arch(80);
                                              l.sm_count = 46;
                                              return l;
                                            }()};
  std::mt19937_64 rng(20261201);
  std::string cases, expected;
  int count = 0, valid = 0;
  std::map<std::string, int> valid_by_dtype;  // "T=bfloat16": valid cases in that dtype
  for (const Shape& shape : shapes_around(space, find_problem(problem), rng, 12)) {
    bool shape_ok = true;
    try {
      space.check_shape(shape);
    } catch (const ShapeError&) {
      shape_ok = false;
    }
    // Half valid configurations (where the shape has any), half drawn from the whole product.
    const std::vector<Config> valid_here = shape_ok ? space.enumerate(shape, limits[0]).configs : std::vector<Config>{};
    for (int k = 0; k < 40; ++k) {
      Config config;
      if (k % 2 == 0 && !valid_here.empty()) {
        config = valid_here[rng() % valid_here.size()];
      } else {
        for (const auto& p : space.parameters()) config.choice.push_back(rng() % p.values.size());
      }
      const DeviceLimits& l = limits[static_cast<std::size_t>(k / 2) % limits.size()];
      std::string want = "refused";
      if (shape_ok && space.violated_constraint(config, shape, l).empty()) {
        try {
          const Lowered low = space.lower(config, shape, l);
          want = "ok";
          for (const auto& launch : low.launches) want += " " + launch_text(launch, shape);
          for (const auto& b : low.scratch) want += fmt::format(" {}={}", b.name, b.elements());
          ++valid;
          for (const auto& [name, dtype] : shape.dtypes()) ++valid_by_dtype[name + "=" + std::string(dtype_name(dtype))];
        } catch (const ConfigError&) {}
      }
      std::vector<std::int64_t> params;
      for (const auto& p : space.parameters()) params.push_back(space.numeric(config, p.name));
      cases += fmt::format("  {{{}, {{{}}}, {{{}, {}, {}, {}}}}},\n", shape_init(shape), fmt::join(params, ", "),
                           l.max_threads_per_block, l.max_smem_per_block, l.sm_count, l.compute_capability);
      expected += want + "\n";
      ++count;
    }
  }
  const std::string ns = "tune_tuned::" + problem;
  std::string src = "#include <cstdio>\n#include \"tuned.hpp\"\nnamespace t = " + ns + ";\n";
  src += "struct Case {\n  t::Shape shape;\n  t::Params params;\n  t::Limits limits;\n};\nconst Case kCases[] = {\n" +
         cases + "};\n";
  src += R"SRC(int main() {
  for (const Case& c : kCases) {
    const t::Geometry g = t::geometry(c.shape, c.params, c.limits);
    if (!g.ok) {
      std::printf("refused\n");
      continue;
    }
    std::printf("ok");
    for (int i = 0; i < g.launch_count; ++i) {
      const t::LaunchGeometry& l = g.launches[i];
      std::printf(" %s<", l.kernel);
      for (int a = 0; a < l.template_arg_count; ++a) std::printf(a ? ",%lld" : "%lld", l.template_args[a]);
      std::printf("> %u,%u,%u %u,%u,%u %u (", l.grid[0], l.grid[1], l.grid[2], l.block[0], l.block[1], l.block[2],
                  l.dynamic_smem_bytes);
      for (int a = 0; a < l.arg_count; ++a) std::printf(a ? ",%s" : "%s", l.args[a]);
      std::printf(")");
    }
    for (int b = 0; b < g.scratch_count; ++b) std::printf(" %s=%lld", g.scratch[b].name, g.scratch[b].elements);
    std::printf("\n");
  }
}
)SRC";
  std::istringstream got(compile_and_run(dir, src, dir.string())), want(expected);
  std::string g, w;
  for (int i = 0; i < count; ++i) {
    ASSERT_TRUE(std::getline(got, g) && std::getline(want, w));
    EXPECT_EQ(g, w) << "case " << i;
  }
  // Both kinds occur, so the comparison is not vacuous.
  EXPECT_GT(valid, 20) << problem;
  EXPECT_LT(valid, count) << problem;
  // Every value of every dtype variable is lowered validly somewhere (contact: T=float32 and T=bfloat16).
  for (const DTypeVariable& v : find_problem(problem).dtype_variables())
    for (const DType t : v.values)
      EXPECT_GT(valid_by_dtype[v.name + "=" + std::string(dtype_name(t))], 5)
          << problem << " " << v.name << "=" << dtype_name(t);
}

// contact has a dtype variable T (float32, bfloat16): its shapes alternate T, and the fixtures, which
// predate T, merge as float32 entries.
TEST(MergedHeader, GeometryEqualsLoweringContact) { expect_geometry_matches_lowering("contact"); }

TEST(MergedHeader, GeometryEqualsLoweringSceneGraph) { expect_geometry_matches_lowering("scene_graph"); }

}  // namespace
}  // namespace tune

// A problem's declared edge cases (edge_cases: set ops then edits on the parity data, `when`) and
// its `deterministic` flag: the file checks at load, the data they make, and the shipped problems'.
#include <gtest/gtest.h>

#include <unistd.h>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "support/paths.hpp"
#include "tune/errors.hpp"
#include "tune/problem.hpp"

namespace tune {
namespace {

using Json = nlohmann::ordered_json;

// A small problem folder in a scratch directory; `keys` (JSON object text, without its braces) is
// added to the top level. The reference is never run.
std::filesystem::path write_problem(const std::string& keys) {
  static const struct Scratch {  // this process's folder, removed at exit
    std::filesystem::path dir = std::filesystem::temp_directory_path() / ("tune_edge_cases_" + std::to_string(::getpid()));
    ~Scratch() {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  } scratch;
  const auto& dir = scratch.dir;
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "reference.py") << "def reference(shape, params, inputs):\n    raise NotImplementedError\n";
  std::ofstream(dir / "problem.json") << R"({
  "problem": "edge", "reference": {"python": "reference.py"},
  "shape": {"dims": ["M", "K"]},
  "tensors": [
    {"name": "w",    "role": "parameter", "shape": ["K"], "init": "normal"},
    {"name": "x",    "role": "input",     "shape": ["M", "K"], "init": "normal"},
    {"name": "mask", "role": "input",     "shape": ["M"], "init": {"kind": "bernoulli", "p": 0.5}},
    {"name": "out",  "role": "output",    "shape": ["M"]}
  ],
  "edits": [{"tensor": "mask", "purpose": "parity", "index": ["0"], "value": "0"}])"
                                      << (keys.empty() ? "" : ",\n  " + keys) << "\n}\n";
  return dir / "problem.json";
}

// Loading the file with `keys` fails with exactly "<file>: <message>" (or a line that starts so,
// where the rest is muParser's), one line.
void expect_refused(const std::string& keys, const std::string& message, bool prefix = false) {
  const auto file = write_problem(keys);
  try {
    (void)Problem::load(file);
    ADD_FAILURE() << "accepted: " << keys;
  } catch (const ConfigError& e) {
    const std::string want = std::filesystem::weakly_canonical(file).string() + ": " + message;
    const std::string got = e.what();
    EXPECT_EQ(prefix ? got.substr(0, want.size()) : got, want) << keys;
    EXPECT_EQ(got.find('\n'), std::string::npos);
  }
}

TEST(EdgeCases, BadDeclarationsAreRefusedInOneLineWithTheirPath) {
  expect_refused(R"("edge_cases": {"name": "a"})", R"('edge_cases' must be a list of {"name": ..., "set": {...}})");
  expect_refused(R"("edge_cases": [{"name": "a", "set": {"x": {"scale": 2}}, "wen": "M > 2"}])",
                 "unknown key 'edge_cases[0].wen' (known there: name, set, edits, when)");
  expect_refused(R"("edge_cases": [{"name": "a", "set": {"x": {"multiply": 2}}}])",
                 "unknown key 'edge_cases[0].set.x.multiply' (known there: fill, scale, offset)");
  expect_refused(R"("edge_cases": [{"name": "a", "set": {"x": {"scale": 1e999}}}])",
                 "not valid JSON ([json.exception.out_of_range.406] number overflow parsing '1e999')");
  expect_refused(R"("edge_cases": [{"name": "a", "set": {"x": {"offset": 1e39}}}])",
                 "edge_cases[0].set.x.offset: 1e+39 is not a finite float32 number");
  expect_refused(R"("edge_cases": [{"name": "a", "set": {"x": {"fill": "0.5"}}}])",
                 R"(edge_cases[0].set.x.fill: "0.5" is not a finite float32 number)");
  expect_refused(R"("edge_cases": [{"name": "a", "set": {"x": {}}}])",
                 "edge_cases[0].set.x needs an operation: fill, scale or offset (a number)");
  expect_refused(R"("edge_cases": [{"name": "a", "set": {"y": {"scale": 2}}}])",
                 "edge_cases[0].set.y: no parameter or input of the problem has that name");
  expect_refused(R"("edge_cases": [{"name": "a", "set": {"out": {"fill": 0}}}])",
                 "edge_cases[0].set.out: 'out' is the output; only parameters and inputs can be set");
  expect_refused(R"("edge_cases": [{"name": "a", "set": {"x": {"fill": 0}}}, {"name": "a", "set": {"w": {"fill": 0}}}])",
                 "edge_cases[1].name: edge case 'a' is declared twice");
  expect_refused(R"("edge_cases": [{"name": "", "set": {"x": {"fill": 0}}}])", "edge_cases[0].name is empty");
  expect_refused(R"("edge_cases": [{"set": {"x": {"fill": 0}}}])", "edge_cases[0] needs 'name', a string");
  expect_refused(R"("edge_cases": [{"name": "a"}])",
                 R"(edge_cases[0] changes nothing: give 'set' ({"<tensor>": {"scale": 100}}) or 'edits')");
  expect_refused(
      R"("edge_cases": [{"name": "a", "edits": [{"tensor": "mask", "index": ["0"], "value": "1", "purpose": "parity"}]}])",
      "unknown key 'edge_cases[0].edits[0].purpose' (known there: tensor, for, index, value, when)");
  expect_refused(R"("edge_cases": [{"name": "a", "edits": [{"tensor": "out", "index": ["0"], "value": "1"}]}])",
                 "edge_cases[0].edits[0].tensor 'out' is not a parameter or input of the problem");
  expect_refused(R"("edge_cases": [{"name": "a", "when": "M >", "set": {"x": {"fill": 0}}}])",
                 "edge_cases[0].when 'M >': ", true);
  expect_refused(R"("deterministic": "no")",
                 "'deterministic' must be true or false (false: the kernels may give other bits from launch to launch)");
}

TEST(EdgeCases, EachCaseIsTheParityDataWithItsSetOpsThenItsEdits) {
  const auto problem = Problem::load(write_problem(R"("edge_cases": [
    {"name": "scaled",   "set": {"x": {"scale": 3}, "w": {"offset": -0.5}}},
    {"name": "affine",   "set": {"x": {"scale": 2, "offset": 1}}},
    {"name": "filled",   "set": {"x": {"fill": 0.25}, "mask": {"fill": 1}}},
    {"name": "edited",   "set": {"x": {"fill": 0}},
     "edits": [{"tensor": "x", "for": {"i": "M"}, "index": ["i", "K - 1"], "value": "i + 1"}]},
    {"name": "big only", "when": "M >= 4", "set": {"mask": {"fill": 0}}}
  ])"));
  const Shape shape({{"M", 5}, {"K", 3}});
  const std::uint64_t seed = 9;
  const ProblemData parity = problem->make_data(shape, seed, DataPurpose::kParity);
  ASSERT_EQ(parity.get("mask").data[0], 0.0f);  // the parity edit: edge cases start from parity data

  // Every element of every tensor: `want(name, index, parity value)`.
  auto expect_case = [&](const std::string& name, auto want) {
    const ProblemData got = problem->make_edge_case(shape, seed, name);
    for (const char* t : {"w", "x", "mask"}) {
      const auto& base = parity.get(t).data;
      const auto& data = got.get(t).data;
      ASSERT_EQ(data.size(), base.size()) << name << " " << t;
      for (std::size_t i = 0; i < data.size(); ++i)
        EXPECT_EQ(data[i], want(std::string(t), i, base[i])) << name << ": " << t << "[" << i << "]";
    }
  };
  expect_case("scaled", [](const std::string& t, std::size_t, float v) {
    return t == "x"   ? static_cast<float>(static_cast<double>(v) * 3)
           : t == "w" ? static_cast<float>(static_cast<double>(v) - 0.5)
                      : v;
  });
  expect_case("affine", [](const std::string& t, std::size_t, float v) {
    return t == "x" ? static_cast<float>(static_cast<double>(v) * 2 + 1) : v;
  });
  expect_case("filled", [](const std::string& t, std::size_t, float v) {
    return t == "x" ? 0.25f : t == "mask" ? 1.0f : v;
  });
  expect_case("edited", [](const std::string& t, std::size_t i, float v) {
    if (t != "x") return v;
    return i % 3 == 2 ? static_cast<float>(i / 3 + 1) : 0.0f;  // x[i, K - 1] = i + 1, the rest filled with 0
  });
  expect_case("big only", [](const std::string& t, std::size_t, float v) { return t == "mask" ? 0.0f : v; });

  // Another seed draws other data under the same operations.
  EXPECT_NE(problem->make_edge_case(shape, seed + 1, "scaled").get("x").data,
            problem->make_edge_case(shape, seed, "scaled").get("x").data);
}

TEST(EdgeCases, WhenFiltersThemByShapeAndUnknownNamesAreRefused) {
  const auto problem = Problem::load(write_problem(R"("edge_cases": [
    {"name": "first",     "set": {"x": {"scale": 2}}},
    {"name": "wide only", "when": "K >= 4", "set": {"x": {"fill": 1}}},
    {"name": "last",      "set": {"w": {"fill": 0}}}
  ])"));
  const Shape narrow({{"M", 2}, {"K", 3}}), wide({{"M", 2}, {"K", 4}});
  EXPECT_EQ(problem->edge_cases(narrow), (std::vector<std::string>{"first", "last"}));
  EXPECT_EQ(problem->edge_cases(wide), (std::vector<std::string>{"first", "wide only", "last"}));
  EXPECT_NO_THROW((void)problem->make_edge_case(wide, 1, "wide only"));
  EXPECT_THROW((void)problem->make_edge_case(narrow, 1, "wide only"), InputError);
  try {
    (void)problem->make_edge_case(narrow, 1, "nope");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "problem edge has no edge case 'nope' (it has 'first', 'wide only', 'last')");
  }
  EXPECT_THROW((void)problem->edge_cases(Shape({{"M", 2}})), ShapeError);
}

TEST(EdgeCases, AnEditOutsideItsTensorIsReportedWithItsPath) {
  const auto problem = Problem::load(write_problem(R"("edge_cases": [
    {"name": "a", "edits": [{"tensor": "mask", "index": ["M"], "value": "1"}]}
  ])"));
  try {
    (void)problem->make_edge_case(Shape({{"M", 3}, {"K", 2}}), 1, "a");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(": edge_cases[0].edits[0].index[0] 'M' gives 3, outside tensor 'mask' (size 3)"),
              std::string::npos)
        << e.what();
  }
}

TEST(EdgeCases, AProblemWithoutEdgeCasesHasNoneAndIsDeterministicByDefault) {
  const auto plain = Problem::load(write_problem(""));
  EXPECT_TRUE(plain->edge_cases(Shape({{"M", 2}, {"K", 3}})).empty());
  EXPECT_TRUE(plain->deterministic());
  EXPECT_THROW((void)plain->make_edge_case(Shape({{"M", 2}, {"K", 3}}), 1, "large magnitudes"), InputError);
  EXPECT_FALSE(Problem::load(write_problem(R"("deterministic": false)"))->deterministic());
  EXPECT_TRUE(Problem::load(write_problem(R"("deterministic": true)"))->deterministic());
}

// The shipped problems' edge cases: the ones chosen, finite data that differs from the parity
// data, and a finite reference (the C++ fast path agreeing with reference.py where there is one).
TEST(EdgeCases, TheShippedProblemsEdgeCasesMakeFiniteDataAndAFiniteReference) {
  struct Shipped {
    std::string problem;  // a name on the problem path, or a folder
    Shape shape;
    std::vector<std::string> cases;
  };
  const std::vector<Shipped> shipped = {{"contact",
                                         Shape({{"B", 2}, {"N", 5}, {"C", 8}, {"H", 4}}),
                                         {"large magnitudes", "all-equal rows"}},
                                        {"scene_graph",
                                         Shape({{"B", 2}, {"N", 6}, {"D", 16}, {"heads", 2}, {"P", 4}}),
                                         {"large node features", "strong relation bias", "all edges", "self edges only"}},
                                        {(test::repo_dir() / "examples" / "ln_linear_gelu").string(),
                                         Shape({{"M", 3}, {"K", 8}, {"N", 5}}),
                                         {"large magnitudes", "all-equal rows"}}};
  for (const auto& [name, shape, cases] : shipped) {
    const Problem& p = find_problem(name);
    EXPECT_TRUE(p.deterministic()) << name;
    ASSERT_EQ(p.edge_cases(shape), cases) << name;
    const ProblemData parity = p.make_data(shape, 5, DataPurpose::kParity);
    for (const auto& c : cases) {
      const ProblemData d = p.make_edge_case(shape, 5, c);
      bool changed = false;
      for (const auto* group : {&d.params, &d.inputs})
        for (const HostTensor& t : *group) {
          for (float v : t.data) ASSERT_TRUE(std::isfinite(v)) << name << ", " << c << ": " << t.spec.name;
          changed = changed || t.data != parity.get(t.spec.name).data;
        }
      EXPECT_TRUE(changed) << name << ", " << c << " is the parity data";
      // reference() refuses a non-finite output.
      const auto ref = p.reference(shape, d).values();
      EXPECT_EQ(ref.size(), static_cast<std::size_t>(p.output_spec(shape).elements())) << name << ", " << c;
      if (!p.has_builtin_reference()) continue;
      const auto python = p.reference(shape, d, ReferenceBackend::kPython).values();
      double worst = 0;
      for (std::size_t i = 0; i < ref.size(); ++i)
        worst = std::max(worst, std::abs(ref[i] - python[i]) / (1.0 + std::abs(ref[i])));
      EXPECT_LT(worst, 1e-12) << name << ", " << c;
    }
  }
}

}  // namespace
}  // namespace tune

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "tune/errors.hpp"
#include "tune/io.hpp"
#include "tune/problem.hpp"
#include "tune/rng.hpp"
#include "support/paths.hpp"

namespace tune {
namespace {

std::vector<std::filesystem::path> goldens(const std::string& problem) {
  std::vector<std::filesystem::path> out;
  for (const auto& e : std::filesystem::directory_iterator(test::golden_dir()))
    if (e.path().filename().string().rfind(problem + "_", 0) == 0) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

class GoldenReference : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenReference, CpuReferenceMatchesEveryGoldenFileToRounding) {
  const auto files = goldens(GetParam());
  ASSERT_GE(files.size(), 3u) << "golden files not found in " << test::golden_dir();
  for (const auto& f : files) {
    const GoldenCase g = read_golden(f);
    const Problem& p = find_problem(g.problem);
    const auto ref = p.reference(g.shape, g.data);
    ASSERT_EQ(ref.size(), g.output.size()) << f;
    double worst = 0;
    for (std::size_t i = 0; i < ref.size(); ++i)
      worst = std::max(worst, std::abs(ref[i] - g.output[i]) / (1.0 + std::abs(g.output[i])));
    // Float64 rounding only: ~1e-12 relative to the magnitude (absolute near zero).
    EXPECT_LT(worst, 1e-12) << f << ": max error relative to (1 + |golden|) " << worst;
  }
}

INSTANTIATE_TEST_SUITE_P(Problems, GoldenReference, ::testing::Values("contact", "scene_graph"));

TEST(Problems, TheSameSeedGivesTheSameDataAndAnotherSeedOtherData) {
  for (const auto& name : problem_names()) {
    const Problem& p = find_problem(name);
    Shape s;
    for (const auto& d : p.dims()) s.set(d, d == "heads" ? 2 : 4);
    const ProblemData a = p.make_data(s, 7, DataPurpose::kTiming);
    const ProblemData b = p.make_data(s, 7, DataPurpose::kTiming);
    const ProblemData c = p.make_data(s, 8, DataPurpose::kTiming);
    ASSERT_EQ(a.inputs.size(), p.input_specs(s).size());
    ASSERT_EQ(a.params.size(), p.param_specs(s).size());
    EXPECT_EQ(a.inputs[0].data, b.inputs[0].data) << name;
    EXPECT_NE(a.inputs[0].data, c.inputs[0].data) << name;
    EXPECT_EQ(a.params[0].data, b.params[0].data) << name;
  }
}

TEST(Problems, GenerationFollowsTheSpecDistributions) {
  const Problem& p = find_problem("contact");
  const Shape s({{"B", 2}, {"N", 16}, {"C", 64}, {"H", 32}});
  const ProblemData d = p.make_data(s, 1, DataPurpose::kTiming);
  const auto& w0 = d.get("mlp.0.weight").data;
  const double bound = 1 / std::sqrt(64.0);
  for (float v : w0) EXPECT_LE(std::abs(v), bound);
  const auto& gamma = d.get("layer_norm.weight").data;
  double mean = 0;
  for (float v : gamma) mean += v;
  EXPECT_NEAR(mean / gamma.size(), 1.0, 0.15);
  const auto& x = d.get("pair_repr").data;
  double m = 0, m2 = 0;
  for (float v : x) m += v, m2 += double(v) * v;
  EXPECT_NEAR(m / x.size(), 0.0, 0.05);
  EXPECT_NEAR(m2 / x.size(), 1.0, 0.05);
}

TEST(Problems, RngIsReproducibleAcrossMachines) {
  // Pinned values: mt19937_64 is specified by the standard, the transforms are ours.
  Rng r(42);
  const double u = r.uniform01();
  EXPECT_NEAR(u, 0.7551555329545390, 1e-15);  // (mt19937_64(42)() >> 11) * 2^-53
}

TEST(Problems, SceneGraphParityDataHasAFullyMaskedRowAndSingleEntryRows) {
  const Problem& p = find_problem("scene_graph");
  const Shape s({{"B", 3}, {"N", 6}, {"D", 16}, {"heads", 2}, {"P", 4}});
  const ProblemData d = p.make_data(s, 3, DataPurpose::kParity);
  const auto& mask = d.get("edge_mask").data;
  for (int b = 0; b < 3; ++b) {
    int fully_masked = 0, single = 0;
    for (int i = 0; i < 6; ++i) {
      int on = 0;
      for (int j = 0; j < 6; ++j) on += mask[(b * 6 + i) * 6 + j] > 0.5f;
      fully_masked += on == 0;
      single += on == 1;
    }
    EXPECT_GE(fully_masked, 1) << "batch " << b;
    EXPECT_GE(single, 1) << "batch " << b;
  }
  // A fully masked row's output is its residual.
  const auto ref = p.reference(s, d);
  const auto& nodes = d.get("nodes").data;
  for (int b = 0; b < 3; ++b)
    for (int i = 0; i < 6; ++i) {
      int on = 0;
      for (int j = 0; j < 6; ++j) on += mask[(b * 6 + i) * 6 + j] > 0.5f;
      if (on) continue;
      for (int c = 0; c < 16; ++c) EXPECT_DOUBLE_EQ(ref[(b * 6 + i) * 16 + c], nodes[(b * 6 + i) * 16 + c]);
    }
}

TEST(Problems, UnknownProblemListsTheKnownOnes) {
  try {
    (void)find_problem("nope");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("contact, scene_graph"), std::string::npos) << e.what();
  }
}

TEST(Problems, NonPositiveShapesAreRefusedNamingTheDimension) {
  const Problem& p = find_problem("contact");
  try {
    p.check_shape(Shape({{"B", 4}, {"N", 0}, {"C", 64}, {"H", 32}}));
    FAIL();
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("--N"), std::string::npos) << e.what();
  }
}

TEST(Problems, WorkCountsFollowTheSpec) {
  const Problem& p = find_problem("contact");
  const WorkCounts w = p.counts(Shape({{"B", 4}, {"N", 64}, {"C", 64}, {"H", 32}}));
  EXPECT_DOUBLE_EQ(w.flop, 2.0 * 4 * 64 * 64 * (64 * 32 + 32 * 32 + 32));
  EXPECT_GT(w.bytes, 4.0 * 4 * 64 * 64 * 64);
}

}  // namespace
}  // namespace tune

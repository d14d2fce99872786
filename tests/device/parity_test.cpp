// Device tier (label gpu): compiled variants against the golden cases and fresh seeded inputs.
// Without a CUDA device every test skips and says why.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "support/compile_all.hpp"
#include "support/paths.hpp"
#include "support/sample.hpp"
#include "tune/compile.hpp"
#include "tune/device.hpp"
#include "tune/io.hpp"
#include "tune/measure.hpp"
#include "tune/problem.hpp"
#include "tune/space.hpp"
#include "tune/tune.hpp"

namespace tune {
namespace {

std::optional<DeviceInfo> device_or_skip_reason(std::string* why) { return query_device(0, why); }

// The baseline, the representative subset (one per combination of categorical values) and,
// for every value of every numeric parameter, the first valid config with it (so rsplit 2 and
// 4, ksplit 3, ntile 4 and every block size are checked on the device too).
std::vector<Config> sample(const Space& space, const Shape& shape, const DeviceLimits& limits) {
  std::vector<Config> out;
  const auto add = [&](const Config& c) {
    if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  };
  if (space.violated_constraint(space.baseline(), shape, limits).empty()) out.push_back(space.baseline());
  const auto all = space.enumerate(shape, limits).configs;
  for (const Config& c : test::representatives(space, all)) add(c);
  for (std::size_t p = 0; p < space.parameters().size(); ++p) {
    const auto& values = space.parameters()[p].values;
    if (values.front().is_string() || values.front().is_boolean()) continue;
    for (std::size_t v = 0; v < values.size(); ++v) {
      const auto it = std::find_if(all.begin(), all.end(), [&](const Config& c) { return c.choice[p] == v; });
      if (it != all.end()) add(*it);
    }
  }
  return out;
}

void check_sample(const DeviceInfo& device, const std::string& problem_name, const Shape& shape, const ProblemData& data,
                  const OutputValues& reference, const std::string& what) {
  const Problem& problem = find_problem(problem_name);
  const Space space = load_space(problem_name, std::nullopt);
  const auto configs = sample(space, shape, device.limits());
  ASSERT_FALSE(configs.empty()) << what;
  // Compiled on all cores first (the sample is dozens of variants), then checked one by one.
  std::vector<Lowered> lowered;
  for (const Config& c : configs) lowered.push_back(space.lower(c, shape, device.limits()));
  const std::vector<CompileResult> compiled = test::compile_all(lowered, default_options(device.compute_capability()));
  DeviceRunner runner(device, problem, shape, data, data, reference, 0);
  for (std::size_t i = 0; i < configs.size(); ++i) {
    const Config& c = configs[i];
    ASSERT_TRUE(compiled[i].ok) << space.name(c) << "\n" << compiled[i].log;
    const ParityRecord p = runner.check(compiled[i], lowered[i], data, reference, 0);
    EXPECT_TRUE(parity_passed(p)) << what << " " << space.name(c) << ": " << p.mismatches << " of " << p.elements
                                  << " outside 1e-4, max abs " << p.max_abs_error << ", worst index " << p.worst_index;
  }
}

class GoldenOnDevice : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenOnDevice, BaselineAndSampledVariantsMatchTheGoldenOutput) {
  std::string why;
  const auto device = device_or_skip_reason(&why);
  if (!device) GTEST_SKIP() << "no CUDA device: " << why;
  const GoldenCase g = read_golden(test::golden_file(GetParam()));
  check_sample(*device, g.problem, g.shape, g.data, g.output, GetParam());
}

INSTANTIATE_TEST_SUITE_P(Goldens, GoldenOnDevice,
                         ::testing::Values("contact_B3_N5_C8_H4.json", "contact_B2_N8_C16_H8.json",
                                           "contact_B1_N16_C64_H32.json.gz", "scene_graph_B2_N6_D16_H2_P4.json",
                                           "scene_graph_B1_N12_D32_H4_P8.json.gz", "scene_graph_B4_N24_D96_H4_P16.json.gz"));

TEST(Device, FreshSeededInputsAtAnOddShape) {
  std::string why;
  const auto device = device_or_skip_reason(&why);
  if (!device) GTEST_SKIP() << "no CUDA device: " << why;
  for (const auto& [problem, dims] : std::vector<std::pair<std::string, std::vector<std::pair<std::string, std::int64_t>>>>{
           {"contact", {{"B", 3}, {"N", 37}}}, {"scene_graph", {{"B", 3}, {"N", 13}}}}) {
    const Problem& p = find_problem(problem);
    const Shape shape = resolve_shape(p, load_space(problem, std::nullopt), dims);
    const ProblemData data = p.make_data(shape, 2026, DataPurpose::kParity);
    check_sample(*device, problem, shape, data, p.reference(shape, data), problem + " " + shape.describe());
  }
}

}  // namespace
}  // namespace tune

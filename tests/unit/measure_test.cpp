#include <gtest/gtest.h>

#include <cmath>

#include "tune/measure.hpp"
#include "tune/problem.hpp"

namespace tune {
namespace {

TEST(Stats, QuantilesAndNoiseOfARecordedSampleSet) {
  SampleSet s;
  for (double v : {5.0, 1.0, 4.0, 2.0, 3.0}) s.add(v);
  TimingRecord r;
  s.summarize(r);
  EXPECT_EQ(r.samples, 5);
  EXPECT_DOUBLE_EQ(r.min_us, 1);
  EXPECT_DOUBLE_EQ(r.median_us, 3);
  EXPECT_DOUBLE_EQ(r.q1_us, 2);
  EXPECT_DOUBLE_EQ(r.q3_us, 4);
  EXPECT_DOUBLE_EQ(r.mean_us, 3);
  EXPECT_NEAR(r.stddev_us, std::sqrt(2.5), 1e-12);
  EXPECT_NEAR(r.noise, std::sqrt(2.5) / 3, 1e-12);
  EXPECT_NEAR(r.robust_noise, 1.4826 * 1.0 / 3, 1e-12);  // deviations 2,1,0,1,2: MAD 1
}

TEST(Stats, SearchRuleStopsOnLowNoiseOnlyAfterTheMinimumSamples) {
  const StopRule rule = StopRule::search();
  SampleSet s;
  for (int i = 0; i < 9; ++i) s.add(10.0);
  EXPECT_EQ(s.stop_reason(rule, 0.0), "");  // 9 < 10 samples
  s.add(10.0);
  EXPECT_NE(s.stop_reason(rule, 0.0).find("noise"), std::string::npos);
}

TEST(Stats, RareOutliersDoNotKeepTheSearchRuleSampling) {
  // 5 % of the launches preempted (3x slower): stddev/mean is ~ 40 %, the bulk is within 0.5 %.
  const StopRule rule = StopRule::search();
  SampleSet s;
  for (int i = 0; i < 40; ++i) s.add(i % 20 == 7 ? 30.0 : 10.0 + 0.05 * (i % 3));
  TimingRecord r;
  s.summarize(r);
  EXPECT_GT(r.noise, 0.3);
  EXPECT_LT(r.robust_noise, 0.01);
  EXPECT_NE(s.stop_reason(rule, 0.0).find("robust noise"), std::string::npos);
}

TEST(Stats, NoisySamplesRunToTheWallCap) {
  const StopRule rule = StopRule::search();
  SampleSet s;
  for (int i = 0; i < 50; ++i) s.add(i % 2 ? 10.0 : 20.0);
  EXPECT_EQ(s.stop_reason(rule, 0.05), "");
  EXPECT_NE(s.stop_reason(rule, rule.wall_cap_seconds).find("wall_cap"), std::string::npos);
}

TEST(Stats, StrictRuleStopsOnGpuTime) {
  const StopRule rule = StopRule::strict();
  SampleSet s;
  for (int i = 0; i < 200; ++i) s.add(i % 2 ? 2000.0 : 4000.0);  // noisy, 0.6 s of GPU time
  EXPECT_NE(s.stop_reason(rule, 0.7).find("gpu_time"), std::string::npos);
}

TEST(Parity, ToleranceNanAndWorstIndex) {
  const std::vector<double> ref = {1.0, 2.0, 0.0, -3.0};
  ParityRecord ok = compare_output({1.0f, 2.00015f, 0.00009f, -3.0f}, ref, 1e-4, 1e-4);
  EXPECT_TRUE(parity_passed(ok));
  EXPECT_EQ(ok.mismatches, 0);
  ParityRecord bad = compare_output({1.0f, 2.001f, NAN, -3.0f}, ref, 1e-4, 1e-4);
  EXPECT_FALSE(parity_passed(bad));
  EXPECT_EQ(bad.mismatches, 2);
  EXPECT_EQ(bad.non_finite, 1);
  EXPECT_EQ(bad.worst_index, 2);
  EXPECT_FALSE(bad.worst_value.has_value());
  EXPECT_FALSE(parity_passed(compare_output(std::vector<double>{}, std::vector<double>{}, 1e-4, 1e-4)));  // nothing: no pass
}

}  // namespace
}  // namespace tune

// Round 8: a shape too large for the device's memory was refused with "use a smaller --B or --N",
// contact's dimensions, for every problem; the line names the largest tensor and its size instead.
TEST(MemoryFit, AShortfallNamesTheLargestTensorNotContactsDimensions) {
  const tune::Problem& contact = tune::find_problem("contact");
  const tune::Shape shape({{"B", 8}, {"N", 1024}, {"C", 64}, {"H", 32}});
  tune::DeviceInfo device;
  device.name = "NVIDIA H100";
  device.l2_bytes = 50 << 20;
  const std::string why = tune::DeviceRunner::memory_shortfall(contact, shape, device, 1 << 20);
  EXPECT_NE(why.find("the largest tensor, 'pair_repr', has 536870912 elements, 2.00 GiB"), std::string::npos) << why;
  EXPECT_NE(why.find("pass a smaller shape"), std::string::npos) << why;
  EXPECT_EQ(why.find("--B or --N"), std::string::npos) << why;
  EXPECT_TRUE(tune::DeviceRunner::memory_shortfall(contact, shape, device, std::uint64_t{1} << 40).empty());
}

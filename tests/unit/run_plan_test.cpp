// Issue 38: a run's plan is resolved once (plan_run) and its device's limits are what every variant
// is lowered for. A fake device of 100 SMs (TUNE_WORKER_FAKE_SMS) gives contact's persistent grid
// 100 x resident blocks, not the 132 x resident of sm_90's limits.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "tune/errors.hpp"
#include "tune/run_plan.hpp"

namespace {

using namespace tune;

// Sets the fake device's environment for one test and takes it back after.
struct FakeDeviceEnv {
  explicit FakeDeviceEnv(const char* sms) {
    ::setenv("TUNE_WORKER_FAKE", "1", 1);
    ::setenv("TUNE_WORKER_FAKE_SMS", sms, 1);
  }
  ~FakeDeviceEnv() {
    ::unsetenv("TUNE_WORKER_FAKE");
    ::unsetenv("TUNE_WORKER_FAKE_SMS");
  }
  FakeDeviceEnv(const FakeDeviceEnv&) = delete;
  FakeDeviceEnv& operator=(const FakeDeviceEnv&) = delete;
};

TuneOptions contact_options() {
  TuneOptions o;
  o.problem = "contact";
  o.dims = {{"B", 1}, {"N", 1024}};
  o.out_dir = "plan_out";
  return o;
}

// A persistent warp_tile variant: its grid is min(cdiv(sym_tiles, warps), dev_sm_count * resident).
Config persist_config(const Space& space) {
  nlohmann::ordered_json p = space.to_json(space.baseline());
  p["strategy"] = "mma";
  p["mapping"] = "warp_tile";
  p["sym"] = true;
  p["async_copy"] = true;
  p["tile_i"] = 4;
  p["tile_j"] = 4;
  p["precision"] = "tf32";
  p["stage_t"] = true;
  p["persist"] = true;
  return space.from_json(p);
}

TEST(RunPlan, LowersForTheDevicesLimitsNotSm90s) {
  const FakeDeviceEnv env("100");
  const RunPlan plan = plan_run(contact_options(), nullptr);
  ASSERT_TRUE(plan.device && plan.fake);
  EXPECT_FALSE(plan.device_note.empty());
  EXPECT_EQ(plan.limits.sm_count, 100);
  EXPECT_EQ(plan.shape.tag(), "B1_N1024_C64_H32");
  EXPECT_EQ(plan.json_path.filename(), "B1_N1024_C64_H32.json");
  EXPECT_EQ(plan.json_path.parent_path().filename(), "contact");
  EXPECT_EQ(plan.partial_path, partial_results_path(plan.json_path));

  const Config c = persist_config(plan.space);
  ASSERT_EQ(plan.space.violated_constraint(c, plan.shape, plan.limits), "");
  const unsigned here = plan.space.lower(c, plan.shape, plan.limits).launches.at(0).grid.at(0);
  const DeviceLimits sm90 = DeviceLimits::for_arch(90);
  const unsigned there = plan.space.lower(c, plan.shape, sm90).launches.at(0).grid.at(0);
  ASSERT_EQ(sm90.sm_count, 132);
  ASSERT_EQ(there % 132, 0u) << "the grid at sm_90's limits is 132 x resident";
  EXPECT_EQ(here, there / 132 * 100) << "100 SMs x the same resident blocks";

  // The baseline's early compile (a sweep's) is lowered for the plan's limits too.
  EXPECT_TRUE(baseline_request(plan).has_value());
}

TEST(RunPlan, ResolvesTheShapeOnceAndRefusesBadDimensions) {
  const FakeDeviceEnv env("132");
  TuneOptions o = contact_options();
  o.dims.push_back({"Q", 3});
  EXPECT_THROW((void)plan_run(o, nullptr), ShapeError);
  const ProblemShape at = resolve_problem_shape("contact", std::nullopt, {{"B", 4}, {"N", 64}});
  EXPECT_EQ(at.shape.tag(), "B4_N64_C64_H32");
  EXPECT_EQ(std::string(at.problem->name()), "contact");
}

}  // namespace

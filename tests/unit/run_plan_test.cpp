// Issue 38: a run's plan is resolved once (plan_run) and its device's limits are what every variant
// is lowered for. A fake device of 100 SMs (TUNE_WORKER_FAKE_SMS) gives contact's persistent grid
// 100 x resident blocks, not the 132 x resident of sm_90's limits.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "run/pass_run.hpp"
#include "tune/errors.hpp"
#include "tune/journal.hpp"
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
  const RunPlan plan = plan_run(contact_options(), resolve_item("contact", std::nullopt, contact_options().dims), nullptr);
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
  EXPECT_THROW((void)plan_run(o, resolve_item(o.problem, o.config, o.dims), nullptr), ShapeError);
  const ProblemShape at = resolve_problem_shape("contact", std::nullopt, {{"B", 4}, {"N", 64}});
  EXPECT_EQ(at.shape.tag(), "B4_N64_C64_H32");
  EXPECT_EQ(std::string(at.problem->name()), "contact");
  // The work counts come with the resolution: the transfer order and the run's floors read them.
  const WorkCounts counted = at.problem->counts(at.shape);
  EXPECT_GT(at.counts.flop, 0.0);
  EXPECT_EQ(at.counts.flop, counted.flop);
  EXPECT_EQ(at.counts.bytes, counted.bytes);
}

// A sweep's early baseline compiles open the device once (open_run_device) and plan each later
// shape on it: the same plan as a run's own, without a device query per shape.
TEST(RunPlan, ADeviceOpenedOnceGivesTheSamePlanAsTheRunsOwn) {
  const FakeDeviceEnv env("100");
  const TuneOptions o = contact_options();
  const ShapeResolution item = resolve_item(o.problem, o.config, o.dims);
  const RunDevice device = open_run_device(o);
  ASSERT_TRUE(device.device && device.fake);
  const RunPlan given = plan_run(o, item, nullptr, &device);
  const RunPlan own = plan_run(o, item, nullptr);
  EXPECT_EQ(given.at, own.at);
  EXPECT_EQ(&given.counts, &item.at->counts);
  EXPECT_EQ(given.limits.sm_count, 100);
  EXPECT_EQ(given.cc, own.cc);
  EXPECT_EQ(given.json_path, own.json_path);
  EXPECT_EQ(given.device_note, own.device_note);
  ASSERT_TRUE(baseline_request(given).has_value());
  EXPECT_EQ(baseline_request(given)->name_expressions, baseline_request(own)->name_expressions);
}

// Issue 38: the outputs of a pass are a type of their own (Outputs, run/pass_run.hpp), passed
// the record they write: the journal keeps each record appended, a resumed run takes it back, and
// the results replace the snapshot and the journal when the run ends.
TEST(Outputs, JournalResumeAndReplaceOfTheRecordPassedIn) {
  const FakeDeviceEnv env("100");
  TuneOptions o = contact_options();
  o.out_dir = std::filesystem::temp_directory_path() / ("tune-outputs-test-" + std::to_string(::getpid()));
  std::filesystem::remove_all(o.out_dir);
  const RunPlan plan = plan_run(o, resolve_item(o.problem, o.config, o.dims), nullptr);
  const auto blank_run = [&] {
    RunRecord run;
    run.problem = std::string(plan.problem->name());
    run.shape = plan.shape;
    run.timed = true;
    for (const Config& c : {plan.space.baseline(), persist_config(plan.space)}) {
      VariantRecord v;
      v.name = plan.space.name(c);
      v.params = plan.space.to_json(c);
      v.baseline = c == plan.space.baseline();
      run.variants.push_back(v);
    }
    return run;
  };
  const LogFn quiet = [](const std::string&) {};
  {
    Outputs outputs(plan, o, quiet, Clock::now());
    outputs.lock();
    RunRecord run = blank_run();
    outputs.open_journal(run, nullptr);
    EXPECT_TRUE(std::filesystem::exists(plan.partial_path)) << "the first snapshot";
    EXPECT_FALSE(outputs.journaled(0));
    run.variants[0].status = Status::kCompileFailed;
    run.variants[0].reason = "planted";
    outputs.append("search", run.variants[0]);
  }  // interrupted: the journal stays
  o.resume = true;
  Outputs outputs(plan, o, quiet, Clock::now());
  outputs.lock();
  RunRecord run = blank_run();
  outputs.open_journal(run, nullptr);
  EXPECT_TRUE(outputs.journaled(0)) << "a final record of this run's variant is taken back";
  EXPECT_FALSE(outputs.journaled(1));
  EXPECT_EQ(run.variants[0].reason, "planted");
  EXPECT_EQ(run.context.resumed_variants, 1);
  run.variants[1].status = Status::kCompileFailed;
  const TuneOutcome out = outputs.replace(run, std::nullopt, 3);
  EXPECT_EQ(out.json_path, plan.json_path);
  EXPECT_EQ(out.gate_exit_code, 3);
  EXPECT_TRUE(std::filesystem::exists(plan.json_path));
  EXPECT_FALSE(std::filesystem::exists(plan.partial_path)) << "the results replace the snapshot";
  EXPECT_FALSE(std::filesystem::exists(Journal::path_for(plan.json_path))) << "a finished run keeps no journal";
  std::filesystem::remove_all(o.out_dir);
}

}  // namespace

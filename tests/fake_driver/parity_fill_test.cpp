// Parity of integer and bool outputs against the fake driver (fake_cuda.cpp): the copy kernel writes
// the bytes of x to the front of out, so an out longer than x keeps the harness's fill at its end,
// as a kernel that skips elements does. The fill must never pass for a written value: an int32
// output is filled with -1 (0xFF bytes), a reference of -1 is common (an index not found), and
// a bool output's 0xFF byte read as true matched every true of the reference.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "fake_driver/fake_variant.hpp"
#include "support/fixture_problem.hpp"
#include "tune/device.hpp"
#include "tune/measure.hpp"
#include "tune/problem.hpp"
#include "tune/space.hpp"

namespace tune {
namespace {

using test::copy_launch;
using test::copy_variant;
using test::fake_driver_loaded;

// The affine fixture with x and out of the given dtypes, x's init `init`, out of `out_rows` rows.
std::unique_ptr<Problem> typed_affine(const std::string& test, const std::string& x_dtype, const nlohmann::json& init,
                                      const std::string& out_dtype, const std::string& out_rows) {
  const auto dir = std::filesystem::temp_directory_path() / ("tune_parity_fill_" + test) / "affine";
  test::copy_fixture_problem("affine", dir, [&](nlohmann::ordered_json& j) {
    j["edits"] = nlohmann::ordered_json::array();
    j["tensors"][2]["dtype"] = x_dtype;
    j["tensors"][2]["init"] = init;
    j["tensors"][3]["dtype"] = out_dtype;
    j["tensors"][3]["shape"] = {out_rows, "L"};
  });
  return Problem::load(dir / "problem.json");
}

DeviceInfo fake_device() {
  DeviceInfo device;
  device.name = "fake";
  device.cc_major = 9;
  return device;
}

// An int32 output whose last row the kernel never writes, and whose reference there is -1: the
// fill's value. It passed.
TEST(FakeDriver, AnUnwrittenIntegerOutputFailsWhereItsReferenceEqualsTheFill) {
  if (!fake_driver_loaded()) GTEST_SKIP() << "needs the fake libcuda.so.1 on LD_LIBRARY_PATH (ctest sets it)";
  const nlohmann::json ints = {{"kind", "integers"}, {"low", -3}, {"high", 3}};
  const auto problem = typed_affine("int32", "int32", ints, "int32", "R + 1");
  const Shape shape({{"R", 5}, {"L", 8}});
  const ProblemData data = problem->make_data(shape, 7, DataPurpose::kParity);
  std::vector<double> x = data.get("x").data;
  x.resize(x.size() + 8, -1.0);  // the row the copy leaves alone
  const OutputValues ref = OutputValues::of_doubles(DType::kInt32, x);
  DeviceRunner runner(fake_device(), *problem, shape, data, data, ref, 7);
  const ParityRecord p = runner.check(copy_variant(), copy_launch(), data, ref, 7);
  EXPECT_FALSE(parity_passed(p)) << "an output left unwritten passed because its reference equals the fill";
  EXPECT_EQ(p.mismatches, 8);
  EXPECT_GE(p.worst_index, 40);
}

// A kernel that writes every element, some of them -1 (x holds -3..2): it passes.
TEST(FakeDriver, AWrittenIntegerOutputEqualToTheFillPasses) {
  if (!fake_driver_loaded()) GTEST_SKIP() << "needs the fake libcuda.so.1 on LD_LIBRARY_PATH (ctest sets it)";
  const nlohmann::json ints = {{"kind", "integers"}, {"low", -3}, {"high", 3}};
  const auto problem = typed_affine("int32_whole", "int32", ints, "int32", "R");
  const Shape shape({{"R", 5}, {"L", 8}});
  const ProblemData data = problem->make_data(shape, 7, DataPurpose::kParity);
  const std::vector<double>& x = data.get("x").data;
  ASSERT_NE(std::find(x.begin(), x.end(), -1.0), x.end()) << "the draw should hold a -1";
  const OutputValues ref = OutputValues::of_doubles(DType::kInt32, x);
  DeviceRunner runner(fake_device(), *problem, shape, data, data, ref, 7);
  const ParityRecord p = runner.check(copy_variant(), copy_launch(), data, ref, 7);
  EXPECT_TRUE(parity_passed(p)) << p.mismatches << " mismatches, worst at " << p.worst_index;
}

// A bool output: its unwritten last row, where the reference is true, and a byte 2 written where
// it is true (raw access through unsigned char*), which PyTorch's bool does not hold.
TEST(FakeDriver, ABoolOutputHoldsZeroOrOneAndAnUnwrittenOneFails) {
  if (!fake_driver_loaded()) GTEST_SKIP() << "needs the fake libcuda.so.1 on LD_LIBRARY_PATH (ctest sets it)";
  const nlohmann::json ones = {{"kind", "constant"}, {"value", 1}};
  const auto unwritten = typed_affine("bool_tail", "bool", ones, "bool", "R + 1");
  const Shape shape({{"R", 5}, {"L", 8}});
  const ProblemData data = unwritten->make_data(shape, 7, DataPurpose::kParity);
  const OutputValues all_true = OutputValues::of_doubles(DType::kBool, std::vector<double>(48, 1.0));
  DeviceRunner runner(fake_device(), *unwritten, shape, data, data, all_true, 7);
  const ParityRecord tail = runner.check(copy_variant(), copy_launch(), data, all_true, 7);
  EXPECT_FALSE(parity_passed(tail)) << "an unwritten bool passed as true";
  EXPECT_EQ(tail.mismatches, 8);

  const nlohmann::json twos = {{"kind", "constant"}, {"value", 2}};
  const auto raw = typed_affine("bool_two", "uint8", twos, "bool", "R");
  const ProblemData two_data = raw->make_data(shape, 7, DataPurpose::kParity);
  const OutputValues true40 = OutputValues::of_doubles(DType::kBool, std::vector<double>(40, 1.0));
  DeviceRunner raw_runner(fake_device(), *raw, shape, two_data, two_data, true40, 7);
  const ParityRecord two = raw_runner.check(copy_variant(), copy_launch(), two_data, true40, 7);
  EXPECT_FALSE(parity_passed(two)) << "a bool byte of 2 passed as true";
  EXPECT_EQ(two.mismatches, 40);
  ASSERT_TRUE(two.worst_value.has_value());
  EXPECT_EQ(*two.worst_value, 2.0) << "the record shows the byte the kernel wrote";
  EXPECT_EQ(two.worst_value_exact, 2) << "as an integer";
  EXPECT_EQ(two.worst_reference_exact, 1);
}

// A problem whose outputs may differ between launches ("deterministic": false) has no bits of the
// search's to compare the gate's fresh context with: that output is held to the search's reference,
// as a further input. It was compared with the later launches alone, so a variant wrong in the
// fresh context alike each time passed (round 7). A deterministic problem keeps its bit comparison.
TEST(FakeDriver, TheFreshContextOfAProblemThatMayDifferBetweenLaunchesIsHeldToTheReference) {
  if (!fake_driver_loaded()) GTEST_SKIP() << "needs the fake libcuda.so.1 on LD_LIBRARY_PATH (ctest sets it)";
  for (const bool deterministic : {false, true}) {
    const auto dir = std::filesystem::temp_directory_path() /
                     (deterministic ? "tune_fresh_context_det" : "tune_fresh_context_nondet") / "affine";
    test::copy_fixture_problem("affine", dir, [&](nlohmann::ordered_json& j) { j["deterministic"] = deterministic; });
    const auto problem = Problem::load(dir / "problem.json");
    const Shape shape({{"R", 5}, {"L", 8}});
    const ProblemData data = problem->make_data(shape, 7, DataPurpose::kParity);
    std::vector<double> x = data.get("x").data;  // what the copy writes, but for one element
    x[3] += 1.0;
    const OutputValues ref = OutputValues::of_doubles(problem->output_spec(shape).dtype, x);
    DeviceRunner runner(fake_device(), *problem, shape, data, data, ref, 7);
    const CompileResult variant = copy_variant();
    GateRecord gate;
    runner.gate({&variant}, {copy_launch()}, {&gate}, {}, {}, 3, deterministic);
    EXPECT_TRUE(gate.deterministic) << gate.determinism;
    if (deterministic) {
      EXPECT_TRUE(gate.inputs.empty()) << "the search's bits are the check";
      continue;
    }
    ASSERT_EQ(gate.inputs.size(), 1u);
    EXPECT_EQ(gate.inputs[0].name, DeviceRunner::kFreshContextInput);
    EXPECT_FALSE(parity_passed(gate.inputs[0].parity));
    EXPECT_EQ(gate.inputs[0].parity.mismatches, 1);
    EXPECT_EQ(gate.inputs[0].parity.worst_index, 3);
  }
}

}  // namespace
}  // namespace tune

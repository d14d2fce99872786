// Issue 35: parity that fits the precision. The tolerance of each output dtype, the module rule
// (kernel error <= k x the module's own error in that dtype + atol), exact integers, and the
// records that carry both errors.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <vector>

#include "support/fixture_run.hpp"
#include "tune/errors.hpp"
#include "tune/io.hpp"
#include "tune/measure.hpp"
#include "tune/problem.hpp"

namespace tune {
namespace {

using Json = nlohmann::ordered_json;

Tolerance defaults(DType d) { return TolerancePolicy{}.of(d); }

// judge_output of values of the tolerance's dtype, written as doubles.
ParityRecord judge(const std::vector<double>& out, const std::vector<double>& ref, const Tolerance& tol,
                   std::optional<double> module_error) {
  return judge_output(OutputValues::of_doubles(tol.dtype, out), OutputValues::of_doubles(tol.dtype, ref), tol, module_error);
}

TEST(Parity, DefaultTolerancesFollowTheOutputsDtype) {
  EXPECT_EQ(defaults(DType::kFloat32).atol, 1e-4);
  EXPECT_EQ(defaults(DType::kFloat32).rtol, 1e-4);
  EXPECT_EQ(defaults(DType::kFloat64).atol, 1e-7);
  EXPECT_EQ(defaults(DType::kFloat64).rtol, 1e-7);
  EXPECT_EQ(defaults(DType::kBFloat16).atol, 1e-5);
  EXPECT_EQ(defaults(DType::kBFloat16).rtol, 1.6e-2);
  EXPECT_EQ(defaults(DType::kFloat16).atol, 1e-5);
  EXPECT_EQ(defaults(DType::kFloat16).rtol, 1e-3);
  for (DType d : {DType::kInt8, DType::kInt32, DType::kInt64, DType::kUInt8, DType::kBool}) {
    EXPECT_EQ(defaults(d).atol, 0) << dtype_name(d);
    EXPECT_EQ(defaults(d).rtol, 0) << dtype_name(d);
  }
  EXPECT_EQ(defaults(DType::kBFloat16).module_k, 2.0);
  EXPECT_EQ(defaults(DType::kBFloat16).module_atol, 1e-5);  // the dtype's atol
  EXPECT_EQ(defaults(DType::kBFloat16).rule, "both");
}

// An error just inside the elementwise allowance passes, just outside fails, for every float dtype.
TEST(Parity, ElementwiseToleranceJustInsideAndJustOutsidePerDtype) {
  for (DType d : {DType::kFloat32, DType::kFloat64, DType::kBFloat16, DType::kFloat16}) {
    const Tolerance tol = defaults(d);
    const std::vector<double> ref = {2.0, -0.5};
    const double allowed = tol.atol + tol.rtol * 2.0;
    const ParityRecord in = judge({2.0 + allowed * (1 - 1e-6), -0.5}, ref, tol, std::nullopt);
    const ParityRecord out = judge({2.0 + allowed * (1 + 1e-6), -0.5}, ref, tol, std::nullopt);
    EXPECT_TRUE(parity_passed(in)) << dtype_name(d);
    EXPECT_TRUE(in.tolerance_passed) << dtype_name(d);
    EXPECT_FALSE(parity_passed(out)) << dtype_name(d);
    EXPECT_FALSE(out.tolerance_passed) << dtype_name(d);
    EXPECT_EQ(out.mismatches, 1) << dtype_name(d);
    EXPECT_EQ(out.dtype, dtype_name(d));
    EXPECT_FALSE(in.module_passed.has_value());  // no module output: the rule is not applied
  }
}

TEST(Parity, IntegerAndBoolOutputsCompareExactly) {
  for (DType d : {DType::kInt64, DType::kInt32, DType::kInt8, DType::kUInt8, DType::kBool}) {
    const Tolerance tol = defaults(d);
    const ParityRecord equal = judge({3, 0, 1}, {3, 0, 1}, tol, std::nullopt);
    EXPECT_TRUE(parity_passed(equal)) << dtype_name(d);
    EXPECT_EQ(equal.mismatches, 0);
    const ParityRecord off = judge({3, 1, 1}, {3, 0, 1}, tol, std::nullopt);
    EXPECT_FALSE(parity_passed(off)) << dtype_name(d);
    EXPECT_EQ(off.mismatches, 1);
    EXPECT_EQ(off.worst_index, 1);  // no 0/0 in the excess: the element off by one is the worst
    EXPECT_FALSE(parity_passed(judge({3, NAN, 1}, {3, 0, 1}, tol, std::nullopt))) << dtype_name(d);
  }
}

// Past 2^53 a double holds every other integer at best: as doubles, 2^60 + 1 reads 2^60, and a kernel
// off by one there passed. The int64 rule compares the integers themselves.
TEST(Parity, AnInt64OutputIsComparedInItsIntegersPast2To53) {
  const std::int64_t big = std::int64_t{1} << 60;
  const std::vector<std::int64_t> ref = {5, big, -big, std::numeric_limits<std::int64_t>::min()};
  std::vector<std::int64_t> out = ref;
  out[1] = big + 1;
  const Tolerance tol = defaults(DType::kInt64);
  const ParityRecord p = judge_output(OutputValues::of_int64(out), OutputValues::of_int64(ref), tol, std::nullopt);
  EXPECT_FALSE(parity_passed(p));
  EXPECT_EQ(p.mismatches, 1);
  EXPECT_EQ(p.worst_index, 1);
  EXPECT_EQ(p.max_abs_error, 1);
  EXPECT_EQ(p.worst_value_exact, big + 1);  // the doubles read 2^60 for both
  EXPECT_EQ(p.worst_reference_exact, big);
  EXPECT_TRUE(parity_passed(judge_output(OutputValues::of_int64(ref), OutputValues::of_int64(ref), tol, std::nullopt)));
  // The distance of int64's ends does not fit an int64: still a mismatch, of 2^64 - 1.
  out[1] = big;
  out[3] = std::numeric_limits<std::int64_t>::max();
  const ParityRecord far = compare_output_int64(out, ref, 0, 0);
  EXPECT_EQ(far.mismatches, 1);
  EXPECT_EQ(far.worst_index, 3);
  EXPECT_EQ(far.max_abs_error, 0x1p64);
  // A tolerance the problem gives its int64 output holds: an error of one within atol = 1.
  out[3] = ref[3] + 1;
  EXPECT_TRUE(compare_output_int64(out, ref, 1, 0).tolerance_passed);
  EXPECT_FALSE(compare_output_int64(out, ref, 0.5, 0).tolerance_passed);
}

TEST(Parity, ANanOrInfNeverPassesUnderAnyRule) {
  for (const char* rule : {"both", "tolerance", "module"}) {
    Tolerance tol = defaults(DType::kBFloat16);
    tol.rule = rule;
    tol.atol = tol.rtol = tol.module_atol = 1e9;  // everything finite would pass
    EXPECT_FALSE(parity_passed(judge({1.0, NAN}, {1.0, 1.0}, tol, 0.5))) << rule;
    EXPECT_FALSE(parity_passed(judge({1.0, INFINITY}, {1.0, 1.0}, tol, 0.5))) << rule;
  }
}

// A NaN or Inf on the reference's side matches nothing either: a finite output passed there (no
// error exceeds an allowance that is NaN or infinite). The determinism check of a non-deterministic
// problem compares a launch with the first launch's output, which may hold one.
TEST(Parity, ANonFiniteReferenceMatchesNoOutput) {
  for (const double bad : {static_cast<double>(NAN), static_cast<double>(INFINITY), -static_cast<double>(INFINITY)}) {
    const ParityRecord p = compare_output({1.0, 2.0, 3.0}, {1.0, bad, 3.0}, 1e-4, 1e-4);
    EXPECT_FALSE(p.tolerance_passed) << bad;
    EXPECT_EQ(p.mismatches, 1) << bad;
    EXPECT_EQ(p.worst_index, 1) << bad;
    EXPECT_EQ(p.max_abs_error, 0) << "a non-finite difference is no error to report as the largest";
  }
  EXPECT_FALSE(compare_output({NAN}, {NAN}, 1e-4, 1e-4).tolerance_passed);
}

// The worst element recorded is the one of the largest error where several are equally far beyond
// their allowance: every mismatch of an exact (integer) comparison is. It was the first mismatch,
// with max_abs_error at another element. A non-finite output is worse than any finite one.
TEST(Parity, TheWorstElementOfAnExactComparisonIsTheLargestError) {
  const ParityRecord ints = judge({1, 0, 40, -7}, {0, 0, 0, 0}, defaults(DType::kInt32), std::nullopt);
  EXPECT_EQ(ints.mismatches, 3);
  EXPECT_EQ(ints.max_abs_error, 40);
  EXPECT_EQ(ints.worst_index, 2);
  EXPECT_EQ(ints.worst_value, 40);
  // rtol alone against a reference of zeros: every error is infinitely far too.
  const ParityRecord zeros = compare_output({1e-3, 0.5, 1e-2}, {0, 0, 0}, 0, 1e-3);
  EXPECT_EQ(zeros.worst_index, 1);
  const ParityRecord nan = compare_output({5, NAN, 9}, {0, 0, 0}, 0, 0);
  EXPECT_EQ(nan.worst_index, 1);
  EXPECT_FALSE(nan.worst_value.has_value());
}

// kernel_max_abs_error <= k * module_max_abs_error + atol_k, just inside and just outside; the
// reference is large so that the elementwise rule (bf16 rtol 1.6e-2) passes both.
TEST(Parity, ModuleRuleJustInsideAndJustOutsideKTimesTheModulesError) {
  for (DType d : {DType::kBFloat16, DType::kFloat16}) {
    Tolerance tol = defaults(d);
    const double module = 0.01, bound = tol.module_k * module + tol.module_atol;
    const std::vector<double> ref = {100.0, 10.0};
    const ParityRecord in = judge({100.0 + bound * (1 - 1e-9), 10.0}, ref, tol, module);
    const ParityRecord out = judge({100.0 + bound * (1 + 1e-9), 10.0}, ref, tol, module);
    ASSERT_TRUE(in.module_passed.has_value());
    EXPECT_TRUE(*in.module_passed);
    EXPECT_TRUE(parity_passed(in)) << dtype_name(d);
    EXPECT_TRUE(out.tolerance_passed) << dtype_name(d);
    EXPECT_FALSE(*out.module_passed);
    EXPECT_FALSE(parity_passed(out)) << dtype_name(d);  // "both": each rule must hold
    EXPECT_EQ(out.module_max_abs_error, module);
    EXPECT_NE(parity_failure(out).find("module rule"), std::string::npos) << parity_failure(out);
    tol.rule = "tolerance";  // the module's error is recorded but does not decide
    const ParityRecord only_tolerance = judge({100.0 + bound * (1 + 1e-9), 10.0}, ref, tol, module);
    EXPECT_FALSE(*only_tolerance.module_passed);
    EXPECT_TRUE(parity_passed(only_tolerance));
    tol.rule = "module";  // outside the elementwise tolerance, within k x the module's error
    const ParityRecord only_module = judge({10.5, 1.0}, {10.0, 1.0}, tol, 0.3);
    EXPECT_FALSE(only_module.tolerance_passed);
    EXPECT_TRUE(parity_passed(only_module));
  }
}

TEST(Parity, TheModuleRuleIsNotAppliedToFloat32OrWithoutTheModulesOutput) {
  const ParityRecord f32 = judge({1.0}, {1.0}, defaults(DType::kFloat32), 0.01);
  EXPECT_FALSE(f32.module_passed.has_value());
  EXPECT_FALSE(f32.module_max_abs_error.has_value());
  EXPECT_EQ(module_error({}, {1.0}), std::nullopt);
  EXPECT_EQ(module_error({1.0, 2.5}, {1.0, 2.0}), 0.5);
  EXPECT_EQ(module_error({1.0, INFINITY}, {1.0, 2.0}), std::nullopt);
}

TEST(Parity, TheToleranceObjectPerDtypeModuleAndRule) {
  const TolerancePolicy p = parse_tolerance(Json::parse(R"({"atol": 2e-4, "rtol": 3e-4,
      "bfloat16": {"rtol": 2e-2}, "int32": {"atol": 1},
      "module": {"k": 3, "atol": 1e-3}, "rule": "module"})"),
                                            "p.json");
  EXPECT_EQ(p.of(DType::kFloat32).atol, 2e-4);
  EXPECT_EQ(p.of(DType::kFloat32).rtol, 3e-4);
  EXPECT_EQ(p.of(DType::kBFloat16).atol, 1e-5);  // its default where the file gives none
  EXPECT_EQ(p.of(DType::kBFloat16).rtol, 2e-2);
  EXPECT_EQ(p.of(DType::kFloat16).rtol, 1e-3);  // not float32's: each dtype its own
  EXPECT_EQ(p.of(DType::kInt32).atol, 1);
  EXPECT_EQ(p.of(DType::kBFloat16).module_k, 3);
  EXPECT_EQ(p.of(DType::kBFloat16).module_atol, 1e-3);
  EXPECT_EQ(p.of(DType::kBFloat16).rule, "module");
}

TEST(Parity, BadToleranceKeysAndValuesAreRefusedWithTheirPath) {
  const std::vector<std::pair<const char*, const char*>> bad = {
      {R"({"bfloat17": {"atol": 1}})", "p.json: unknown key 'tolerance.bfloat17'"},
      {R"({"bfloat16": {"atol": -1}})", "p.json: tolerance.bfloat16.atol must be a finite number >= 0"},
      {R"({"bfloat16": {"atl": 1}})", "p.json: unknown key 'tolerance.bfloat16.atl'"},
      {R"({"module": {"kk": 2}})", "p.json: unknown key 'tolerance.module.kk'"},
      {R"({"module": {"k": "2"}})", "p.json: tolerance.module.k must be a finite number >= 0"},
      {R"({"rule": "either"})", "p.json: tolerance.rule must be \"both\", \"tolerance\" or \"module\""},
      {R"({"atol": 1e-4, "float32": {"atol": 1e-3}})", "p.json: tolerance.float32 repeats tolerance.atol/rtol"},
      {R"({"rtol": null})", "p.json: tolerance.rtol must be a finite number >= 0"},
      {R"([1])", "p.json: tolerance must be a JSON object"},
  };
  for (const auto& [text, want] : bad) {
    try {
      (void)parse_tolerance(Json::parse(text), "p.json");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const ConfigError& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.rfind(want, 0), 0u) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  }
}

// A problem file's tolerance reaches Problem::tolerance of the output's dtype; a bad one is refused
// at load.
TEST(Parity, AProblemsToleranceIsItsOutputDtypes) {
  const auto dir = std::filesystem::temp_directory_path() / ("tune_parity_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "reference.py") << "def reference(shape, params, inputs):\n    return inputs['x']\n";
  Json j = Json::parse(R"({"problem": "tiny", "reference": {"python": "reference.py"}, "shape": {"dims": ["N"]},
    "tolerance": {"atol": 5e-4, "bfloat16": {"rtol": 3e-2}},
    "tensors": [{"name": "x", "role": "input", "shape": ["N"], "init": "normal"},
                {"name": "out", "role": "output", "shape": ["N"]}]})");
  std::ofstream(dir / "problem.json") << j.dump(1);
  const auto p = Problem::load(dir / "problem.json");
  EXPECT_EQ(p->tolerance(Shape({{"N", 4}})).atol, 5e-4);
  EXPECT_EQ(p->tolerance(DType::kBFloat16).rtol, 3e-2);
  j["tolerance"]["module"] = Json::parse(R"({"k": -1})");
  std::ofstream(dir / "problem.json") << j.dump(1);
  EXPECT_THROW((void)Problem::load(dir / "problem.json"), ConfigError);
  std::filesystem::remove_all(dir);
}

// A problem folder of one int64 output whose reference.py returns `body` (numpy, the input x).
std::unique_ptr<Problem> int64_problem(const std::filesystem::path& dir, const std::string& body) {
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "reference.py") << "import numpy as np\n\ndef reference(shape, params, inputs):\n    x = inputs['x']\n"
                                      << "    return " << body << "\n";
  std::ofstream(dir / "problem.json") << R"({"problem": "wide", "reference": {"python": "reference.py"},
    "shape": {"dims": ["N"]},
    "tensors": [{"name": "x", "role": "input", "shape": ["N"], "dtype": "int64", "init": {"kind": "integers", "low": 0, "high": 100}},
                {"name": "out", "role": "output", "shape": ["N"], "dtype": "int64"}]})";
  return Problem::load(dir / "problem.json");
}

// reference.py's int64 output reaches the comparison as its integers: 2^60 + x exactly, where its
// float64 copy reads 2^60 for every small x. A float reference past 2^53 no longer says which
// integer it means and is refused in one line naming reference.py.
TEST(Parity, AnInt64ReferenceReachesTheComparisonExactly) {
  const auto dir = std::filesystem::temp_directory_path() / ("tune_parity_int64_" + std::to_string(::getpid()));
  const Shape shape({{"N", 8}});
  auto p = int64_problem(dir, "x.astype(np.int64) + (1 << 60)");
  const ProblemData data = p->make_data(shape, 7, DataPurpose::kParity);
  const OutputValues ref = p->reference(shape, data, ReferenceBackend::kPython);
  ASSERT_EQ(ref.dtype(), DType::kInt64);
  ASSERT_EQ(ref.ints().size(), 8u);
  for (std::size_t i = 0; i < ref.size(); ++i) {
    EXPECT_EQ(ref.ints()[i], (std::int64_t{1} << 60) + static_cast<std::int64_t>(data.get("x").data[i])) << i;
    EXPECT_EQ(ref.values()[i], 0x1p60);
  }
  p = int64_problem(dir, "x + 2.0 ** 60");
  try {
    (void)p->reference(shape, data, ReferenceBackend::kPython);
    ADD_FAILURE() << "a float64 reference past 2^53 of an int64 output was taken";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("reference.py: the reference returned float64 values past 2^53 for the int64 output 'out'"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("np.int64"), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
  p = int64_problem(dir, "x * 3");  // small floats stay welcome: their integers are exact
  const OutputValues small = p->reference(shape, data, ReferenceBackend::kPython);
  ASSERT_EQ(small.ints().size(), 8u);
  for (std::size_t i = 0; i < small.size(); ++i)
    EXPECT_EQ(small.ints()[i], 3 * static_cast<std::int64_t>(data.get("x").data[i]));
  std::filesystem::remove_all(dir);
}

TEST(Parity, RecordsRoundTripTheNewFields) {
  RunRecord run = fixture_run();
  ParityRecord& p = *run.variants[0].parity;
  p.dtype = "bfloat16";
  p.rule = "both";
  p.tolerance_passed = true;
  p.module_max_abs_error = 0.0078125;
  p.module_k = 2.5;
  p.module_atol = 2e-5;
  p.module_passed = true;
  const std::string text = to_json(run).dump();
  const RunRecord back = run_from_json(Json::parse(text));
  const ParityRecord& q = *back.variants[0].parity;
  EXPECT_EQ(q.dtype, "bfloat16");
  EXPECT_EQ(q.module_max_abs_error, 0.0078125);
  EXPECT_EQ(q.module_k, 2.5);
  EXPECT_EQ(q.module_atol, 2e-5);
  EXPECT_EQ(q.module_passed, true);
  EXPECT_TRUE(q.tolerance_passed);
  EXPECT_EQ(to_json(back).dump(), text);
  EXPECT_FALSE(back.variants[1].parity->module_passed.has_value());  // null stays null
}

// The comparison is the output's dtype's, whatever the caller holds: OutputValues carries an int64
// output's integers with its doubles, so no caller compares them as doubles (the verify path did, and
// the record's worst element was the nearest doubles, 2^60 for both 2^60 + 1 and 2^60). An integer
// output's worst element is written as JSON integers and read back exactly (adversarial round 9).
TEST(Parity, AnIntegerOutputsWorstElementIsRecordedExactlyAndRoundTrips) {
  const std::int64_t big = std::int64_t{1} << 60;
  const Tolerance tol = defaults(DType::kInt64);
  // Bytes as the device gives them: the int64 integers, not doubles.
  std::vector<std::int64_t> out = {7, big + 1, std::numeric_limits<std::int64_t>::min()};
  std::vector<std::byte> bytes(out.size() * 8);
  std::memcpy(bytes.data(), out.data(), bytes.size());
  const OutputValues kernel = OutputValues::of_bytes(DType::kInt64, bytes);
  const OutputValues ref = OutputValues::of_int64({7, big, std::numeric_limits<std::int64_t>::min()});
  ASSERT_EQ(kernel.values()[1], ref.values()[1]) << "as doubles the two read alike";
  const ParityRecord p = judge_output(kernel, ref, tol, std::nullopt);
  EXPECT_FALSE(parity_passed(p));
  EXPECT_EQ(p.worst_value_exact, big + 1);
  EXPECT_EQ(p.worst_reference_exact, big);
  EXPECT_EQ(kernel.element(1), "1152921504606846977");
  // An int32 output's too; a float output's stay doubles alone.
  const ParityRecord i32 = judge({3, 2147483647}, {3, 2147483646}, defaults(DType::kInt32), std::nullopt);
  EXPECT_EQ(i32.worst_value_exact, 2147483647);
  EXPECT_FALSE(judge({1.5}, {1.0}, defaults(DType::kFloat32), std::nullopt).worst_value_exact.has_value());

  RunRecord run = fixture_run();
  ParityRecord& rec = *run.variants[1].parity;
  rec = p;
  rec.dtype = "int64";
  const Json j = to_json(run);
  const Json& written = j.at("variants")[1].at("parity");
  ASSERT_TRUE(written.at("worst_value").is_number_integer()) << written.dump();
  EXPECT_EQ(written.at("worst_value").get<std::int64_t>(), big + 1);
  EXPECT_EQ(written.at("worst_reference").get<std::int64_t>(), big);
  const RunRecord back = run_from_json(Json::parse(j.dump()));
  EXPECT_EQ(back.variants[1].parity->worst_value_exact, big + 1);
  EXPECT_EQ(back.variants[1].parity->worst_reference_exact, big);
  EXPECT_EQ(to_json(back).dump(), j.dump());
  // An older record's doubles are read as they are: no integer is made up from them.
  Json older = j;
  older["variants"][1]["parity"]["worst_value"] = 0x1p60;
  EXPECT_FALSE(run_from_json(older).variants[1].parity->worst_value_exact.has_value());
}

TEST(Parity, TheValidatorRefusesAPassedVariantWhoseModuleRuleFailed) {
  RunRecord run = fixture_run();
  ParityRecord& p = *run.variants[0].parity;
  p.dtype = "bfloat16";
  p.module_max_abs_error = 0.001;
  p.module_passed = false;
  try {
    (void)run_from_json(to_json(run));
    ADD_FAILURE() << "a passed variant whose module rule failed was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("variants[0].parity: the module rule failed"), std::string::npos) << e.what();
  }
  p.rule = "tolerance";  // the rule that decides is the elementwise one: accepted
  (void)run_from_json(to_json(run));
  p.rule = "module";  // module rule passed, elementwise not: accepted under rule "module"
  p.module_passed = true;
  p.mismatches = 3;
  (void)run_from_json(to_json(run));
  Json bad = to_json(run);
  bad["variants"][0]["parity"]["rule"] = "either";
  EXPECT_THROW((void)run_from_json(bad), InputError);
  bad = to_json(run);
  bad["variants"][0]["parity"]["dtype"] = "float128";
  EXPECT_THROW((void)run_from_json(bad), InputError);
}

}  // namespace
}  // namespace tune

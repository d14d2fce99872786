// Issue 35: a problem file's dtypes (tensor `dtype`, the `dtypes` variables), the inits per dtype
// (index, integers, bernoulli, constant; float inits rounded), range checks of edits per dtype, dtype
// variables in expressions (`T == bfloat16`, `T_bytes`) and in a launch's template arguments.
#include <gtest/gtest.h>

#include <unistd.h>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tune/errors.hpp"
#include "tune/problem.hpp"
#include "tune/space.hpp"

namespace tune {
namespace {

// A problem folder with `tensors` (the JSON list's text) and `extra` top-level keys.
std::filesystem::path write_problem(const std::string& tensors, const std::string& extra = "") {
  static int count = 0;
  const auto dir =
      std::filesystem::temp_directory_path() / ("tune_dtypes_" + std::to_string(::getpid()) + "_" + std::to_string(count++));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "reference.py") << "def reference(shape, params, inputs):\n    raise NotImplementedError\n";
  std::ofstream(dir / "problem.json") << R"({"problem": "dt", "reference": {"python": "reference.py"},
  "shape": {"dims": ["M", "N"], "defaults": {"M": 8, "N": 16}},
  "dtypes": {"T": {"values": ["float32", "bfloat16"], "default": "float32"}},
  "tensors": )" << tensors << (extra.empty() ? "" : ",\n  " + extra)
                                      << "\n}\n";
  return dir / "problem.json";
}

const char* kTensors = R"([
    {"name": "x",    "role": "input",  "shape": ["M", "N"], "dtype": "T", "init": "normal"},
    {"name": "idx",  "role": "input",  "shape": ["M"], "dtype": "int64", "init": {"kind": "index", "high": "N"}},
    {"name": "k",    "role": "input",  "shape": ["M"], "dtype": "int32", "init": {"kind": "integers", "low": -5, "high": 5}},
    {"name": "mask", "role": "input",  "shape": ["M"], "dtype": "bool", "init": {"kind": "bernoulli", "p": 0.5}},
    {"name": "c",    "role": "input",  "shape": ["M"], "dtype": "uint8", "init": {"kind": "constant", "value": 7}},
    {"name": "out",  "role": "output", "shape": ["M"], "dtype": "T"}])";

Shape shape(DType t, bool with_dtype = true) {
  Shape s({{"M", 8}, {"N", 16}});
  if (with_dtype) s.set_dtype("T", t);
  return s;
}

void expect_refused(const std::string& tensors, const std::string& extra, const std::string& part) {
  const auto file = write_problem(tensors, extra);
  try {
    (void)Problem::load(file);
    ADD_FAILURE() << "accepted: " << tensors << extra;
  } catch (const ConfigError& e) {
    const std::string got = e.what();
    EXPECT_NE(got.find(part), std::string::npos) << got;
    EXPECT_EQ(got.find('\n'), std::string::npos) << got;
  }
}

TEST(ProblemDtypes, EveryDtypeAndInitLoadsAndDraws) {
  const auto p = Problem::load(write_problem(kTensors));
  ASSERT_EQ(p->dtype_variables().size(), 1u);
  EXPECT_EQ(p->dtype_variables()[0].name, "T");
  EXPECT_EQ(p->dtype_variables()[0].default_value, DType::kFloat32);
  const Shape bf = shape(DType::kBFloat16);
  p->check_shape(bf);
  const auto inputs = p->input_specs(bf);
  ASSERT_EQ(inputs.size(), 5u);
  EXPECT_EQ(inputs[0].dtype, DType::kBFloat16);
  EXPECT_EQ(inputs[1].dtype, DType::kInt64);
  EXPECT_EQ(inputs[3].dtype, DType::kBool);
  EXPECT_EQ(p->output_spec(bf).dtype, DType::kBFloat16);
  EXPECT_EQ(p->output_spec(shape(DType::kFloat32, false)).dtype, DType::kFloat32);  // the default
  const ProblemData d = p->make_data(bf, 1, DataPurpose::kTiming);
  for (double v : d.find("x")->data) EXPECT_EQ(v, round_to(DType::kBFloat16, v));
  for (double v : d.find("idx")->data) EXPECT_TRUE(v >= 0 && v < 16 && v == std::floor(v)) << v;
  for (double v : d.find("k")->data) EXPECT_TRUE(v >= -5 && v < 5 && v == std::floor(v)) << v;
  for (double v : d.find("mask")->data) EXPECT_TRUE(v == 0 || v == 1) << v;
  for (double v : d.find("c")->data) EXPECT_EQ(v, 7);
}

// Float32 data are those of a problem without dtypes (the same generator in the same order).
TEST(ProblemDtypes, Float32DataUnchangedByTheDtypeKeys) {
  const auto typed = Problem::load(write_problem(R"([
    {"name": "x", "role": "input", "shape": ["M", "N"], "dtype": "T", "init": "normal"},
    {"name": "out", "role": "output", "shape": ["M"], "dtype": "T"}])"));
  const auto plain = Problem::load(write_problem(R"([
    {"name": "x", "role": "input", "shape": ["M", "N"], "init": "normal"},
    {"name": "out", "role": "output", "shape": ["M"]}])"));
  EXPECT_EQ(typed->make_data(shape(DType::kFloat32), 3, DataPurpose::kTiming).find("x")->data,
            plain->make_data(shape(DType::kFloat32, false), 3, DataPurpose::kTiming).find("x")->data);
}

TEST(ProblemDtypes, BadDtypesRefusedInOneLine) {
  expect_refused(R"([{"name": "x", "role": "input", "shape": ["M"], "dtype": "float", "init": "normal"},
    {"name": "out", "role": "output", "shape": ["M"]}])",
                 "", "tensors[0].dtype 'float' of tensor 'x' is not a dtype (float16, bfloat16");
  expect_refused(
      R"([{"name": "i", "role": "input", "shape": ["M"], "dtype": "int64", "init": {"kind": "index", "high": "7"}},
    {"name": "out", "role": "output", "shape": ["M"]}])",
      "", "names no dimension");
  expect_refused(R"([{"name": "i", "role": "input", "shape": ["M"], "dtype": "int64", "init": "normal"},
    {"name": "out", "role": "output", "shape": ["M"]}])",
                 "", "tensor 'i' is int64, an integer type, but its init draws real numbers");
  expect_refused(
      R"([{"name": "x", "role": "input", "shape": ["M"], "dtype": "T", "init": {"kind": "integers", "low": 0, "high": 3}},
    {"name": "out", "role": "output", "shape": ["M"]}])",
      "", "tensor 'x' is float32, but an integers init draws integers");
  expect_refused(
      R"([{"name": "b", "role": "input", "shape": ["M"], "dtype": "int8", "init": {"kind": "integers", "low": 0, "high": 300}},
    {"name": "out", "role": "output", "shape": ["M"]}])",
      "", "do not fit int8");
  const char* ok =
      R"([{"name": "x", "role": "input", "shape": ["M"], "dtype": "int32", "init": {"kind": "integers", "low": 0, "high": 3}},
    {"name": "out", "role": "output", "shape": ["M"]}])";
  expect_refused(ok, R"("edits": [{"tensor": "x", "index": ["0"], "value": "0.5"}])", "tensor 'x' (int32) cannot hold");
  expect_refused(ok, R"("edits": [{"tensor": "x", "index": ["0"], "value": "5e9"}])", "tensor 'x' (int32) cannot hold");
}

// An init the tensor's dtype does not take is refused with exactly the inits that dtype takes: bool
// is no integer type and takes bernoulli or constant alone; an integer type lists each init once.
TEST(ProblemDtypes, AnInitTheDtypeDoesNotTakeListsTheInitsItTakes) {
  const auto tensor = [](const std::string& dtype, const std::string& init) {
    return R"([{"name": "m", "role": "input", "shape": ["M"], "dtype": ")" + dtype + R"(", "init": )" + init +
           R"(}, {"name": "out", "role": "output", "shape": ["M"]}])";
  };
  const std::string for_bool = "a bool tensor takes bernoulli or constant";
  expect_refused(tensor("bool", R"("normal")"), "", "tensor 'm' is bool, but its init draws real numbers; " + for_bool);
  expect_refused(tensor("bool", R"({"kind": "index", "high": "M"})"), "",
                 "tensor 'm' is bool, but an index init draws integers; " + for_bool);
  expect_refused(tensor("bool", R"({"kind": "integers", "low": 0, "high": 2})"), "",
                 "tensor 'm' is bool, but an integers init draws integers; " + for_bool);
  expect_refused(tensor("int8", R"("normal")"), "",
                 "tensor 'm' is int8, an integer type, but its init draws real numbers; an int8 tensor takes index, "
                 "integers, constant or bernoulli");
  expect_refused(tensor("float16", R"({"kind": "index", "high": "M"})"), "",
                 "tensor 'm' is float16, but an index init draws integers; a float16 tensor takes normal, uniform, "
                 "linear, layernorm_weight, layernorm_bias, constant or bernoulli");
}

TEST(ProblemDtypes, DtypeVariableClashesRefused) {
  const char* t =
      R"([{"name": "x", "role": "input", "shape": ["M"], "init": "normal"}, {"name": "out", "role": "output", "shape": ["M"]}])";
  auto with = [&](const std::string& dtypes) {
    const auto file = write_problem(t);
    std::string text;
    {
      std::ifstream in(file);
      text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    const auto at = text.find("\"dtypes\"");
    const auto end = text.find('\n', at);
    text.replace(at, end - at, dtypes);
    std::ofstream(file) << text;
    try {
      (void)Problem::load(file);
      return std::string("accepted");
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
  };
  EXPECT_NE(with(R"("dtypes": {"M": {"values": ["float32"]}},)").find("already a dimension"), std::string::npos);
  EXPECT_NE(with(R"("dtypes": {"N_bytes": {"values": ["float32"]}, "N": {"values": ["float32"]}},)").find("dtypes.N"),
            std::string::npos);
  EXPECT_NE(with(R"("dtypes": {"int": {"values": ["float32"]}},)").find("C++ keyword"), std::string::npos);
  EXPECT_NE(with(R"("dtypes": {"T": {"values": ["float33"]}},)").find("\"float33\" is not a dtype (one of float16"),
            std::string::npos);
  EXPECT_NE(with(R"("dtypes": {"T": {"values": ["float32"], "default": "bfloat16"}},)").find("is not one of its values"),
            std::string::npos);
}

TEST(ProblemDtypes, ShapeChecksTheDtypeVariable) {
  const auto p = Problem::load(write_problem(kTensors));
  Shape s = shape(DType::kInt8);
  try {
    p->check_shape(s);
    ADD_FAILURE() << "accepted int8";
  } catch (const ShapeError& e) {
    EXPECT_STREQ(e.what(), "--T int8 is not a dtype problem dt takes (--T: float32, bfloat16)");
  }
  Shape missing = shape(DType::kFloat32, false);
  p->add_dtype_defaults(missing);
  EXPECT_EQ(missing.dtype("T"), DType::kFloat32);
}

TEST(ProblemDtypes, ExpressionsSeeDtypeCodesAndBytes) {
  const auto p = Problem::load(write_problem(kTensors, R"("work": {"flop": "T == bfloat16", "bytes": "T_bytes * M * N"})"));
  EXPECT_EQ(p->counts(shape(DType::kBFloat16)).flop, 1);
  EXPECT_EQ(p->counts(shape(DType::kBFloat16)).bytes, 2 * 8 * 16);
  EXPECT_EQ(p->counts(shape(DType::kFloat32)).flop, 0);
  EXPECT_EQ(p->counts(shape(DType::kFloat32)).bytes, 4 * 8 * 16);
}

TEST(ProblemDtypes, TemplateArgumentNamesTheCudaType) {
  const nlohmann::ordered_json j = nlohmann::ordered_json::parse(R"J({
    "schema_version": 1, "problem": "dt", "template": "k.cuh", "shape": {"dims": ["M"]},
    "dtypes": {"T": {"values": ["float32", "bfloat16"], "default": "float32"}},
    "parameters": [{"name": "BM", "values": [32, 64]}],
    "constraints": ["T != bfloat16 || BM == 64"],
    "launches": [{"kernel": "k", "template_args": ["T", "BM"], "grid": ["cdiv(M, BM)"], "block": ["BM"], "args": ["out"]}],
    "baseline": {"BM": 64}})J");
  const Space space = Space::parse(j, "test", std::nullopt, {});
  Shape bf({{"M", 128}});
  bf.set_dtype("T", DType::kBFloat16);
  const DeviceLimits limits;
  const Lowered lowered = space.lower(space.baseline(), bf, limits);
  ASSERT_EQ(lowered.launches.size(), 1u);
  EXPECT_EQ(lowered.launches[0].name_expression, "k<__nv_bfloat16,64>");
  const Lowered f32 = space.lower(space.baseline(), Shape({{"M", 128}}), limits);
  EXPECT_EQ(f32.launches[0].name_expression, "k<float,64>");
  EXPECT_EQ(space.enumerate(bf, limits, 100).configs.size(), 1u);  // BM 32 refused for bfloat16
}

}  // namespace
}  // namespace tune

namespace tune {
namespace {

// A record without a dtype variable (it predates it) is of the dtype its tensors ran in
// (context.tensors), not the variable's default: float32 timings were relabelled bfloat16 by a
// folder whose new variable defaults to bfloat16 (adversarial round 3).
TEST(ProblemDtypes, ARecordThatPredatesADtypeVariableKeepsTheDtypeItRan) {
  const auto p = Problem::load(write_problem(kTensors));
  Shape plain({{"M", 8}, {"N", 16}});
  p->add_dtype_defaults(plain, {{"x", "bfloat16"}, {"out", "bfloat16"}, {"idx", "int64"}});
  ASSERT_TRUE(plain.has_dtype("T"));
  EXPECT_EQ(plain.dtype("T"), DType::kBFloat16) << "the dtype the record's tensors ran in";
  Shape none({{"M", 8}, {"N", 16}});
  p->add_dtype_defaults(none, {});
  EXPECT_EQ(none.dtype("T"), DType::kFloat32) << "no tensors recorded: the default";
  Shape other({{"M", 8}, {"N", 16}});
  p->add_dtype_defaults(other, {{"x", "float16"}});
  EXPECT_EQ(other.dtype("T"), DType::kFloat32) << "a dtype the variable does not take: the default";
}

}  // namespace
}  // namespace tune

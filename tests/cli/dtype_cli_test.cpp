// Issue 35 on the command line: a dtype variable is a shape option (--T bfloat16), a comma list
// sweeps it (one results file per dtype, tagged _bfloat16), a bad value is one line and exit 2, and a
// template that includes <cuda_bf16.h> compiles through NVRTC (compile-only, no GPU needed).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/cli_run.hpp"
#include "support/fixture_problem.hpp"
#include "tune/io.hpp"

namespace {

const std::string kProblem = std::string(TUNE_FIXTURES) + "/dtype_problem";

TEST(DtypeCli, ACommaListSweepsTheDtypeOneFilePerDtype) {
  const std::string out = out_dir("dtype_sweep");
  const Result r = run("--problem " + kProblem + " --M 64 --T float32,bfloat16 --compile-only --out " + out +
                       " --cache-dir " + out + "/cache");
  ASSERT_EQ(r.code, 0) << r.output;
  const auto dir = std::filesystem::path(out) / "compile-only-sm_90" / "dtype_problem";
  ASSERT_TRUE(std::filesystem::exists(dir / "M64.json")) << r.output;  // float32 keeps the plain tag
  ASSERT_TRUE(std::filesystem::exists(dir / "M64_bfloat16.json")) << r.output;
  const auto j = nlohmann::ordered_json::parse(std::ifstream(dir / "M64_bfloat16.json"));
  EXPECT_EQ(j.at("shape").at("T"), "bfloat16");
  EXPECT_EQ(j.at("schema_minor_version"), tune::kResultSchemaMinorVersion);
  const auto& tensors = j.at("context").at("tensors");
  ASSERT_EQ(tensors.size(), 3u) << tensors.dump();
  EXPECT_EQ(tensors[0],
            nlohmann::ordered_json::parse(R"({"name": "x", "role": "input", "dtype": "bfloat16", "shape": [64]})"));
  EXPECT_EQ(tensors[1].at("dtype"), "int64");
  EXPECT_EQ(tensors[2].at("role"), "output");
  EXPECT_EQ(tensors[2].at("dtype"), "bfloat16");
  // tune's own reader (which validates first) takes it back.
  const tune::RunRecord back = tune::read_result(dir / "M64_bfloat16.json");
  ASSERT_EQ(back.context.tensors.size(), 3u);
  EXPECT_EQ(back.context.tensors[1].dtype, "int64");
  EXPECT_EQ(back.shape.dtype("T"), tune::DType::kBFloat16);
  for (const auto& v : j.at("variants")) EXPECT_EQ(v.at("status"), "compiled") << v.dump();
}

// A shape's dtype variables are in the problem's order whichever the command line gave first: one
// shape, one results file (adversarial round 4: `--U float16` and `--U float16 --V float32`, V's
// default, wrote two files of one shape, which tune header then refused as two problem definitions).
// A kernel that takes a tensor of dtype T as float* (the parameter left at float32 when T was added)
// compiles in every dtype, and on a GPU every bfloat16 variant would fail parity with nothing saying
// why: the run says which parameter, once, as soon as a variant compiles (adversarial round 6).
TEST(DtypeCli, AKernelParameterOfAnotherFloatingTypeThanItsTensorIsSaid) {
  namespace fs = std::filesystem;
  const fs::path out = out_dir("dtype_parameter_type");
  const fs::path problem = out / "affine_typed";
  tune::test::copy_fixture_problem("affine_typed", problem, [](nlohmann::ordered_json&) {});
  std::string kernel;
  {
    std::ifstream in(problem / "kernel.cuh");
    kernel.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  const std::string typed = "affine_kernel(const T* __restrict__ x";
  ASSERT_NE(kernel.find(typed), std::string::npos);
  kernel.replace(kernel.find(typed), typed.size(), "affine_kernel(const float* __restrict__ x");
  std::ofstream(problem / "kernel.cuh") << kernel;
  const Result r = run("--problem " + problem.string() + " --R 8 --T float32,bfloat16 --budget 2 --compile-only --out " +
                       out.string() + "/r --cache-dir " + out.string() + "/cache");
  ASSERT_EQ(r.code, 0) << r.output;
  const std::string note =
      "note: affine_kernel parameter 1 ('x'): a float const* parameter reads a bfloat16 tensor as float32 numbers";
  const auto at = r.output.find(note);
  ASSERT_NE(at, std::string::npos) << r.output;
  EXPECT_EQ(r.output.find(note, at + 1), std::string::npos) << "said once\n" << r.output;
  EXPECT_EQ(r.output.find("parameter 4"), std::string::npos) << "out is T* in every dtype\n" << r.output;
  // The fixture as it is says nothing.
  const Result clean = run("--problem " + (fs::path(TUNE_FIXTURES) / "problems/affine_typed").string() +
                           " --R 8 --T float32,bfloat16 --budget 2 --compile-only --out " + out.string() +
                           "/c --cache-dir " + out.string() + "/cache");
  ASSERT_EQ(clean.code, 0) << clean.output;
  EXPECT_EQ(clean.output.find("note: affine_kernel parameter"), std::string::npos) << clean.output;
}

TEST(DtypeCli, ADtypeGivenOrDefaultedNamesOneFileInTheProblemsOrder) {
  namespace fs = std::filesystem;
  const fs::path out = out_dir("dtype_order");
  const fs::path problem = out / "scatter_two";
  tune::test::copy_fixture_problem("scatter_given", problem, [](nlohmann::ordered_json& json) {
    json["problem"] = "scatter_two";
    json["dtypes"] = nlohmann::ordered_json::parse(
        R"({"V": {"values": ["float32"], "default": "float32"}, "U": {"values": ["float32", "float16"], "default": "float32"}})");
    for (auto& t : json["tensors"])
      if (t["name"] == "x") t["dtype"] = "V";
  });
  for (const std::string extra : {" --U float16", " --U float16 --V float32"}) {
    const Result r = run("--problem " + problem.string() + " --R 8" + extra + " --compile-only --out " + out.string() +
                         "/r --cache-dir " + out.string() + "/cache");
    ASSERT_EQ(r.code, 0) << extra << "\n" << r.output;
  }
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(out / "r" / "compile-only-sm_90" / "scatter_two"))
    if (e.path().extension() == ".json") files.push_back(e.path().filename().string());
  EXPECT_EQ(files, std::vector<std::string>{"R8_N8_L32_Vfloat32_Ufloat16.json"});
}

// A results file whose dtype variable holds a dtype the problem does not take is refused by tune's
// reader, naming the field (it read as valid, and tune header then blamed the problem file).
TEST(DtypeCli, ARecordOfADtypeTheVariableDoesNotTakeIsRefusedNamingTheField) {
  const std::string out = out_dir("dtype_record_float64");
  ASSERT_EQ(run("--problem " + kProblem + " --M 64 --T bfloat16 --compile-only --out " + out + " --cache-dir " + out +
                "/cache")
                .code,
            0);
  const auto file = std::filesystem::path(out) / "compile-only-sm_90" / "dtype_problem" / "M64_bfloat16.json";
  auto j = nlohmann::ordered_json::parse(std::ifstream(file));
  j["shape"]["T"] = "float64";
  std::ofstream(file) << j.dump();
  const Result r = run("results " + file.string());
  EXPECT_EQ(r.code, 2) << r.output;
  expect_error_output(r,
                      file.string() + ": shape.T: float64 is not a dtype problem dtype_problem takes (float32, bfloat16)");
}

// A reference value the output's dtype cannot hold (an int32 output's 2.5 or 3e9, a bool's 2, a
// float16's 70000) is refused in one line naming it, fake runs too: no kernel storing that dtype
// could match it, and a real run would time every variant to call each one incorrect (adversarial
// round 6). A value the dtype holds (a bool array, int32 integers, float16's 65504) passes.
TEST(DtypeCli, AReferenceValueTheOutputDtypeCannotHoldIsRefusedInOneLine) {
  namespace fs = std::filesystem;
  const fs::path out = out_dir("dtype_unholdable");
  const fs::path problem = out / "scatter_given";
  tune::test::copy_fixture_problem("scatter_given", problem, [](nlohmann::ordered_json& json) {
    json["dtypes"]["U"]["values"] = nlohmann::ordered_json::parse(R"(["float32", "float16", "int32", "bool"])");
  });
  const struct {
    std::string dtype, value, needle;
  } cases[] = {
      {"int32", "2.5",
       "is 2.5 at element 0 for shape R=8 N=8 L=32 U=int32, which its dtype int32 cannot hold: not an "
       "integer"},
      {"int32", "3e9",
       "is 3000000000 at element 0 for shape R=8 N=8 L=32 U=int32, which its dtype int32 cannot hold: "
       "beyond int32's range [-2147483648, 2147483647]; wrap or clamp it"},
      {"bool", "2",
       "is 2 at element 0 for shape R=8 N=8 L=32 U=bool, which its dtype bool cannot hold: a bool output "
       "holds 0 or 1 alone"},
      {"float16", "70000",
       "is 70000 at element 0 for shape R=8 N=8 L=32 U=float16, which its dtype float16 cannot "
       "hold: beyond float16's largest value 65504"},
      {"int32", "7", ""},
      {"bool", "True", ""},
      {"float16", "65504", ""},
  };
  for (const auto& c : cases) {
    std::ofstream(problem / "reference.py") << "import numpy as np\n\ndef reference(shape, params, inputs):\n"
                                               "    return np.full((shape['N'], shape['L']), "
                                            << c.value << ")\n";
    const Result r = run_with("TUNE_WORKER_FAKE=1", "--problem " + problem.string() + " --R 8 --U " + c.dtype + " --out " +
                                                        out.string() + "/r --cache-dir " + out.string() + "/cache");
    SCOPED_TRACE(c.dtype + " " + c.value);
    if (c.needle.empty()) {
      EXPECT_EQ(r.code, 0) << r.output;
      continue;
    }
    EXPECT_EQ(r.code, 2) << r.output;
    expect_error_output(r, c.needle);
  }
}

TEST(DtypeCli, TheDefaultDtypeIsUsedWithoutTheFlag) {
  const std::string out = out_dir("dtype_default");
  const Result r = run("--problem " + kProblem + " --M 64 --compile-only --out " + out + " --cache-dir " + out + "/cache");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(out) / "compile-only-sm_90" / "dtype_problem" / "M64.json"))
      << r.output;
}

TEST(DtypeCli, ABadDtypeIsOneLineNamingTheChoices) {
  const Result r = run("--problem " + kProblem + " --M 64 --T int8 --compile-only --out " + out_dir("dtype_bad"));
  EXPECT_EQ(r.code, 2) << r.output;
  expect_error_output(r, "--T int8 is not a dtype problem dtype_problem takes (--T: float32, bfloat16)");
  const Result named = run("--problem " + kProblem + " --M 64 --T half --compile-only --out " + out_dir("dtype_bad"));
  EXPECT_EQ(named.code, 2) << named.output;
  expect_error_output(named, "'half' is not an integer nor a dtype (float16, bfloat16");
  const Result dim = run("--problem " + kProblem + " --M bfloat16 --compile-only --out " + out_dir("dtype_bad"));
  EXPECT_EQ(dim.code, 2) << dim.output;
  expect_error_output(dim, "--M bfloat16: a dimension is a positive integer");
  // An integer that travels as a dtype's code is said as written (adversarial round 6: "--M float32").
  const Result code =
      run("--problem " + kProblem + " --M -9223372036854775806 --compile-only --out " + out_dir("dtype_bad"));
  EXPECT_EQ(code.code, 2) << code.output;
  expect_error_output(code, "--M must be a positive integer, got -9223372036854775806");
}

TEST(DtypeCli, ListShowsTheDtypeFlag) {
  const Result r = run("list --problem-path " + std::string(TUNE_FIXTURES));
  EXPECT_NE(r.output.find("--T float32 (float32|bfloat16)"), std::string::npos) << r.output;
}

}  // namespace

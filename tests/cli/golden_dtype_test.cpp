// Issue 35, the golden round trip per dtype: scripts/make_goldens.py draws a folder's tensors in each
// dtype as tune does and writes the dtype per tensor and the dtype variable in "shape"; `tune verify`
// (the CPU reference, no GPU needed) takes what it wrote, and refuses, in one line with exit 2, a
// value its tensor's dtype cannot hold, a wrong dtype name, or a golden whose dtype is not the problem's.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/cli_run.hpp"
#include "tune/dtype.hpp"
#include "tune/problem.hpp"

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

std::string python() {
  const char* p = std::getenv("TUNE_PYTHON");
  return p && *p ? p : "python3";
}

Json read_json(const fs::path& file) { return Json::parse(std::ifstream(file)); }

void write_json(const fs::path& file, const Json& j) {
  fs::create_directories(file.parent_path());
  std::ofstream(file) << j.dump();
}

// A copy of tests/fixtures/dtype_problem (x in T, idx int64 index into M, out = x[idx]) whose T may
// also be float16, with a uniform int8 tensor `k` (integers in [-5, 5)) and a bool `mask`.
fs::path typed_folder(const std::string& name) {
  const fs::path dir = fs::path(out_dir("golden_dtype_" + name)) / "dtype_problem";
  fs::create_directories(dir);
  for (const char* f : {"problem.json", "reference.py", "k.cuh"})
    fs::copy_file(fs::path(TUNE_FIXTURES) / "dtype_problem" / f, dir / f);
  Json j = read_json(dir / "problem.json");
  j["dtypes"]["T"]["values"] = Json::array({"float32", "bfloat16", "float16"});
  auto& tensors = j["tensors"];
  tensors.insert(tensors.begin() + 2, Json::parse(R"({"name": "k", "role": "input", "shape": ["M"], "dtype": "int8",
                                                      "init": {"kind": "integers", "low": -5, "high": 5}})"));
  tensors.insert(tensors.begin() + 3, Json::parse(R"({"name": "mask", "role": "input", "shape": ["M"], "dtype": "bool",
                                                      "init": {"kind": "bernoulli", "p": 0.5}})"));
  j["edits"] =
      Json::parse(R"([{"tensor": "x", "index": ["1"], "value": "0.1"}, {"tensor": "k", "index": ["0"], "value": "-3"}])");
  write_json(dir / "problem.json", j);
  return dir;
}

Result make_golden(const fs::path& dir, const std::string& shape, const fs::path& out, const std::string& more = "") {
  return run_command(python() + " " + TUNE_REPO_DIR + "/scripts/make_goldens.py --problem " + dir.string() + " --shape " +
                     shape + " --backend numpy " + more + " -o " + out.string());
}

Result verify(const fs::path& golden, const std::string& name) {
  return run_with("CUDA_VISIBLE_DEVICES=",
                  "verify " + golden.string() + " --results " + out_dir("golden_dtype_res_" + name));
}

TEST(GoldenDtype, MakeGoldensWritesEachDtypeAndTuneVerifiesIt) {
  const fs::path dir = typed_folder("round_trip");
  for (const std::string t : {"float32", "bfloat16", "float16"}) {
    const fs::path golden = dir / "golden" / ("M32_" + t + ".json");
    const Result made = make_golden(dir, "M=32,T=" + t, golden);
    ASSERT_EQ(made.code, 0) << made.output;
    const Json g = read_json(golden);
    EXPECT_EQ(g.at("shape"), Json::parse(R"({"M": 32, "T": ")" + t + R"("})"));
    const Json& x = g.at("inputs").at("x");
    EXPECT_EQ(x.at("dtype"), t);
    const tune::DType dt = *tune::parse_dtype(t);
    bool rounded_away_from_float32 = false;
    for (const Json& v : x.at("data")) {
      EXPECT_TRUE(tune::representable(dt, v.get<double>())) << t << " " << v.dump();
      rounded_away_from_float32 |= !tune::representable(tune::DType::kFloat16, v.get<double>()) &&
                                   !tune::representable(tune::DType::kBFloat16, v.get<double>());
    }
    EXPECT_EQ(rounded_away_from_float32, t == "float32") << t << ": float32 draws hold more bits than 16-bit dtypes";
    EXPECT_EQ(g.at("inputs").at("idx").at("dtype"), "int64");
    for (const Json& v : g.at("inputs").at("idx").at("data")) {
      ASSERT_TRUE(v.is_number_integer()) << v.dump();
      EXPECT_TRUE(v.get<int>() >= 0 && v.get<int>() < 32) << v.dump();
    }
    for (const Json& v : g.at("inputs").at("k").at("data")) EXPECT_TRUE(v.get<int>() >= -5 && v.get<int>() < 5) << v.dump();
    for (const Json& v : g.at("inputs").at("mask").at("data")) EXPECT_TRUE(v == 0 || v == 1) << v.dump();
    const Result v = verify(golden, t);
    EXPECT_EQ(v.code, 0) << v.output;
    EXPECT_NE(v.output.find("verify: all checks passed"), std::string::npos) << v.output;
  }
  // Without T the variable's default (float32), written in the golden's shape.
  const Result made = make_golden(dir, "M=8", dir / "golden" / "M8.json");
  ASSERT_EQ(made.code, 0) << made.output;
  EXPECT_EQ(read_json(dir / "golden" / "M8.json").at("shape").at("T"), "float32");
  EXPECT_EQ(make_golden(dir, "M=8,T=float64", dir / "golden" / "bad.json").code, 2);
}

// Each planted defect: one line naming the golden's path and what is wrong, exit 2.
TEST(GoldenDtype, AValueOrDtypeTheProblemDoesNotHoldIsRefusedInOneLine) {
  const fs::path dir = typed_folder("planted");
  const fs::path good = dir / "golden" / "good.json";
  ASSERT_EQ(make_golden(dir, "M=16,T=bfloat16", good).code, 0);
  const Json g = read_json(good);
  const auto plant = [&](const std::string& name, const auto& edit, const std::string& needle) {
    Json bad = g;
    edit(bad);
    const fs::path file = dir / "golden" / (name + ".json");
    write_json(file, bad);
    const Result r = verify(file, name);
    EXPECT_EQ(r.code, 2) << name << "\n" << r.output;
    expect_error_output(r, file.string() + ": " + needle);
  };
  plant(
      "not_bf16", [](Json& b) { b["inputs"]["x"]["data"][3] = 0.1; },
      "inputs.x.data[3]: 0.1 is not exactly a bfloat16 value (it would become 0.10009765625)");
  plant(
      "dtype_name", [](Json& b) { b["inputs"]["x"]["dtype"] = "bf16"; }, "inputs.x.dtype \"bf16\" is not a dtype (float16,");
  plant(
      "half_index", [](Json& b) { b["inputs"]["idx"]["data"][2] = 0.5; },
      "inputs.idx.data[2]: 0.5 is not exactly a int64 value");
  plant(
      "int8_range", [](Json& b) { b["inputs"]["k"]["data"][0] = 300; }, "inputs.k.data[0]: 300 is not exactly a int8 value");
  // An int64 past 2^53 reads as the double of another integer (adversarial round 6: 2^53 + 1 was
  // verified as 2^53, the data the kernel got unlike the golden's).
  plant(
      "int64_2p53", [](Json& b) { b["inputs"]["idx"]["data"][2] = 9007199254740993LL; },
      "inputs.idx.data[2]: 9007199254740993 is not exactly a int64 value (it would become 9007199254740992)");
  plant(
      "other_dtype", [](Json& b) { b["inputs"]["x"]["dtype"] = "float16"; },
      "inputs.x is float16, the problem's tensor is bfloat16 at this shape");
  plant(
      "older", [](Json& b) { b["inputs"]["x"].erase("dtype"); },
      "inputs.x is float32 (no 'dtype': float32), the problem's tensor is bfloat16 at this shape");
  plant(
      "shape_dtype", [](Json& b) { b["shape"]["T"] = "bfloat17"; }, "shape.T: \"bfloat17\" is not a dtype");
  plant(
      "not_a_value", [](Json& b) { b["shape"]["T"] = "float64"; },
      "--T float64 is not a dtype problem dtype_problem takes (--T: float32, bfloat16, float16)");
  // The script itself: a dimension given twice (adversarial round 4: the last one kept, silently).
  const Result twice = make_golden(dir, "M=16,M=32", dir / "golden" / "twice.json");
  EXPECT_EQ(twice.code, 2) << twice.output;
  EXPECT_NE(twice.output.find("--shape: M is given twice (16 and 32); give each once"), std::string::npos) << twice.output;
}

// A folder whose output dtype O is an integer or bool: out = x + 2^60 (int64, past 2^53), x + 2147482000
// (int32, near its top), x % 256 (uint8), x odd (bool, numpy's True/False).
fs::path integer_output_folder(const std::string& name) {
  const fs::path dir = fs::path(out_dir("golden_int_" + name)) / "ints";
  fs::create_directories(dir);
  write_json(dir / "problem.json", Json::parse(R"({"schema_version": 1, "problem": "ints", "template": "k.cuh",
    "reference": {"python": "reference.py"}, "shape": {"dims": ["M"], "defaults": {"M": 8}},
    "dtypes": {"O": {"values": ["int64", "int32", "uint8", "bool"], "default": "int64"}},
    "tensors": [{"name": "x", "role": "input", "shape": ["M"], "dtype": "int64",
                 "init": {"kind": "integers", "low": 0, "high": 1000}},
                {"name": "out", "role": "output", "shape": ["M"], "dtype": "O"}],
    "parameters": [{"name": "BM", "values": [32]}],
    "launches": [{"kernel": "k", "template_args": ["O", "BM"], "grid": ["1"], "block": ["BM"], "args": ["x", "out"]}],
    "baseline": {"BM": 32}})"));
  std::ofstream(dir / "k.cuh") << "template <typename O, int BM> __global__ void k(const long long* x, O* out) {}\n";
  std::ofstream(dir / "reference.py")
      << "import numpy as np\n\n\ndef reference(shape, params, inputs):\n    x = inputs['x'].astype(np.int64)\n"
         "    return {'int64': x + (1 << 60), 'int32': x + 2147482000, 'uint8': x % 256, 'bool': x % 2 == 1}[shape['O']]\n";
  return dir;
}

// An integer or bool output's golden holds its integers (JSON integers, in the output's dtype), and
// tune verify compares them exactly. make_goldens.py wrote the float64 of each, and verify allowed
// 1e-9 of the value: a golden of an int64 output past 2^53 off by 25600, or of an int32 near 2^31
// off by one, verified (adversarial round 9). A golden written so still verifies, to its doubles.
TEST(GoldenDtype, AnIntegerOutputsGoldenHoldsItsIntegersAndVerifiesExactly) {
  const fs::path dir = integer_output_folder("exact");
  for (const std::string o : {"int64", "int32", "uint8", "bool"}) {
    const fs::path golden = dir / "golden" / ("M8_" + o + ".json");
    const Result made = make_golden(dir, "M=8,O=" + o, golden);
    ASSERT_EQ(made.code, 0) << made.output;
    const Json g = read_json(golden);
    EXPECT_EQ(g.at("output").at("dtype"), o);
    const Json& out = g.at("output").at("data");
    const Json& x = g.at("inputs").at("x").at("data");
    for (std::size_t i = 0; i < out.size(); ++i) {
      ASSERT_TRUE(out[i].is_number_integer()) << o << ": " << out.dump();
      if (o == "int64") {
        EXPECT_EQ(out[i].get<std::int64_t>(), x[i].get<std::int64_t>() + (std::int64_t{1} << 60));
      }
    }
    const Result ok = verify(golden, "exact_" + o);
    EXPECT_EQ(ok.code, 0) << o << "\n" << ok.output;
    EXPECT_NE(ok.output.find("CPU reference vs golden (" + o + ", exact): all 8 equal: ok"), std::string::npos) << ok.output;
    if (o == "bool") continue;
    Json off = g;
    off["output"]["data"][1] = out[1].get<std::int64_t>() + 1;
    const fs::path file = dir / "golden" / ("off_" + o + ".json");
    write_json(file, off);
    const Result r = verify(file, "off_" + o);
    EXPECT_EQ(r.code, 1) << o << "\n" << r.output;
    EXPECT_NE(r.output.find("1 of 8 differ (first at element 1: reference " + std::to_string(out[1].get<std::int64_t>())),
              std::string::npos)
        << r.output;
  }
  // A golden of the int64 output written as doubles (as make_goldens.py wrote it): verified to its
  // doubles, said in a line; one off by more than a double's spacing there still fails.
  Json older = read_json(dir / "golden" / "M8_int64.json");
  older["output"]["dtype"] = "float64";
  for (Json& v : older["output"]["data"]) v = static_cast<double>(v.get<std::int64_t>());
  write_json(dir / "golden" / "older.json", older);
  const Result r = verify(dir / "golden" / "older.json", "older");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("the golden holds the int64 output as doubles past 2^53 (from element 0)"), std::string::npos)
      << r.output;
  older["output"]["data"][2] = older["output"]["data"][2].get<double>() + 1024;
  write_json(dir / "golden" / "older_off.json", older);
  EXPECT_EQ(verify(dir / "golden" / "older_off.json", "older_off").code, 1);
  // A value the output's dtype cannot hold, or no integer: one line naming the golden, exit 2.
  Json bad = read_json(dir / "golden" / "M8_uint8.json");
  bad["output"]["data"][0] = 300;
  write_json(dir / "golden" / "bad_uint8.json", bad);
  const Result refused = verify(dir / "golden" / "bad_uint8.json", "bad_uint8");
  EXPECT_EQ(refused.code, 2) << refused.output;
  expect_error_output(refused, (dir / "golden" / "bad_uint8.json").string() +
                                   ": output.data[0]: 300 is beyond uint8's range [0, 255]; a golden holds a uint8 "
                                   "output's integers: remake it with scripts/make_goldens.py");
}

// make_goldens.py (through tune problem draw) writes the very data tune draws at that
// seed: every parameter and input of a folder, per dtype, the float inits, index, integers,
// bernoulli and edits, equal to Problem::make_data's parity data value for value.
TEST(GoldenDtype, TheScriptDrawsTheDataTuneDraws) {
  const fs::path typed = typed_folder("same_draw");
  const fs::path repo(TUNE_REPO_DIR);
  struct Case {
    fs::path folder;
    std::string shape;
    std::vector<std::pair<std::string, std::int64_t>> dims;
  };
  const std::vector<Case> cases{{typed, "M=40,T=float32", {{"M", 40}}},
                                {typed, "M=40,T=bfloat16", {{"M", 40}}},
                                {typed, "M=40,T=float16", {{"M", 40}}},
                                {repo / "examples" / "rmsnorm", "M=3,K=64,T=bfloat16", {{"M", 3}, {"K", 64}}},
                                {repo / "examples" / "embedding_bag",
                                 "B=3,L=4,N=10,D=8,T=bfloat16",
                                 {{"B", 3}, {"L", 4}, {"N", 10}, {"D", 8}}},
                                {repo / "configs" / "contact", "B=1,N=5,C=8,H=4", {{"B", 1}, {"N", 5}, {"C", 8}, {"H", 4}}}};
  int n = 0;
  for (const Case& c : cases) {
    const fs::path golden = fs::path(out_dir("golden_dtype_draw_" + std::to_string(n++))) / "g.json";
    const Result made = make_golden(c.folder, c.shape, golden, "--seed 7");
    ASSERT_EQ(made.code, 0) << made.output;
    const Json g = read_json(golden);
    const auto problem = tune::Problem::load(c.folder / "problem.json");
    tune::Shape shape;
    for (const auto& [d, v] : c.dims) shape.set(d, v);
    if (g.at("shape").contains("T")) shape.set_dtype("T", *tune::parse_dtype(g.at("shape").at("T").get<std::string>()));
    problem->add_dtype_defaults(shape);
    const tune::ProblemData data = problem->make_data(shape, 7, tune::DataPurpose::kParity);
    for (const auto& [group, tensors] : {std::pair{"params", &data.params}, std::pair{"inputs", &data.inputs}}) {
      for (const tune::HostTensor& t : *tensors) {
        const Json& got = g.at(group).at(t.spec.name).at("data");
        ASSERT_EQ(got.size(), t.data.size()) << c.shape << " " << t.spec.name;
        std::size_t differ = 0;
        for (std::size_t i = 0; i < t.data.size(); ++i) differ += got[i].get<double>() != t.data[i] ? 1 : 0;
        EXPECT_EQ(differ, 0u) << c.shape << " " << group << "." << t.spec.name << ": first " << got[0] << " vs "
                              << t.data[0];
      }
    }
  }
}

}  // namespace

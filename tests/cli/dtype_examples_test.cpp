// Issue 35: the example folders with a dtype variable, copied outside the repo as a user's folders.
// examples/rmsnorm (T in float32, bfloat16, float16) tunes compile-only for all three in one run
// (`--T float32,bfloat16,float16`): a results file per dtype, named by the shape and the dtype
// (float32 without a suffix), every variant compiled with the dtype's CUDA type as its template
// argument, the space counted with the dtype's T_bytes. examples/embedding_bag (int64 indices, T in
// float32 and bfloat16) runs on the fake worker (data drawn, the numpy reference run) and records
// every tensor's dtype, `indices` int64, in context.tensors. examples/softmax, a folder written from
// the docs alone, compiles in its three dtypes and runs on the fake worker with its edge cases;
// examples/row_argmax, another, records its int64 output.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/cli_run.hpp"
#include "support/paths.hpp"

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

// examples/<name> copied under /tmp (outside the repo).
fs::path copy_example(const std::string& name) {
  const auto root = fs::temp_directory_path() / ("tune_dtype_examples_" + std::to_string(getpid()));
  const auto dir = root / name;
  fs::remove_all(dir);
  fs::create_directories(root);
  fs::copy(tune::test::repo_dir() / "examples" / name, dir, fs::copy_options::recursive);
  return dir;
}

Json read_json(const fs::path& file) {
  std::ifstream in(file);
  EXPECT_TRUE(in.good()) << file;
  return in.good() ? Json::parse(in) : Json::object();
}

// context.tensors as name -> {dtype, shape}.
std::map<std::string, Json> tensors_of(const Json& results) {
  std::map<std::string, Json> by_name;
  for (const auto& t : results.at("context").at("tensors")) by_name[t.at("name").get<std::string>()] = t;
  return by_name;
}

TEST(DtypeExamples, RmsnormOutsideTheRepoCompilesForThreeDtypesInOneRun) {
  const fs::path dir = copy_example("rmsnorm");
  const std::string out = out_dir("dtype_examples_rmsnorm");
  const Result r = run("--problem " + dir.string() +
                       " --M 64 --K 256 --T float32,bfloat16,float16 --compile-only --no-cache --out " + out);
  ASSERT_EQ(r.code, 0) << r.output;
  struct Expected {
    std::string tag, dtype, cuda_type;
    std::size_t variants;  // the space at M 64, K 256: vec = load / T_bytes changes what is valid
  };
  const std::vector<Expected> expected = {{"M64_K256", "float32", "float", 23},
                                          {"M64_K256_bfloat16", "bfloat16", "__nv_bfloat16", 17},
                                          {"M64_K256_float16", "float16", "__half", 17}};
  for (const auto& e : expected) {
    SCOPED_TRACE(e.tag);
    const fs::path file = fs::path(out) / "compile-only-sm_90" / "rmsnorm" / (e.tag + ".json");
    ASSERT_TRUE(fs::exists(file)) << r.output;
    const Json j = read_json(file);
    EXPECT_EQ(j.at("problem"), "rmsnorm");
    EXPECT_EQ(j.at("shape").at("T"), e.dtype) << j.at("shape");
    EXPECT_EQ(j.at("shape").at("M"), 64);
    const auto tensors = tensors_of(j);
    for (const char* name : {"x", "weight", "out"}) EXPECT_EQ(tensors.at(name).at("dtype"), e.dtype) << name;
    ASSERT_EQ(j.at("variants").size(), e.variants);
    for (const auto& v : j.at("variants")) {
      EXPECT_EQ(v.at("status"), "compiled") << v.dump();
      const std::string kernel = v.at("launches").at(0).at("kernel");
      EXPECT_EQ(kernel.rfind("rmsnorm_kernel<" + e.cuda_type + ",", 0), 0u) << kernel;
    }
  }
}

TEST(DtypeExamples, EmbeddingBagOutsideTheRepoRecordsInt64IndicesOnTheFakeWorker) {
  const fs::path dir = copy_example("embedding_bag");
  const std::string out = out_dir("dtype_examples_embedding_bag");
  const Result r = run_with("TUNE_WORKER_FAKE=1",
                            "--problem " + dir.string() +
                                " --B 5 --L 3 --N 50 --D 32 --T float32,bfloat16 --budget 3 --no-cache --out " + out);
  ASSERT_EQ(r.code, 0) << r.output;
  for (const std::string dtype : {"float32", "bfloat16"}) {
    SCOPED_TRACE(dtype);
    const std::string tag = dtype == "float32" ? "B5_L3_N50_D32" : "B5_L3_N50_D32_" + dtype;
    const fs::path file = fs::path(out) / "fake-gpu" / "embedding_bag" / (tag + ".json");
    ASSERT_TRUE(fs::exists(file)) << r.output;
    const Json j = read_json(file);
    EXPECT_EQ(j.at("shape").at("T"), dtype) << j.at("shape");
    EXPECT_TRUE(j.at("summary").contains("winner")) << j.at("summary");
    // The reference that ran is the folder's reference.py (numpy here: the indices as int64).
    EXPECT_EQ(j.at("context").at("reference").get<std::string>().rfind("reference.py (", 0), 0u) << j.at("context");
    const auto tensors = tensors_of(j);
    EXPECT_EQ(tensors.at("indices").at("dtype"), "int64");
    EXPECT_EQ(tensors.at("indices").at("role"), "input");
    EXPECT_EQ(tensors.at("indices").at("shape"), Json::parse("[5, 3]"));
    EXPECT_EQ(tensors.at("weight").at("dtype"), dtype);
    EXPECT_EQ(tensors.at("weight").at("shape"), Json::parse("[50, 32]"));
    EXPECT_EQ(tensors.at("out").at("dtype"), dtype);
    for (const auto& v : j.at("variants")) EXPECT_NE(v.at("status"), "compile_failed") << v.dump();
  }
}

TEST(DtypeExamples, SoftmaxOutsideTheRepoCompilesAndRunsItsThreeDtypes) {
  const fs::path dir = copy_example("softmax");
  const std::string out = out_dir("dtype_examples_softmax");
  // L 40: block * per_thread <= 4 * L leaves block 32 (per_thread 1, 2, 4), 64 (1, 2) and 128 (1).
  const Result r = run_with("TUNE_WORKER_FAKE=1", "--problem " + dir.string() +
                                                      " --R 6 --L 40 --T float32,bfloat16,float16 --no-cache --out " + out);
  ASSERT_EQ(r.code, 0) << r.output;
  for (const auto& [dtype, cuda_type] :
       std::map<std::string, std::string>{{"float32", "float"}, {"bfloat16", "__nv_bfloat16"}, {"float16", "__half"}}) {
    SCOPED_TRACE(dtype);
    const std::string tag = dtype == "float32" ? "R6_L40" : "R6_L40_" + dtype;
    const fs::path file = fs::path(out) / "fake-gpu" / "softmax" / (tag + ".json");
    ASSERT_TRUE(fs::exists(file)) << r.output;
    const Json j = read_json(file);
    EXPECT_EQ(j.at("shape").at("T"), dtype) << j.at("shape");
    EXPECT_EQ(tensors_of(j).at("out").at("dtype"), dtype);
    EXPECT_TRUE(j.at("summary").contains("winner")) << j.at("summary");
    ASSERT_EQ(j.at("variants").size(), 6u);
    for (const auto& v : j.at("variants")) {
      EXPECT_NE(v.at("status"), "compile_failed") << v.dump();
      const std::string kernel = v.at("launches").at(0).at("kernel");
      EXPECT_EQ(kernel.rfind("softmax_kernel<" + cuda_type + ",6,40,", 0), 0u) << kernel;
    }
  }
}

TEST(DtypeExamples, RowArgmaxOutsideTheRepoRecordsAnInt64OutputOnTheFakeWorker) {
  const fs::path dir = copy_example("row_argmax");
  const std::string out = out_dir("dtype_examples_row_argmax");
  const Result r = run_with("TUNE_WORKER_FAKE=1", "--problem " + dir.string() + " --R 6 --L 40 --no-cache --out " + out);
  ASSERT_EQ(r.code, 0) << r.output;
  const fs::path file = fs::path(out) / "fake-gpu" / "row_argmax" / "R6_L40.json";
  ASSERT_TRUE(fs::exists(file)) << r.output;
  const Json j = read_json(file);
  const auto tensors = tensors_of(j);
  EXPECT_EQ(tensors.at("x").at("dtype"), "float32");
  EXPECT_EQ(tensors.at("out").at("dtype"), "int64");
  EXPECT_EQ(tensors.at("out").at("shape"), Json::parse("[6]"));
  EXPECT_TRUE(j.at("summary").contains("winner")) << j.at("summary");
  ASSERT_EQ(j.at("variants").size(), 6u);
  for (const auto& v : j.at("variants")) EXPECT_NE(v.at("status"), "compile_failed") << v.dump();
}

}  // namespace

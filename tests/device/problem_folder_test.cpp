// Device tier (label gpu): problem folders copied outside the repo tune on the GPU with no rebuild:
// the affine fixture (tests/fixtures/problems/affine) and the third problem,
// examples/ln_linear_gelu, at a ragged shape, every variant's parity checked against its
// reference.py (PyTorch where it imports, else numpy); and a folder with a dtype variable
// (examples/rmsnorm) in float32, bfloat16 and float16 in one run, each output judged by its
// dtype's rule (issue 35). Without a CUDA device every test skips.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tune/device.hpp"

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

std::string from_env(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

// A copy of `folder` under /tmp, as a user's folder outside the repo.
fs::path outside_copy(const fs::path& folder) {
  const auto dir = fs::temp_directory_path() / ("tune_device_problem_" + std::to_string(getpid())) / folder.filename();
  fs::remove_all(dir);
  fs::create_directories(dir.parent_path());
  fs::copy(folder, dir, fs::copy_options::recursive);
  return dir;
}

// Tunes `args` into `out`; returns the results JSON of `problem`/`stem` on this device.
Json tune_folder(const tune::DeviceInfo& device, const std::string& args, const fs::path& out, const std::string& problem,
                 const std::string& stem) {
  fs::remove_all(out);
  const std::string cmd = from_env("TUNE_EXE", TUNE_EXE) + " " + args + " --out " + out.string() + " --no-cache 2>&1";
  std::string output;
  FILE* p = popen(cmd.c_str(), "r");
  std::array<char, 4096> buf{};
  while (p && fgets(buf.data(), buf.size(), p)) output += buf.data();
  const int status = p ? pclose(p) : -1;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << cmd << "\n" << output;
  const auto json = out / device.slug() / problem / (stem + ".json");
  if (!fs::exists(json)) {
    ADD_FAILURE() << "no " << json << "\n" << output;
    return Json::object();
  }
  return Json::parse(std::ifstream(json));
}

void expect_every_variant_correct(const Json& j) {
  ASSERT_TRUE(j.contains("variants"));
  std::size_t passed = 0;
  for (const auto& v : j.at("variants")) {
    const std::string status = v.at("status");
    EXPECT_TRUE(status == "passed" || status == "skipped") << v.at("name") << ": " << status << " " << v.at("reason");
    if (status == "passed") {
      ++passed;
      EXPECT_GT(v.at("parity").at("elements").get<std::int64_t>(), 0);
    }
  }
  EXPECT_GT(passed, 0u);
  EXPECT_TRUE(j.at("summary").contains("winner")) << j.at("summary").dump();
}

TEST(DeviceProblemFolder, TheAffineFixtureTunesFromAFolderOutsideTheRepo) {
  std::string why;
  const auto device = tune::query_device(0, &why);
  if (!device) GTEST_SKIP() << "no CUDA device: " << why;
  const fs::path dir = outside_copy(fs::path(from_env("TUNE_FIXTURES", TUNE_FIXTURES)) / "problems" / "affine");
  const Json j = tune_folder(*device, "--problem " + dir.string() + " --R 999 --L 96",
                             fs::path(TUNE_BINARY_DIR) / "device_affine_out", "affine", "R999_L96");
  expect_every_variant_correct(j);
}

TEST(DeviceProblemFolder, TheThirdProblemIsCorrectAtARaggedShapeInEveryVariant) {
  std::string why;
  const auto device = tune::query_device(0, &why);
  if (!device) GTEST_SKIP() << "no CUDA device: " << why;
  const fs::path dir = outside_copy(fs::path(from_env("TUNE_REPO_DIR", TUNE_REPO_DIR)) / "examples" / "ln_linear_gelu");
  const Json j = tune_folder(*device, "--problem " + dir.string() + " --M 37 --K 64 --N 200 --keep-spills",
                             fs::path(TUNE_BINARY_DIR) / "device_ln_linear_gelu_out", "ln_linear_gelu", "M37_K64_N200");
  expect_every_variant_correct(j);
}

TEST(DeviceProblemFolder, AFolderWithADtypeVariableTunesInThreeDtypesInOneRun) {
  std::string why;
  const auto device = tune::query_device(0, &why);
  if (!device) GTEST_SKIP() << "no CUDA device: " << why;
  const fs::path dir = outside_copy(fs::path(from_env("TUNE_REPO_DIR", TUNE_REPO_DIR)) / "examples" / "rmsnorm");
  const fs::path out = fs::path(TUNE_BINARY_DIR) / "device_rmsnorm_out";
  // One run, three results files: the first tune_folder call runs it, the others read its files.
  const Json f32 = tune_folder(*device, "--problem " + dir.string() + " --M 97 --K 512 --T float32,bfloat16,float16", out,
                               "rmsnorm", "M97_K512");
  expect_every_variant_correct(f32);
  for (const std::string dtype : {"bfloat16", "float16"}) {
    const auto file = out / device->slug() / "rmsnorm" / ("M97_K512_" + dtype + ".json");
    ASSERT_TRUE(fs::exists(file)) << file;
    const Json j = Json::parse(std::ifstream(file));
    expect_every_variant_correct(j);
    EXPECT_EQ(j.at("shape").at("T"), dtype);
    for (const auto& v : j.at("variants")) {
      if (v.at("status") != "passed") continue;
      const Json& p = v.at("parity");
      EXPECT_EQ(p.at("dtype"), dtype) << v.at("name");
      // The module's own error in the dtype was measured (the device machine has PyTorch), and the
      // kernel was judged by both rules.
      EXPECT_TRUE(p.at("module_max_abs_error").is_number()) << v.at("name") << " " << p.dump();
      EXPECT_EQ(p.at("module_passed"), true) << v.at("name") << " " << p.dump();
      EXPECT_EQ(p.at("tolerance_passed"), true) << v.at("name") << " " << p.dump();
    }
  }
}

}  // namespace

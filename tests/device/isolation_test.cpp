// Device tier (label gpu): faults injected into real variants on the device (TUNE_WORKER_FAULT):
// a sticky CUDA error and a segfault in the worker are recorded, and the run still names a
// winner. Without a CUDA device every test skips and says why.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tune/device.hpp"

namespace {

using Json = nlohmann::ordered_json;

// $TUNE_EXE and $TUNE_FIXTURES when set (a GPU machine gets a copy of the binaries), else the build's.
std::string from_env(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

TEST(DeviceIsolation, ARealCudaFaultAndASegfaultAreRecordedAndTheRunGoesOn) {
  std::string why;
  const auto device = tune::query_device(0, &why);
  if (!device) GTEST_SKIP() << "no CUDA device: " << why;
  const auto out = std::filesystem::path(TUNE_BINARY_DIR) / "device_isolation_out";
  std::filesystem::remove_all(out);
  // Two variants of the small fixture space (the baseline is thread, block=128, smem_w=true).
  const std::string cuda_victim = "strategy=warp,mapping=linear,block=64,";
  const std::string segv_victim = "strategy=thread,mapping=linear,block=64,tile_i=1,tile_j=1,stage_t=false,smem_w=false,";
  const std::string cmd = "TUNE_WORKER_FAULT='" + cuda_victim + "=cuda;" + segv_victim + "=segv' " +
                          from_env("TUNE_EXE", TUNE_EXE) + " --problem contact --B 2 --N 8 --C 16 --H 8 --config " +
                          from_env("TUNE_FIXTURES", TUNE_FIXTURES) + "/contact_small_space.json --out " + out.string() +
                          " --no-cache 2>&1";
  std::string output;
  FILE* p = popen(cmd.c_str(), "r");
  std::array<char, 4096> buf{};
  while (p && fgets(buf.data(), buf.size(), p)) output += buf.data();
  const int status = p ? pclose(p) : -1;
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << output;
  const auto json = out / device->slug() / "contact" / "B2_N8_C16_H8.json";
  const Json j = Json::parse(std::ifstream(json));
  bool saw_cuda = false, saw_segv = false;
  for (const auto& v : j.at("variants")) {
    const auto name = v.at("name").get<std::string>();
    if (name.find(cuda_victim) != std::string::npos) {
      saw_cuda = true;
      EXPECT_EQ(v.at("status"), "crashed") << v.dump();
      EXPECT_EQ(v.at("fault").at("cuda_error"), "CUDA_ERROR_ILLEGAL_ADDRESS") << v.dump();
    } else if (name.find(segv_victim) != std::string::npos) {
      saw_segv = true;
      EXPECT_EQ(v.at("status"), "crashed") << v.dump();
      EXPECT_EQ(v.at("fault").at("signal"), "SIGSEGV") << v.dump();
    } else {
      EXPECT_EQ(v.at("status"), "passed") << v.dump();
    }
  }
  EXPECT_TRUE(saw_cuda && saw_segv) << output;
  EXPECT_FALSE(j.at("summary").at("winner").is_null()) << output;
  EXPECT_GE(j.at("context").at("isolation").at("worker_starts").get<int>(), 3);
}

}  // namespace

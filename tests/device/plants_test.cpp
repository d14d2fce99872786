// Device tier (label gpu): the planted race of issue 20 (tests/plants/contact_copy_wait_race.json,
// no cp.async wait before a warp reads its tile) run through the whole tune with the correctness
// gate: whatever the timing does to parity, no racy variant is named winner, and every racy
// finalist the gate sanitized is recorded unsafe with its racecheck report. Without a CUDA device
// or compute-sanitizer the test skips and says why.
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
#include "tune/gate.hpp"

namespace {

using Json = nlohmann::ordered_json;

std::string from_env(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

std::pair<int, std::string> shell(const std::string& cmd) {
  std::string output;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  std::array<char, 4096> buf{};
  while (p && fgets(buf.data(), buf.size(), p)) output += buf.data();
  const int status = p ? pclose(p) : -1;
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

TEST(DevicePlants, ThePlantedRaceNeverWinsAndItsFinalistsAreUnsafeWithTheRacecheckReport) {
  std::string why;
  const auto device = tune::query_device(0, &why);
  if (!device) GTEST_SKIP() << "no CUDA device: " << why;
  const auto sanitizer = tune::find_sanitizer(false);
  if (sanitizer.path.empty()) GTEST_SKIP() << "no compute-sanitizer: " << sanitizer.why_not;
  const std::string repo = from_env("TUNE_REPO_DIR", TUNE_REPO_DIR);
  const auto root = std::filesystem::path(TUNE_BINARY_DIR) / "device_plants_out";
  std::filesystem::remove_all(root);
  const auto folder = root / "contact_copy_wait_race";
  const auto [plant_code, plant_out] =
      shell("python3 " + repo + "/tools/plant.py contact_copy_wait_race " + folder.string());
  ASSERT_EQ(plant_code, 0) << plant_out;
  // The whole space at the plant's shape, a sample of it: the baseline and racy warp_tile variants
  // among the fast ones, so racy variants reach the strict re-measure and the gate.
  const std::string cmd = from_env("TUNE_EXE", TUNE_EXE) + " --problem " + folder.string() + " --B 4 --N 64 --config " +
                          (folder / "affected.json").string() + " --budget 12 --top 3 --sanitize finalists --out " +
                          (root / "out").string() + " --no-cache";
  const auto [code, output] = shell(cmd);
  ASSERT_TRUE(code == 0 || code == 5) << cmd << "\n" << output;  // 5: nothing safe passed
  const Json j =
      Json::parse(std::ifstream(root / "out" / device->slug() / "contact_copy_wait_race" / "B4_N64_C64_H32.json"));
  int unsafe = 0;
  for (const auto& v : j.at("variants")) {
    if (v.at("status") != "unsafe") continue;
    ++unsafe;
    const auto name = v.at("name").get<std::string>();
    EXPECT_NE(name.find("mapping=warp_tile"), std::string::npos) << "only planted variants are unsafe: " << name;
    bool racecheck = false;
    for (const auto& f : v.at("gate").at("findings")) racecheck = racecheck || f.at("tool") == "racecheck";
    EXPECT_TRUE(racecheck) << v.at("gate").dump();
  }
  EXPECT_GE(unsafe, 1) << output;
  const auto& winner = j.at("summary").at("winner");
  if (!winner.is_null()) {
    EXPECT_EQ(winner.get<std::string>().find("mapping=warp_tile"), std::string::npos) << "a racy variant won";
  }
  EXPECT_FALSE(j.at("context").at("gate").at("tools").empty());
}

}  // namespace

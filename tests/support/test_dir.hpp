#pragma once
// A folder of the current test's own under the build tree: ctest may run tests at the same time.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace tune {

// <TUNE_BINARY_DIR>/<group>/<test name>, emptied first when `fresh`.
inline std::filesystem::path test_dir(const std::string& group, bool fresh = false) {
  const auto dir =
      std::filesystem::path(TUNE_BINARY_DIR) / group / ::testing::UnitTest::GetInstance()->current_test_info()->name();
  if (fresh) std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace tune

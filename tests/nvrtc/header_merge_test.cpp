// The merged header (tune header) from the synthetic results in tests/fixtures/merge: it compiles
// alone with g++ and nvcc, and select() returns the documented fallback (select_check.cpp).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "tune/io.hpp"
#include "tune/tune.hpp"

namespace tune {
namespace {

// One folder per test: ctest may run them at the same time.
std::filesystem::path test_dir() {
  const auto dir = std::filesystem::path(TUNE_BINARY_DIR) / "header_merge_test" /
                   ::testing::UnitTest::GetInstance()->current_test_info()->name();
  std::filesystem::create_directories(dir);
  return dir;
}

void write_merged(const std::filesystem::path& dir, const std::string& problem) {
  std::vector<std::filesystem::path> files;
  for (const auto& f : std::filesystem::directory_iterator(std::filesystem::path(TUNE_FIXTURES) / "merge" / problem))
    files.push_back(f.path());
  std::ofstream(dir / (problem + "_tuned.hpp")) << merge_result_files(files, std::nullopt);
}

int run(const std::string& cmd) { return std::system(cmd.c_str()); }

TEST(MergedHeader, SelectReturnsTheDocumentedFallbackWithGxx) {
  const auto dir = test_dir();
  write_merged(dir, "contact");
  const std::string exe = (dir / "select_check").string();
  const std::string cmd = std::string(TUNE_CXX_COMPILER) + " -std=c++17 -Wall -Wextra -Werror -I" + dir.string() + " -o " +
                          exe + " " + TUNE_SOURCE_DIR "/nvrtc/select_check.cpp";
  ASSERT_EQ(run(cmd), 0) << cmd;
  EXPECT_EQ(run(exe), 0) << exe;
}

TEST(MergedHeader, CompilesAloneAsCudaBothProblems) {
  const auto dir = test_dir();
  write_merged(dir, "contact");
  write_merged(dir, "scene_graph");
  const auto user = dir / "user.cu";
  std::ofstream(user) << "#include \"contact_tuned.hpp\"\n#include \"scene_graph_tuned.hpp\"\n"
                         "int main() { return tune_tuned::scene_graph::select(90, {4, 24, 96, 4, 16}).index; }\n";
  // select_check.cpp as CUDA too: the static_asserts hold under nvcc's host compiler pass.
  const std::string check = std::string(TUNE_NVCC) + " -std=c++17 -arch=sm_90 -x cu -c -o " + (dir / "check.o").string() +
                            " -I" + dir.string() + " " + TUNE_SOURCE_DIR "/nvrtc/select_check.cpp";
  const std::string alone = std::string(TUNE_NVCC) + " -std=c++17 -arch=sm_90 -c -o " + (dir / "user.o").string() + " " +
                            user.string() + " -I" + dir.string();
  EXPECT_EQ(run(alone), 0) << alone;
  EXPECT_EQ(run(check), 0) << check;
}

TEST(MergedHeader, CompilesAloneAsCxx17) {
  const auto dir = test_dir();
  write_merged(dir, "scene_graph");
  const auto user = dir / "alone.cpp";
  std::ofstream(user) << "#include \"scene_graph_tuned.hpp\"\n"
                         "static_assert(tune_tuned::scene_graph::kEntryCount == 1, \"one synthetic result\");\n";
  const std::string cmd = std::string(TUNE_CXX_COMPILER) + " -std=c++17 -Wall -Wextra -Wpedantic -Werror -fsyntax-only -I" +
                          dir.string() + " " + user.string();
  EXPECT_EQ(run(cmd), 0) << cmd;
}

}  // namespace
}  // namespace tune

// The merged header (tune header) from the fixtures in tests/fixtures/merge: it compiles alone with
// g++ and nvcc, and select() returns the documented fallback (select_check.cpp); synthetic results
// are refused without allow_synthetic.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "support/test_dir.hpp"
#include "tune/errors.hpp"
#include "tune/io.hpp"
#include "tune/tune.hpp"

namespace tune {
namespace {

std::vector<std::filesystem::path> fixtures(const std::string& folder) {
  std::vector<std::filesystem::path> files;
  for (const auto& f : std::filesystem::directory_iterator(std::filesystem::path(TUNE_FIXTURES) / "merge" / folder))
    files.push_back(f.path());
  return files;
}

// The fixtures of `folder` (synthetic ones allowed) as <problem>_tuned.hpp.
void write_merged(const std::filesystem::path& dir, const std::string& problem, const std::string& folder = "") {
  std::ofstream(dir / (problem + "_tuned.hpp")) << merge_result_files(fixtures(folder.empty() ? problem : folder),
                                                                       std::nullopt, /*allow_synthetic=*/true);
}

int run(const std::string& cmd) { return std::system(cmd.c_str()); }

TEST(MergedHeader, SyntheticResultsAreRefusedUnlessAllowed) {
  try {
    (void)merge_result_files(fixtures("devices"), std::nullopt);
    FAIL() << "merged synthetic results without allow_synthetic";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--allow-synthetic"), std::string::npos) << e.what();
  }
  // Without the synthetic ones, the measured fixtures merge.
  std::vector<std::filesystem::path> measured;
  for (const auto& f : fixtures("devices"))
    if (f.filename().string().rfind("fixture_", 0) == 0) measured.push_back(f);
  ASSERT_EQ(measured.size(), 3u);
  EXPECT_NE(merge_result_files(measured, std::nullopt).find("kEntryCount = 3"), std::string::npos);
}

TEST(MergedHeader, SelectReturnsTheDocumentedFallbackWithGxx) {
  const auto dir = test_dir("header_merge_test");
  write_merged(dir, "contact", "devices");
  const std::string exe = (dir / "select_check").string();
  const std::string cmd = std::string(TUNE_CXX_COMPILER) + " -std=c++17 -Wall -Wextra -Werror -I" + dir.string() + " -o " +
                          exe + " " + TUNE_SOURCE_DIR "/nvrtc/select_check.cpp";
  ASSERT_EQ(run(cmd), 0) << cmd;
  EXPECT_EQ(run(exe), 0) << exe;
}

TEST(MergedHeader, CompilesAloneAsCudaBothProblems) {
  const auto dir = test_dir("header_merge_test");
  write_merged(dir, "contact", "devices");
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
  const auto dir = test_dir("header_merge_test");
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

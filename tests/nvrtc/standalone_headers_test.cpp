// Kernel headers that stand alone (issue 38): every header a problem's template may include, and
// the template itself, compiles with NVRTC when it is the only #include of an empty translation
// unit, given the headers as tune gives them (Space's sources: the template's folder and
// include_dirs, each #include resolved to the name NVRTC knows the header by). A header that uses
// what another declares includes it, so no header depends on the order its includer lists them in.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "tune/compile.hpp"
#include "tune/space.hpp"

namespace tune {
namespace {

namespace fs = std::filesystem;

// "name: the first error line" of each header of `sources` (the template included) that does not
// compile alone, in the headers' order.
std::vector<std::string> headers_that_fail_alone(const KernelSources& sources) {
  std::vector<std::pair<std::string, std::string>> all = sources.headers;
  all.emplace_back(sources.main_name, sources.main);
  std::vector<std::string> failed(all.size());
  std::atomic<std::size_t> next{0};
  std::vector<std::jthread> pool;
  for (unsigned t = 0; t < std::max(1u, std::thread::hardware_concurrency()); ++t) {
    pool.emplace_back([&] {
      for (std::size_t i = next++; i < all.size(); i = next++) {
        CompileRequest request;
        request.source = "#include \"" + all[i].first + "\"\n";
        request.source_name = "alone.cu";
        request.options = default_options(90);
        request.headers = with_cuda_headers(request.source, all);
        const CompileResult result = compile(request);
        if (result.ok) continue;
        const std::size_t error = result.log.find("error");
        // The error's line (rfind gives npos before the first line, and npos + 1 == 0).
        const std::size_t line_start = error == std::string::npos ? 0 : result.log.rfind('\n', error) + 1;
        failed[i] = all[i].first + ": " + result.log.substr(line_start, result.log.find('\n', line_start) - line_start);
      }
    });
  }
  pool.clear();  // joins
  failed.erase(std::remove(failed.begin(), failed.end(), std::string{}), failed.end());
  return failed;
}

// Every problem folder of the repository: configs/* and examples/*.
std::vector<fs::path> problem_files() {
  std::vector<fs::path> out;
  for (const char* group : {"configs", "examples"})
    for (const auto& entry : fs::directory_iterator(fs::path(TUNE_REPO_DIR) / group))
      if (fs::exists(entry.path() / "problem.json")) out.push_back(entry.path() / "problem.json");
  std::sort(out.begin(), out.end());
  return out;
}

TEST(StandaloneHeaders, EveryKernelHeaderOfEveryProblemCompilesAlone) {
  const std::vector<fs::path> problems = problem_files();
  ASSERT_GE(problems.size(), 4u) << "configs/ and examples/ hold at least contact, scene_graph and two examples";
  std::size_t headers = 0;
  for (const fs::path& file : problems) {
    const Space space = Space::load(file);
    const auto sources = space.sources();
    ASSERT_TRUE(sources) << file;
    headers += sources->headers.size() + 1;
    for (const std::string& failure : headers_that_fail_alone(*sources))
      ADD_FAILURE() << file.parent_path().filename().string() << ": " << failure
                    << "\n  (include what the header uses: the header beside it by its relative path, the shared helpers "
                       "by their name in include_dirs)";
  }
  std::cout << "compiled " << headers << " headers alone, of " << problems.size() << " problem folders\n";
}

// The check itself: a piece that uses a type of another piece without including it compiles inside
// its template (the template includes the other first) but not alone. (NVRTC parses a template's
// body only when it is instantiated, so what alone-compiling checks is everything outside template
// bodies: declarations, signatures, constants, non-template functions.)
TEST(StandaloneHeaders, APieceThatReliesOnItsIncludersOrderIsNamed) {
  KernelSources s;
  s.main_name = "kernel.cuh";
  s.main =
      "#pragma once\n#include \"a.cuh\"\n#include \"parts/b.cuh\"\n"
      "template <int N> __global__ void k(float* out) { out[0] = b_value<N>(A{}); }\n";
  s.headers = {{"a.cuh", "#pragma once\nstruct A { float value = 1.0f; };\n"},
               {"parts/b.cuh",
                "#pragma once\ntemplate <int N> __device__ float b_value(const A& a) { return N * a.value; }\n"}};
  const std::vector<std::string> failed = headers_that_fail_alone(s);
  ASSERT_EQ(failed.size(), 1u) << ::testing::PrintToString(failed);
  EXPECT_EQ(failed[0].rfind("parts/b.cuh: ", 0), 0u) << failed[0];
  EXPECT_NE(failed[0].find("error"), std::string::npos) << failed[0];

  s.headers[1].second = "#pragma once\n#include \"a.cuh\"\n" + s.headers[1].second;
  EXPECT_EQ(headers_that_fail_alone(s), std::vector<std::string>{});
}

}  // namespace
}  // namespace tune

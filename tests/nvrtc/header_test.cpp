// The generated header compiles on its own as C++ (g++) and as CUDA (nvcc, compile only).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "support/fixture_run.hpp"
#include "tune/io.hpp"

namespace tune {
namespace {

std::filesystem::path write_header_and_user(const std::string& ext) {
  const std::filesystem::path dir = std::filesystem::path(TUNE_BINARY_DIR) / "header_test";
  std::filesystem::create_directories(dir);
  const Space space = load_space("contact", std::nullopt);
  std::ofstream(dir / "contact_tuned.hpp") << generate_header(fixture_run(), space);
  const auto user = dir / ("user." + ext);
  std::ofstream(user) << "#include \"contact_tuned.hpp\"\n"
                         "static_assert(tune_tuned::contact::kShapeN == 64);\n"
                         "static_assert(tune_tuned::contact::kBlock == 128);\n"
                         "int main() { return tune_tuned::contact::kStrategy; }\n";
  return user;
}

TEST(Header, CompilesAsCxx) {
  const auto user = write_header_and_user("cpp");
  const std::string cmd = std::string(TUNE_CXX_COMPILER) + " -std=c++17 -Wall -Werror -fsyntax-only " + user.string();
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
}

TEST(Header, CompilesAsCuda) {
  const auto user = write_header_and_user("cu");
  const std::string cmd = std::string(TUNE_NVCC) + " -std=c++17 -arch=sm_90 -c -o " +
                          (user.parent_path() / "user.o").string() + " " + user.string();
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
}

// Issue 34: a command line or compile option ending in a backslash continued a // comment onto the
// next line (#pragma once swallowed: "redefinition of kMaxLaunches" when included twice), a NUL
// byte stayed raw in a string literal (#27), and problems named 2mm or class gave `namespace 2mm`
// (#16). Each header, single and merged, compiles included twice with -Wall -Werror (-Wcomment
// flags a comment continued by a backslash) and holds no control character.
TEST(Header, HostileTextAndNamesCompileIncludedTwice) {
  const std::filesystem::path dir = std::filesystem::path(TUNE_BINARY_DIR) / "header_test";
  std::filesystem::create_directories(dir);
  const Space space = load_space("contact", std::nullopt);
  RunRecord run = fixture_run();
  // The header ships recorded launches only as the record's device lowers them (issue 34): the
  // fixture's are placeholders, so record the lowering.
  for (auto& v : run.variants) {
    v.launches.clear();
    for (const KernelLaunch& k : space.lower(space.from_json(v.params), run.shape, run.limits()).launches)
      v.launches.push_back(
          {{"kernel", k.name_expression}, {"grid", k.grid}, {"block", k.block}, {"dynamic_smem_bytes", k.dynamic_smem}});
  }
  run.context.command_line = "tune --problem contact --B 4 \\";
  run.context.compile_options.push_back("-DX=\\  ");
  run.context.finished_at = "2026\\\n#error spliced";
  run.device->name = std::string(
      "X\0"
      "1Y?\?/\x7f",
      8);
  // The merged header is of the problem the space describes (contact); the single one takes any name.
  // Its records bind contact's T, as read_problem_result reads one older than T (issue 35).
  run.shape.set_dtype("T", DType::kFloat32);
  const std::string merged = generate_merged_header({NamedResult{"hostile.json", run}}, space, /*allow_synthetic=*/true);
  EXPECT_NE(merged.find("\"X\\0001Y?\\?/\\177\""), std::string::npos) << "the device name, escaped";
  for (const std::string problem : {"2mm", "class", "new", "a-b"}) {
    run.problem = problem;
    const std::string single = generate_header(run, space);
    for (const auto& [kind, text] : {std::pair{"single", single}, std::pair{"merged", merged}}) {
      SCOPED_TRACE(problem + " " + kind);
      for (const char c : text) EXPECT_TRUE(c == '\n' || static_cast<unsigned char>(c) >= 0x20) << static_cast<int>(c);
      const auto header = dir / ("hostile_" + std::string(kind) + ".hpp");
      std::ofstream(header) << text;
      const auto user = dir / ("hostile_" + std::string(kind) + ".cpp");
      std::ofstream(user) << "#include \"" << header.filename().string() << "\"\n#include \"" << header.filename().string()
                          << "\"\nint main() { return 0; }\n";
      const std::string cmd = std::string(TUNE_CXX_COMPILER) + " -std=c++17 -Wall -Werror -fsyntax-only " + user.string();
      EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    }
  }
}

// Two results' headers of one problem (other shapes, GPUs or medians) declared the same inline
// variables with other values: in two translation units of one program the linker kept one
// definition, and a unit read the other unit's kMedianMicroseconds (the one-definition rule, no
// diagnostic). Each header's code is in an inline namespace of its own hash: every unit reads its
// own header's values; both in one translation unit are refused in one #error line.
TEST(Header, TwoResultsHeadersOfOneProblemKeepApartInOneProgram) {
  const std::filesystem::path dir = std::filesystem::path(TUNE_BINARY_DIR) / "header_test" / "two_results";
  std::filesystem::create_directories(dir / "a");
  std::filesystem::create_directories(dir / "b");
  const Space space = load_space("contact", std::nullopt);
  RunRecord other = fixture_run();
  set_median(*other.variants.front().timing, 45);
  std::ofstream(dir / "a" / "contact.hpp") << generate_header(fixture_run(), space);
  std::ofstream(dir / "b" / "contact.hpp") << generate_header(other, space);
  for (const char* unit : {"a", "b"})
    std::ofstream(dir / (std::string(unit) + ".cpp"))
        << "#include \"" << unit << "/contact.hpp\"\n"
        << "const double* " << unit << "_median() { return &tune_tuned::contact::kMedianMicroseconds; }\n";
  std::ofstream(dir / "main.cpp") << "const double* a_median();\nconst double* b_median();\n"
                                     "int main() { return *a_median() == 30.0 && *b_median() == 45.0 ? 0 : 1; }\n";
  const std::string d = dir.string() + "/";
  const std::string cmd = std::string(TUNE_CXX_COMPILER) + " -std=c++17 -O0 -Wall -Werror -I" + d + " -o " + d + "program " +
                          d + "a.cpp " + d + "b.cpp " + d + "main.cpp";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  EXPECT_EQ(std::system((d + "program").c_str()), 0) << "a unit read the other header's kMedianMicroseconds";

  std::ofstream(dir / "both.cpp") << "#include \"a/contact.hpp\"\n#include \"b/contact.hpp\"\n";
  const std::string both =
      std::string(TUNE_CXX_COMPILER) + " -std=c++17 -fsyntax-only -I" + d + " " + d + "both.cpp > " + d + "both.log 2>&1";
  EXPECT_NE(std::system(both.c_str()), 0) << both;
  std::ifstream in(d + "both.log");
  const std::string log((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(log.find("two results' headers (<shape>.hpp) of problem contact in one translation unit; merge the results "
                     "into one header with tune header"),
            std::string::npos)
      << log;
  EXPECT_EQ(log.find("redefinition"), std::string::npos) << "one line, not a page of errors:\n" << log;
}

}  // namespace
}  // namespace tune

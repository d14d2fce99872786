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

}  // namespace
}  // namespace tune

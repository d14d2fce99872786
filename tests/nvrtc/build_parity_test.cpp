// Issue 21: the NVRTC build tune times and the nvcc build the header's consumers run (bench/),
// of one instantiation. The seed-design baseline of contact at B4 N64 is built both ways: through
// tune's own compile path (compile_request + default_options) and by nvcc with the bench's flags
// (CMake Release: -O3 -DNDEBUG, C++17, sm_90, and tune::kernels' TUNE_KERNELS_NVCC_OPTIONS; the
// kernel taken by address as the generated header does). They must be the same machine code.
// Without tune::kernels' -Xcicc=--sharedmem32=0 they are not: nvcc's cicc keeps shared-memory
// addresses 32-bit (mov.u32 of the extern __shared__ symbol, st.shared [%r]) where NVRTC 13.0 keeps
// them 64-bit, and no option of NVRTC changes that; tools/compare_builds.py compares every entry
// of record.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "tune/compile.hpp"
#include "tune/problem.hpp"
#include "tune/space.hpp"
#include "tune/tune.hpp"

namespace tune {
namespace {

namespace fs = std::filesystem;

// The bytes of section ".text.<kernel>" of a CUBIN (ELF64): the kernel's machine code.
std::string kernel_text(const std::vector<char>& elf, const std::string& kernel) {
  const auto u16 = [&](std::size_t at) {
    std::uint16_t v;
    std::memcpy(&v, elf.data() + at, 2);
    return v;
  };
  const auto u32 = [&](std::size_t at) {
    std::uint32_t v;
    std::memcpy(&v, elf.data() + at, 4);
    return v;
  };
  const auto u64 = [&](std::size_t at) {
    std::uint64_t v;
    std::memcpy(&v, elf.data() + at, 8);
    return v;
  };
  if (elf.size() < 64 ||
      std::memcmp(elf.data(),
                  "\x7f"
                  "ELF",
                  4) != 0 ||
      elf[4] != 2)
    return {};
  const std::uint64_t shoff = u64(0x28);
  const std::uint16_t shentsize = u16(0x3A), shnum = u16(0x3C), shstrndx = u16(0x3E);
  const auto header = [&](int i) { return shoff + static_cast<std::uint64_t>(i) * shentsize; };
  const std::uint64_t names = u64(header(shstrndx) + 0x18);
  const std::string wanted = ".text." + kernel;
  for (int i = 0; i < shnum; ++i) {
    const std::uint64_t h = header(i);
    if (wanted != elf.data() + names + u32(h)) continue;
    const std::uint64_t off = u64(h + 0x18), size = u64(h + 0x20);
    return {elf.data() + off, elf.data() + off + size};
  }
  return {};
}

std::vector<char> read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

struct Builds {
  std::string mangled;
  CompileResult nvrtc;
  std::vector<char> nvcc_cubin;
  std::map<std::string, Resources> nvcc_resources;
};

// `dims` of contact, its baseline, built by tune's path and by nvcc as the bench builds it.
Builds build_baseline_both_ways(const std::vector<std::pair<std::string, std::int64_t>>& dims) {
  const Space space = load_space("contact", std::nullopt);
  const Shape shape = resolve_shape(find_problem("contact"), space, dims);
  const Lowered lowered = space.lower(space.baseline(), shape, DeviceLimits::for_arch(90));
  Builds b;
  b.nvrtc = compile(compile_request(lowered, default_options(90)));
  if (!b.nvrtc.ok) ADD_FAILURE() << b.nvrtc.log;
  if (b.nvrtc.lowered_names.empty()) return b;
  b.mangled = b.nvrtc.lowered_names.at(0);

  const fs::path dir = fs::path(TUNE_BINARY_DIR) / "build_parity_test";
  fs::create_directories(dir);
  const fs::path src = dir / "baseline.cu", cubin = dir / "baseline.cubin", log = dir / "baseline.log";
  // The template and its headers by the names NVRTC knows them by (the template's folder and the
  // problem's include_dirs), so nvcc reads exactly what tune compiled.
  const fs::path include = dir / "templates";
  fs::remove_all(include);
  const auto write = [&](const std::string& name, const std::string& text) {
    fs::create_directories((include / name).parent_path());
    std::ofstream(include / name, std::ios::binary) << text;
  };
  write(lowered.sources->main_name, lowered.sources->main);
  for (const auto& [name, text] : lowered.sources->headers) write(name, text);
  std::ofstream(src) << "#include \"" << lowered.sources->main_name << "\"\n"
                     << "const void* const tune_kernel = reinterpret_cast<const void*>(&::"
                     << lowered.launches.at(0).name_expression << ");\n";
  const std::string cmd = std::string(TUNE_NVCC) + " -cubin -arch=sm_90 -O3 -DNDEBUG -std=c++17 " +
                          TUNE_KERNELS_NVCC_OPTIONS + " -Xptxas -v -I " + include.string() + " " + src.string() + " -o " +
                          cubin.string() + " > " + log.string() + " 2>&1";
  if (std::system(cmd.c_str()) != 0) {
    std::ifstream in(log);
    ADD_FAILURE() << cmd << "\n" << std::string(std::istreambuf_iterator<char>(in), {});
    return b;
  }
  b.nvcc_cubin = read_bytes(cubin);
  std::ifstream in(log);
  b.nvcc_resources = parse_ptxas_report(std::string(std::istreambuf_iterator<char>(in), {}));
  return b;
}

TEST(BuildParity, SeedDesignBaselineB4N64MatchesTheNvccBuild) {
  const Builds b = build_baseline_both_ways({{"B", 4}, {"N", 64}});
  ASSERT_FALSE(b.mangled.empty());
  ASSERT_FALSE(b.nvcc_cubin.empty());
  const auto rtc = b.nvrtc.resources.find(b.mangled);
  const auto cc = b.nvcc_resources.find(b.mangled);
  ASSERT_NE(rtc, b.nvrtc.resources.end()) << b.nvrtc.log;
  ASSERT_NE(cc, b.nvcc_resources.end()) << "nvcc built another kernel than " << b.mangled;
  EXPECT_EQ(rtc->second.registers, cc->second.registers);
  EXPECT_EQ(rtc->second.stack_frame_bytes, cc->second.stack_frame_bytes);
  EXPECT_EQ(rtc->second.spill_store_bytes, cc->second.spill_store_bytes);
  EXPECT_EQ(rtc->second.spill_load_bytes, cc->second.spill_load_bytes);
  EXPECT_EQ(rtc->second.static_smem_bytes, cc->second.static_smem_bytes);
  EXPECT_EQ(rtc->second.barriers, cc->second.barriers);
  const std::string a = kernel_text(b.nvrtc.cubin, b.mangled), c = kernel_text(b.nvcc_cubin, b.mangled);
  ASSERT_FALSE(a.empty());
  ASSERT_FALSE(c.empty());
  const double na = static_cast<double>(a.size()) / 16, nc = static_cast<double>(c.size()) / 16;
  std::cout << "contact B4 N64 baseline " << b.mangled << ": NVRTC " << na << " instructions, nvcc " << nc << ", "
            << rtc->second.registers << " / " << cc->second.registers << " registers\n";
  EXPECT_TRUE(a == c) << "NVRTC " << na << " instructions, nvcc " << nc << ": not the same machine code";
}

// -lineinfo is in default_options for compute-sanitizer's reports and must not change the code:
// the results of record were measured without it.
TEST(BuildParity, LineinfoLeavesTheMachineCodeAlone) {
  const Space space = load_space("contact", std::nullopt);
  const Shape shape = resolve_shape(find_problem("contact"), space, {{"B", 4}, {"N", 64}});
  const Lowered lowered = space.lower(space.baseline(), shape, DeviceLimits::for_arch(90));
  std::vector<std::string> plain = default_options(90);
  ASSERT_NE(std::find(plain.begin(), plain.end(), "-lineinfo"), plain.end());
  plain.erase(std::find(plain.begin(), plain.end(), "-lineinfo"));
  const CompileResult with = compile(compile_request(lowered, default_options(90)));
  const CompileResult without = compile(compile_request(lowered, plain));
  ASSERT_TRUE(with.ok && without.ok) << with.log << without.log;
  const std::string name = with.lowered_names.at(0);
  const std::string a = kernel_text(with.cubin, name), b = kernel_text(without.cubin, name);
  ASSERT_FALSE(a.empty());
  EXPECT_TRUE(a == b) << "-lineinfo changed " << name << "'s machine code";
}

}  // namespace
}  // namespace tune

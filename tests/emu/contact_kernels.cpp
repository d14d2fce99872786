// The contact kernels the emulation test runs, instantiated for the host (emu_cuda.hpp), each
// registered under the name expression tune lowers its configuration to, so the test can ask tune
// for a configuration's launch and find the kernel that matches it.
#include "emu_cuda.hpp"
// clang-format off
#include "contact.cuh"
#include "emu_ptx.hpp"
// clang-format on

#include "contact_kernels.hpp"

#include <algorithm>
#include <map>

namespace {

using Launcher = void (*)(const float* const*, float*);
std::map<std::string, Launcher>& registry() {
  static std::map<std::string, Launcher> r;
  return r;
}

struct Register {
  Register(std::string name, Launcher f) {
    name.erase(std::remove(name.begin(), name.end(), ' '), name.end());
    registry()[name] = f;
  }
};

#define TUNE_EMU_CAT2(a, b) a##b
#define TUNE_EMU_CAT(a, b) TUNE_EMU_CAT2(a, b)
#define TUNE_EMU_KERNEL_(...)                                                                         \
  const Register TUNE_EMU_CAT(reg_, __COUNTER__)("contact_kernel<" #__VA_ARGS__ ">", [](const float* const* a, float* o) { \
    contact_kernel<__VA_ARGS__>(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], o);             \
  });
#define TUNE_EMU_KERNEL(...) TUNE_EMU_KERNEL_(__VA_ARGS__)

// Template arguments after the shape: STRATEGY, MAPPING, BLOCK, TILE_I, TILE_J, STAGE_T, SMEM_W,
// PAIRS, SYM, ASYNC, NSPLIT, PREC, LNROW, PERSIST (configs/contact/problem.json's template_args).
#define TUNE_EMU_CONFIGS(...)                                     \
  TUNE_EMU_KERNEL(__VA_ARGS__, 0, 0, 128, 1, 1, 0, 1, 1, 0, 0, 1, 0, 0, 0)  \
  TUNE_EMU_KERNEL(__VA_ARGS__, 0, 1, 64, 8, 8, 1, 1, 1, 1, 1, 1, 0, 0, 0)   \
  TUNE_EMU_KERNEL(__VA_ARGS__, 1, 1, 128, 4, 8, 1, 1, 1, 0, 1, 1, 0, 0, 0)  \
  TUNE_EMU_KERNEL(__VA_ARGS__, 2, 1, 128, 8, 8, 1, 1, 1, 1, 1, 1, 0, 0, 0)  \
  TUNE_EMU_KERNEL(__VA_ARGS__, 2, 1, 128, 8, 8, 1, 1, 1, 1, 1, 1, 1, 1, 0)  \
  TUNE_EMU_KERNEL(__VA_ARGS__, 2, 1, 64, 4, 8, 1, 1, 1, 0, 1, 1, 0, 0, 0)   \
  TUNE_EMU_KERNEL(__VA_ARGS__, 2, 2, 64, 4, 4, 1, 1, 1, 1, 1, 1, 1, 1, 0)   \
  TUNE_EMU_KERNEL(__VA_ARGS__, 2, 2, 64, 4, 4, 1, 1, 2, 1, 1, 1, 0, 1, 1)   \
  TUNE_EMU_KERNEL(__VA_ARGS__, 2, 2, 32, 8, 8, 1, 1, 1, 1, 1, 1, 1, 0, 1)

// Two shapes with ragged tiles (N % 8 != 0); the second pads H to 40 for the tensor cores. The
// first also runs the variants its H allows: NSPLIT 2 and MLP weights read from global memory.
TUNE_EMU_CONFIGS(2, 13, 24, 16)
TUNE_EMU_KERNEL(2, 13, 24, 16, 2, 1, 256, 8, 8, 1, 1, 1, 1, 0, 2, 0, 0, 0)
TUNE_EMU_KERNEL(2, 13, 24, 16, 2, 2, 32, 4, 4, 1, 0, 2, 1, 1, 1, 0, 0, 0)
TUNE_EMU_CONFIGS(1, 9, 40, 36)
// The odd shape of Device.FreshSeededInputsAtAnOddShape (C and H the defaults), in three of the
// configurations that failed there: warp, thread (sym) and mma tiles.
TUNE_EMU_KERNEL(3, 37, 64, 32, 1, 1, 64, 2, 4, 1, 0, 1, 0, 1, 1, 0, 0, 0)
TUNE_EMU_KERNEL(3, 37, 64, 32, 0, 1, 64, 8, 8, 1, 0, 1, 1, 1, 1, 0, 0, 0)
TUNE_EMU_KERNEL(3, 37, 64, 32, 2, 1, 128, 8, 8, 1, 1, 1, 1, 1, 1, 0, 0, 0)

}  // namespace

namespace tune::emu {

bool run_contact(const std::string& name_expression, unsigned grid, unsigned block, const float* const* args,
                 float* out, std::vector<float>& smem_after, std::size_t smem_floats) {
  const auto it = registry().find(name_expression);
  if (it == registry().end()) return false;
  const Launcher f = it->second;
  float* sm = reinterpret_cast<float*>(tune_kernels::contact::tune_contact_smem);
  std::fill(sm, sm + kEmuSmemFloats, 1.0e30f);  // a canary no kernel writes
  emu_launch(grid, block, [&] { f(args, out); });
  smem_after.assign(sm + std::min(smem_floats, kEmuSmemFloats), sm + kEmuSmemFloats);
  return true;
}

std::vector<std::string> contact_kernel_names() {
  std::vector<std::string> names;
  for (const auto& [n, f] : registry()) names.push_back(n);
  return names;
}

}  // namespace tune::emu

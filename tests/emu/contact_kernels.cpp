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

struct Entry {
  void (*launch)(const void* const*, void*);
  int smem_bytes;  // the kernel's own SmemLayout::kBytes
};
std::map<std::string, Entry>& registry() {
  static std::map<std::string, Entry> r;
  return r;
}

struct Register {
  Register(std::string name, Entry e) {
    name.erase(std::remove(name.begin(), name.end(), ' '), name.end());
    registry()[name] = e;
  }
};

template <class T, int B, int N, int C, int H, int... Rest>
constexpr Entry entry() {
  return {[](const void* const* a, void* o) {
            const auto in = [&](int k) { return static_cast<const T*>(a[k]); };
            contact_kernel<T, B, N, C, H, Rest...>(in(0), in(1), in(2), in(3), in(4), in(5), in(6), in(7), in(8),
                                                   static_cast<T*>(o));
          },
          0};
}

// SmemLayout's arguments from the kernel's: STRATEGY, MAPPING, BLOCK, TILE_I, TILE_J, STAGE_T, SMEM_W, PAIRS.
template <class T, int B, int N, int C, int H, int S, int M, int BL, int TI, int TJ, int ST, int SW, int P, int... Rest>
constexpr int smem_bytes() {
  return tune_kernels::contact::SmemLayout<T, C, H, S, M, BL, TI, TJ, ST, SW, P>::kBytes;
}

#define TUNE_EMU_CAT2(a, b) a##b
#define TUNE_EMU_CAT(a, b) TUNE_EMU_CAT2(a, b)
#define TUNE_EMU_KERNEL_(...)                                                        \
  const Register TUNE_EMU_CAT(reg_, __COUNTER__)("contact_kernel<" #__VA_ARGS__ ">", \
                                                 Entry{entry<__VA_ARGS__>().launch, smem_bytes<__VA_ARGS__>()});
#define TUNE_EMU_KERNEL(...) TUNE_EMU_KERNEL_(__VA_ARGS__)

// Template arguments after the type and the shape: STRATEGY, MAPPING, BLOCK, TILE_I, TILE_J, STAGE_T, SMEM_W,
// PAIRS, SYM, ASYNC, NSPLIT, PREC, LNROW, PERSIST (configs/contact/problem.json's template_args).
#define TUNE_EMU_CONFIGS(...)                                              \
  TUNE_EMU_KERNEL(__VA_ARGS__, 0, 0, 128, 1, 1, 0, 1, 1, 0, 0, 1, 0, 0, 0) \
  TUNE_EMU_KERNEL(__VA_ARGS__, 0, 1, 64, 8, 8, 1, 1, 1, 1, 1, 1, 0, 0, 0)  \
  TUNE_EMU_KERNEL(__VA_ARGS__, 1, 1, 128, 4, 8, 1, 1, 1, 0, 1, 1, 0, 0, 0) \
  TUNE_EMU_KERNEL(__VA_ARGS__, 2, 1, 128, 8, 8, 1, 1, 1, 1, 1, 1, 0, 0, 0) \
  TUNE_EMU_KERNEL(__VA_ARGS__, 2, 1, 128, 8, 8, 1, 1, 1, 1, 1, 1, 1, 1, 0) \
  TUNE_EMU_KERNEL(__VA_ARGS__, 2, 1, 64, 4, 8, 1, 1, 1, 0, 1, 1, 0, 0, 0)  \
  TUNE_EMU_KERNEL(__VA_ARGS__, 2, 2, 64, 4, 4, 1, 1, 1, 1, 1, 1, 1, 1, 0)  \
  TUNE_EMU_KERNEL(__VA_ARGS__, 2, 2, 64, 4, 4, 1, 1, 2, 1, 1, 1, 0, 1, 1)  \
  TUNE_EMU_KERNEL(__VA_ARGS__, 2, 2, 32, 8, 8, 1, 1, 1, 1, 1, 1, 1, 0, 1)

// Two shapes with ragged tiles (N % 8 != 0); the second pads H to 40 for the tensor cores. The
// first also runs the variants its H allows: NSPLIT 2 and MLP weights read from global memory.
TUNE_EMU_CONFIGS(float, 2, 13, 24, 16)
TUNE_EMU_KERNEL(float, 2, 13, 24, 16, 2, 1, 256, 8, 8, 1, 1, 1, 1, 0, 2, 0, 0, 0)
TUNE_EMU_KERNEL(float, 2, 13, 24, 16, 2, 2, 32, 4, 4, 1, 0, 2, 1, 1, 1, 0, 0, 0)
TUNE_EMU_CONFIGS(float, 1, 9, 40, 36)
// The odd shape of Device.FreshSeededInputsAtAnOddShape (C and H the defaults), in three of the
// configurations that failed there: warp, thread (sym) and mma tiles.
TUNE_EMU_KERNEL(float, 3, 37, 64, 32, 1, 1, 64, 2, 4, 1, 0, 1, 0, 1, 1, 0, 0, 0)
TUNE_EMU_KERNEL(float, 3, 37, 64, 32, 0, 1, 64, 8, 8, 1, 0, 1, 1, 1, 1, 0, 0, 0)
TUNE_EMU_KERNEL(float, 3, 37, 64, 32, 2, 1, 128, 8, 8, 1, 1, 1, 1, 1, 1, 0, 0, 0)

// T = bfloat16 (issue 35): every strategy and mapping, the mma strategy in bfloat16 MMAs (PREC 2),
// at C % 16 == 0 (B2 N13 C32 H16: H a whole k-step, so also the global-weight warp_tile; B1 N9 C48
// H36: H padded to 48) and the thread and warp strategies at C = 24 (16-byte rows, no padding).
#define TUNE_EMU_BF16_PLAIN(...)                                           \
  TUNE_EMU_KERNEL(__VA_ARGS__, 0, 0, 128, 1, 1, 0, 1, 1, 0, 0, 1, 0, 0, 0) \
  TUNE_EMU_KERNEL(__VA_ARGS__, 0, 1, 64, 8, 8, 1, 1, 1, 1, 1, 1, 0, 0, 0)  \
  TUNE_EMU_KERNEL(__VA_ARGS__, 1, 1, 128, 4, 8, 1, 1, 1, 0, 1, 1, 0, 0, 0)
#define TUNE_EMU_BF16_MMA(...)                                             \
  TUNE_EMU_KERNEL(__VA_ARGS__, 2, 1, 128, 8, 8, 1, 1, 1, 1, 1, 1, 2, 0, 0) \
  TUNE_EMU_KERNEL(__VA_ARGS__, 2, 1, 128, 8, 8, 1, 1, 1, 1, 1, 1, 2, 1, 0) \
  TUNE_EMU_KERNEL(__VA_ARGS__, 2, 1, 64, 4, 8, 1, 1, 1, 0, 0, 1, 2, 0, 0)  \
  TUNE_EMU_KERNEL(__VA_ARGS__, 2, 2, 64, 4, 4, 1, 1, 2, 1, 1, 1, 2, 1, 1)
TUNE_EMU_BF16_PLAIN(__nv_bfloat16, 2, 13, 32, 16)
TUNE_EMU_BF16_MMA(__nv_bfloat16, 2, 13, 32, 16)
TUNE_EMU_KERNEL(__nv_bfloat16, 2, 13, 32, 16, 2, 2, 32, 4, 4, 1, 0, 2, 1, 1, 1, 2, 0, 1)
TUNE_EMU_BF16_PLAIN(__nv_bfloat16, 1, 9, 48, 36)
TUNE_EMU_KERNEL(__nv_bfloat16, 1, 9, 48, 36, 1, 0, 128, 1, 1, 0, 0, 1, 0, 0, 1, 0, 0, 0)
TUNE_EMU_BF16_MMA(__nv_bfloat16, 1, 9, 48, 36)
TUNE_EMU_BF16_PLAIN(__nv_bfloat16, 2, 13, 24, 16)

}  // namespace

namespace tune::emu {

bool run_contact(const std::string& name_expression, unsigned grid, unsigned block, const void* const* args, void* out,
                 std::vector<float>& smem_after, std::size_t smem_floats) {
  const auto it = registry().find(name_expression);
  if (it == registry().end()) return false;
  const auto launch = it->second.launch;
  float* sm = reinterpret_cast<float*>(tune_kernels::contact::tune_contact_smem);
  std::fill(sm, sm + kEmuSmemFloats, 1.0e30f);  // a canary no kernel writes
  emu_launch(grid, block, [&] { launch(args, out); });
  smem_after.assign(sm + std::min(smem_floats, kEmuSmemFloats), sm + kEmuSmemFloats);
  return true;
}

int contact_smem_bytes(const std::string& name_expression) {
  const auto it = registry().find(name_expression);
  return it == registry().end() ? -1 : it->second.smem_bytes;
}

std::vector<std::string> contact_kernel_names() {
  std::vector<std::string> names;
  for (const auto& [n, f] : registry()) names.push_back(n);
  return names;
}

}  // namespace tune::emu

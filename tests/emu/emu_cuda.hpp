// Host emulation of the CUDA features kernel_templates/contact/contact.cuh uses, so its kernels run as
// plain C++ on a machine without a GPU: one std::thread per CUDA thread, std::barrier for
// __syncthreads / __syncwarp / named barriers, warp shuffles through a per-block exchange array,
// mma.sync m16n8k8 .tf32 computed per the PTX ISA fragment layouts (operands truncated to TF32 as
// the tensor cores read them) and m16n8k16 .bf16, bfloat16 as a 16-bit type rounded to nearest
// even, and cp.async copies held back per thread until a wait retires
// their group (so a read that comes before its wait sees stale data and fails parity).
// Include this, then contact.cuh, then emu_ptx.hpp, in one translation unit.
#pragma once
#include <barrier>
#include <cassert>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__
#define __launch_bounds__(x)

struct alignas(16) float4 {
  float x, y, z, w;
};
struct alignas(8) float2 {
  float x, y;
};
inline float4 make_float4(float a, float b, float c, float d) { return {a, b, c, d}; }
inline float2 make_float2(float a, float b) { return {a, b}; }
struct alignas(16) uint4 {
  unsigned x, y, z, w;
};
struct alignas(8) uint2 {
  unsigned x, y;
};
inline uint4 make_uint4(unsigned a, unsigned b, unsigned c, unsigned d) { return {a, b, c, d}; }
inline uint2 make_uint2(unsigned a, unsigned b) { return {a, b}; }
inline float __uint_as_float(unsigned u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline unsigned __float_as_uint(float f) {
  unsigned u;
  std::memcpy(&u, &f, 4);
  return u;
}
// bfloat16: the high half of a float; rounding to nearest even (NaN stays a quiet NaN).
inline unsigned short emu_bf16_bits(float f) {
  const unsigned u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<unsigned short>((u >> 16) | 0x40u);
  return static_cast<unsigned short>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
struct __nv_bfloat16 {
  unsigned short x;
  __nv_bfloat16() = default;
  explicit __nv_bfloat16(float f) : x(emu_bf16_bits(f)) {}
};
inline float __bfloat162float(__nv_bfloat16 h) { return __uint_as_float(static_cast<unsigned>(h.x) << 16); }
inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __nv_bfloat16(f); }
inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 h) { return h.x; }
struct Dim3 {
  unsigned x = 0, y = 0, z = 0;
};
inline thread_local Dim3 threadIdx;
inline Dim3 blockIdx;
inline Dim3 gridDim;

struct EmuBlock {
  std::barrier<>* block_bar;
  std::vector<std::unique_ptr<std::barrier<>>> warp_bar;
  std::vector<float> xch;  // per-lane exchange slot
  std::vector<float> mx;   // per-lane mma operands
};
inline EmuBlock* g_emu = nullptr;

inline void check_align(const void* p) {
  if (reinterpret_cast<std::uintptr_t>(p) % 16 != 0) {
    std::fprintf(stderr, "misaligned float4 access\n");
    std::abort();
  }
}
inline float __ldg(const float* p) { return *p; }
inline float4 __ldg(const float4* p) {
  check_align(p);
  return *p;
}
inline float2 __ldg(const float2* p) { return *p; }
inline __nv_bfloat16 __ldg(const __nv_bfloat16* p) { return *p; }
inline unsigned __ldg(const unsigned* p) { return *p; }
inline uint2 __ldg(const uint2* p) { return *p; }
inline uint4 __ldg(const uint4* p) {
  check_align(p);
  return *p;
}
inline void __syncthreads() { g_emu->block_bar->arrive_and_wait(); }
inline void __syncwarp() { g_emu->warp_bar[threadIdx.x / 32]->arrive_and_wait(); }
inline float __shfl_xor_sync(unsigned mask, float v, int off) {
  assert(mask == 0xffffffffu);
  const unsigned t = threadIdx.x, w = t / 32;
  g_emu->xch[t] = v;
  g_emu->warp_bar[w]->arrive_and_wait();
  const float r = g_emu->xch[(w * 32) + ((t % 32) ^ off)];
  g_emu->warp_bar[w]->arrive_and_wait();
  return r;
}
inline float expf(float v) { return std::exp(v); }
inline float sqrtf(float v) { return std::sqrt(v); }
using std::fmaf;
using std::fmaxf;
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }

// Dynamic shared memory: big static array; the harness checks the bytes past the config's size.
// The template declares it (extern __shared__, smem_layout.cuh) inside its namespace.
inline constexpr std::size_t kEmuSmemFloats = 80 * 1024;
namespace tune_kernels::contact {
alignas(16) inline float4 tune_contact_smem[kEmuSmemFloats / 4];
}

template <class F>
void emu_launch(unsigned grid, unsigned block, F kernel) {
  gridDim.x = grid;
  for (unsigned b = 0; b < grid; ++b) {
    blockIdx.x = b;
    std::barrier<> bar(block);
    EmuBlock eb;
    eb.block_bar = &bar;
    for (unsigned w = 0; w < block / 32; ++w) eb.warp_bar.push_back(std::make_unique<std::barrier<>>(32));
    eb.xch.assign(block, 0.f);
    eb.mx.assign(block * 10, 0.f);  // per lane: mma_tf32's 6 floats, or mma_bf16's 6 words (bit copies)
    g_emu = &eb;
    std::vector<std::thread> ts;
    for (unsigned t = 0; t < block; ++t)
      ts.emplace_back([t, &kernel] {
        threadIdx.x = t;
        kernel();
      });
    for (auto& th : ts) th.join();
  }
}

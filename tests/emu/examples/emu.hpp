#pragma once
// Host emulation of what the example kernels (examples/rmsnorm, examples/embedding_bag) use: one
// std::thread per CUDA thread, blocks one after another (so a function's `static` array is the
// block's shared memory), std::barrier for __syncthreads and the warp shuffles, and the cache-hint
// loads as plain loads that check their alignment. Include it before the kernels.
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <thread>
#include <vector>

#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static
#define __launch_bounds__(x)

struct alignas(8) uint2 {
  unsigned x, y;
};
struct alignas(16) uint4 {
  unsigned x, y, z, w;
};
struct Dim3 {
  unsigned x = 0, y = 0, z = 0;
};
inline thread_local Dim3 threadIdx;
inline Dim3 blockIdx;

namespace emu {
struct Block {
  std::barrier<>* block;
  std::vector<std::unique_ptr<std::barrier<>>> warps;
  std::vector<float> exchange;  // a slot per thread
};
inline Block* current = nullptr;

// Every block of the grid, in order; `kernel` is the launch for the current thread.
template <class F>
void launch(unsigned grid_x, unsigned grid_y, int block, F kernel) {
  for (unsigned by = 0; by < grid_y; ++by)
    for (unsigned bx = 0; bx < grid_x; ++bx) {
      blockIdx = {bx, by, 0};
      std::barrier<> bar(block);
      Block b{&bar, {}, std::vector<float>(block)};
      for (int w = 0; w < (block + 31) / 32; ++w) b.warps.push_back(std::make_unique<std::barrier<>>(32));
      current = &b;
      std::vector<std::thread> threads;
      for (int t = 0; t < block; ++t)
        threads.emplace_back([&, t] {
          threadIdx = {static_cast<unsigned>(t), 0, 0};
          kernel();
        });
      for (auto& t : threads) t.join();
    }
}
}  // namespace emu

template <class R>
R __ldg(const R* p) {
  if (reinterpret_cast<std::uintptr_t>(p) % alignof(R) != 0) {
    std::fprintf(stderr, "misaligned %zu-byte load\n", sizeof(R));
    std::abort();
  }
  return *p;
}
template <class R>
R __ldcs(const R* p) {
  return __ldg(p);
}
inline void __syncthreads() { emu::current->block->arrive_and_wait(); }
inline float __shfl_xor_sync(unsigned, float v, int lane_mask) {
  const unsigned t = threadIdx.x, w = t / 32;
  emu::current->exchange[t] = v;
  emu::current->warps[w]->arrive_and_wait();
  const float r = emu::current->exchange[w * 32 + ((t % 32) ^ lane_mask)];
  emu::current->warps[w]->arrive_and_wait();
  return r;
}
inline float rsqrtf(float v) { return 1.f / std::sqrt(v); }

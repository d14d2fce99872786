// Shared by the timing tools (contact_phases, tools/experiments/sg_probes): include before the kernel
// template; contact_phases defines its phase-mark macro as phases_mark<MARKS>(k).
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define PHASES_CHECK(x)                                            \
  do {                                                             \
    cudaError_t e = (x);                                           \
    if (e != cudaSuccess) {                                        \
      std::fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e)); \
      std::exit(1);                                                \
    }                                                              \
  } while (0)

// [warp][mark][2]: %globaltimer and %clock64 of each warp's lane 0 at each mark; null: no marks.
__device__ unsigned long long* g_marks;

// DEFERRED: lane 0 keeps its warp's marks in shared memory and writes them out at the last mark
// (MARKS - 1), so no global load or store sits between two marks (the first load of g_marks, a
// DRAM round trip on a cold L2, would otherwise stall the warp at its first mark and shift every
// later one). Only for kernels whose warps all reach the last mark.
__device__ __forceinline__ void phases_clocks(unsigned long long& gt, unsigned long long& ck) {
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(gt));
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(ck));
}
template <int MARKS, bool DEFERRED = false>
__device__ __forceinline__ void phases_mark(int mark) {
  if constexpr (DEFERRED) {
    __shared__ unsigned long long held[32][MARKS][2];  // [warp of the block][mark][globaltimer, clock64]
    if ((threadIdx.x & 31) == 0) {
      const unsigned wl = threadIdx.x / 32;
      unsigned long long gt, ck;
      phases_clocks(gt, ck);
      if (mark == 0) {
        for (int k = 1; k < MARKS; ++k) held[wl][k][0] = held[wl][k][1] = 0;  // a skipped mark reads 0
      }
      held[wl][mark][0] = gt;
      held[wl][mark][1] = ck;
      if (mark == MARKS - 1 && g_marks) {
        const unsigned w = blockIdx.x * (blockDim.x / 32) + wl;
        for (int k = 0; k < MARKS; ++k) {
          g_marks[(w * MARKS + k) * 2] = held[wl][k][0];
          g_marks[(w * MARKS + k) * 2 + 1] = held[wl][k][1];
        }
      }
    }
  } else if ((threadIdx.x & 31) == 0 && g_marks) {
    unsigned long long gt, ck;
    phases_clocks(gt, ck);
    const unsigned w = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    g_marks[(w * MARKS + mark) * 2] = gt;
    g_marks[(w * MARKS + mark) * 2 + 1] = ck;
  }
}

inline double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(q * (v.size() - 1) + 0.5)];
}

// Event times (µs) of `samples` launches after 5 unrecorded ones; with `flush`, its `flush_bytes`
// are rewritten before each launch (a cold L2, as tune measures).
template <class Launch>
std::vector<double> event_times(const Launch& launch, int samples, void* flush, std::size_t flush_bytes) {
  cudaEvent_t e0, e1;
  PHASES_CHECK(cudaEventCreate(&e0));
  PHASES_CHECK(cudaEventCreate(&e1));
  std::vector<double> us;
  for (int s = 0; s < samples + 5; ++s) {
    if (flush) PHASES_CHECK(cudaMemsetAsync(flush, s & 0xff, flush_bytes));
    PHASES_CHECK(cudaEventRecord(e0));
    launch();
    PHASES_CHECK(cudaEventRecord(e1));
    PHASES_CHECK(cudaEventSynchronize(e1));
    float ms;
    PHASES_CHECK(cudaEventElapsedTime(&ms, e0, e1));
    if (s >= 5) us.push_back(ms * 1000.0);
  }
  PHASES_CHECK(cudaEventDestroy(e0));
  PHASES_CHECK(cudaEventDestroy(e1));
  return us;
}

#pragma once
// Problem rmsnorm (examples/rmsnorm, reference.py):
//   out[m, k] = x[m, k] / sqrt(mean_k(x[m, :]^2) + 1e-6) * weight[k]
// x and out are (M, K), weight (K), all of the element type T (float, __nv_bfloat16 or __half:
// problem.json's dtype variable T), row-major. Every element is widened to float on load, the sum
// of squares and the product are float, and the result is rounded to T once on store.
//
// A block normalises ROWS rows; a team of BLOCK / ROWS threads shares a row. A thread keeps its
// part of the row in registers (kIters vectors of VEC elements, VEC * sizeof(T) bytes a load), so
// x is read from global memory once; the team's sum of squares is a shuffle reduction (teams of
// at most 32 threads) or shuffles then shared memory (larger teams).
//
// Template parameters (problem.json's template_args, in order):
//   T         the element type.
//   M, K      the shape, compile-time so every loop bound and guard folds.
//   BLOCK     threads per block (a power of two).
//   VEC       elements per load and store; K % VEC == 0 keeps every row's vectors aligned.
//   ROWS      rows per block (a power of two dividing BLOCK).
// Launch: grid (cdiv(M, ROWS)), block (BLOCK), no dynamic shared memory.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace tune_kernels::rmsnorm {

constexpr float kEps = 1e-6f;

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }

template <typename T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}
template <>
__device__ __forceinline__ __half from_float<__half>(float v) {
  return __float2half_rn(v);
}

// VEC elements moved as one aligned load or store (ld.global.v4 for 16 bytes).
template <typename T, int VEC>
struct alignas(sizeof(T) * VEC) Pack {
  T e[VEC];
};

// The sum of `v` over the team of TEAM consecutive threads (TEAM a power of two); every thread of
// the team gets it. Larger teams than a warp meet in `part` (one float a warp).
template <int TEAM, int BLOCK>
__device__ __forceinline__ float team_sum(float v, float* part) {
#pragma unroll
  for (int o = (TEAM < 32 ? TEAM : 32) / 2; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  if constexpr (TEAM > 32) {
    constexpr int kWarps = TEAM / 32;
    const int warp = threadIdx.x / 32;
    if (threadIdx.x % 32 == 0) part[warp] = v;
    __syncthreads();
    const float* mine = part + (warp / kWarps) * kWarps;
    v = 0.f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) v += mine[w];
  }
  return v;
}

}  // namespace tune_kernels::rmsnorm

template <typename T, int M, int K, int BLOCK, int VEC, int ROWS>
__global__ void __launch_bounds__(BLOCK)
    rmsnorm_kernel(const T* __restrict__ x, const T* __restrict__ weight, T* __restrict__ out) {
  namespace k = tune_kernels::rmsnorm;
  using P = k::Pack<T, VEC>;
  constexpr int kTeam = BLOCK / ROWS;
  constexpr int kVectors = K / VEC;                       // per row
  constexpr int kIters = (kVectors + kTeam - 1) / kTeam;  // per thread
  constexpr bool kRagged = kVectors % kTeam != 0;
  static_assert(M >= 1 && K >= 1, "empty shape");
  static_assert(K % VEC == 0, "K must be a multiple of VEC");
  static_assert(BLOCK % ROWS == 0 && (kTeam & (kTeam - 1)) == 0, "a team is a power of two threads");
  static_assert(kTeam <= 32 || kTeam % 32 == 0, "a team of more than a warp is whole warps");
  __shared__ float part[BLOCK / 32 > 0 ? BLOCK / 32 : 1];

  const int lane = threadIdx.x % kTeam;
  const int m = blockIdx.x * ROWS + threadIdx.x / kTeam;
  // Rows past M (the last block, M % ROWS != 0) read row M - 1 and store nothing, so every thread
  // of the block reaches the barrier of team_sum.
  const bool live = M % ROWS == 0 || m < M;
  const long long row = static_cast<long long>(live ? m : M - 1) * K;
  const P* xr = reinterpret_cast<const P*>(x + row);

  float v[kIters][VEC];
  float ss = 0.f;
#pragma unroll
  for (int i = 0; i < kIters; ++i) {
    const int c = lane + i * kTeam;
    if (!kRagged || c < kVectors) {
      const P p = xr[c];
#pragma unroll
      for (int j = 0; j < VEC; ++j) {
        v[i][j] = k::to_float(p.e[j]);
        ss += v[i][j] * v[i][j];
      }
    }
  }
  ss = k::team_sum<kTeam, BLOCK>(ss, part);
  const float scale = rsqrtf(ss / K + k::kEps);
  if (!live) return;

  const P* wr = reinterpret_cast<const P*>(weight);
  P* orow = reinterpret_cast<P*>(out + row);
#pragma unroll
  for (int i = 0; i < kIters; ++i) {
    const int c = lane + i * kTeam;
    if (!kRagged || c < kVectors) {
      const P w = wr[c];
      P o;
#pragma unroll
      for (int j = 0; j < VEC; ++j) o.e[j] = k::from_float<T>(v[i][j] * scale * k::to_float(w.e[j]));
      orow[c] = o;
    }
  }
}

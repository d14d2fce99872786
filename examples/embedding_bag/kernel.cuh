#pragma once
// Problem embedding_bag (examples/embedding_bag, reference.py), nn.EmbeddingBag(N, D, mode="sum")
// on a 2-D input:
//   out[b, d] = sum_l weight[indices[b, l], d]
// weight is (N, D) and out (B, D), of the element type T (float or __nv_bfloat16: problem.json's
// dtype variable T); indices is (B, L) int64 (long long), each in [0, N). Rows are gathered and
// widened to float, summed in float in the order of l, and rounded to T once on store.
//
// A block sums BAGS bags over D / DSPLIT columns (blockIdx.y picks the columns); a team of
// BLOCK / BAGS threads shares a bag, each thread a set of VEC-element vectors of its columns
// (vectors lane, lane + team, ...: a team reads each gathered row contiguously). The loop over l
// issues UNROLL index loads, then UNROLL x (vectors per thread) row loads, then adds them: the
// gathers of UNROLL rows are in flight at once.
//
// Template parameters (problem.json's template_args, in order):
//   T          the element type of weight and out.
//   B, L, D    the shape (N is only the range of the indices), compile-time so loops fold.
//   BLOCK      threads per block.
//   BAGS       bags per block (divides BLOCK).
//   VEC        elements per load and store (VEC * sizeof(T) of 4, 8 or 16 bytes); D % (DSPLIT *
//              VEC) == 0 keeps every vector aligned.
//   DSPLIT     blocks sharing a bag, each D / DSPLIT columns (more blocks for few bags).
//   UNROLL     rows gathered per step of the loop over l.
//   WLOAD      how weight rows are read: 0 (ldg) ld.global.nc, the read-only path; 1 (ldcs)
//              ld.global.cs, streaming (evict first: a row of a large table is seldom reused).
// Launch: grid (cdiv(B, BAGS), DSPLIT), block (BLOCK), no shared memory.
#include <cuda_bf16.h>

namespace tune_kernels::embedding_bag {

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

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

// VEC elements moved as one aligned load or store.
template <typename T, int VEC>
struct alignas(sizeof(T) * VEC) Pack {
  T e[VEC];
};

// The unsigned type of a load of BYTES bytes: the cache-hint intrinsics take these.
template <int BYTES>
struct Raw;
template <>
struct Raw<2> {
  using type = unsigned short;
};
template <>
struct Raw<4> {
  using type = unsigned int;
};
template <>
struct Raw<8> {
  using type = uint2;
};
template <>
struct Raw<16> {
  using type = uint4;
};

template <int WLOAD, typename P>
__device__ __forceinline__ P load(const P* p) {
  using R = typename Raw<sizeof(P)>::type;
  const R* r = reinterpret_cast<const R*>(p);
  const R bits = WLOAD == 0 ? __ldg(r) : __ldcs(r);
  P v;
  *reinterpret_cast<R*>(&v) = bits;
  return v;
}

// Rows idx[0 .. STEP - 1] of a bag added into acc: STEP index loads, then every row load (STEP *
// ITERS vectors of VEC elements, the gathers in flight together), then the sums in the order of l.
// A thread's vectors are lane, lane + TEAM, ... of the VECTORS of its columns, which start at w0.
template <int STEP, int D, int ITERS, int VEC, int TEAM, int VECTORS, int WLOAD, typename T>
__device__ __forceinline__ void gather(float (&acc)[ITERS][VEC], const long long* idx, const T* w0, int lane) {
  using P = Pack<T, VEC>;
  constexpr bool kRagged = VECTORS % TEAM != 0;
  long long r[STEP];
#pragma unroll
  for (int u = 0; u < STEP; ++u) r[u] = __ldg(idx + u);
  P p[STEP][ITERS];
#pragma unroll
  for (int u = 0; u < STEP; ++u) {
    const P* row = reinterpret_cast<const P*>(w0 + r[u] * D);
#pragma unroll
    for (int i = 0; i < ITERS; ++i)
      if (!kRagged || lane + i * TEAM < VECTORS) p[u][i] = load<WLOAD>(row + lane + i * TEAM);
  }
#pragma unroll
  for (int u = 0; u < STEP; ++u)
#pragma unroll
    for (int i = 0; i < ITERS; ++i)
      if (!kRagged || lane + i * TEAM < VECTORS)
#pragma unroll
        for (int j = 0; j < VEC; ++j) acc[i][j] += to_float(p[u][i].e[j]);
}

}  // namespace tune_kernels::embedding_bag

template <typename T, int B, int L, int D, int BLOCK, int BAGS, int VEC, int DSPLIT, int UNROLL, int WLOAD>
__global__ void __launch_bounds__(BLOCK)
    embedding_bag_kernel(const long long* __restrict__ indices, const T* __restrict__ weight, T* __restrict__ out) {
  namespace k = tune_kernels::embedding_bag;
  using P = k::Pack<T, VEC>;
  constexpr int kTeam = BLOCK / BAGS;
  constexpr int kCols = D / DSPLIT;                       // columns of a block
  constexpr int kVectors = kCols / VEC;                   // vectors of a block's columns
  constexpr int kIters = (kVectors + kTeam - 1) / kTeam;  // vectors per thread
  constexpr bool kRagged = kVectors % kTeam != 0;
  static_assert(B >= 1 && L >= 1 && D >= 1, "empty shape");
  static_assert(D % (DSPLIT * VEC) == 0, "D must be a multiple of DSPLIT * VEC");
  static_assert(BLOCK % BAGS == 0 && kTeam <= kVectors, "every thread of a team has a vector");
  static_assert(UNROLL >= 1 && UNROLL <= L, "UNROLL in [1, L]");
  static_assert(WLOAD == 0 || WLOAD == 1, "WLOAD is 0 (ldg) or 1 (ldcs)");

  const int lane = threadIdx.x % kTeam;
  const int b = blockIdx.x * BAGS + threadIdx.x / kTeam;
  if (B % BAGS != 0 && b >= B) return;  // the last block's bags past B (no barrier below)
  const long long* idx = indices + static_cast<long long>(b) * L;
  const T* w0 = weight + blockIdx.y * kCols;  // row r of the block's columns at w0 + r * D

  float acc[kIters][VEC];
#pragma unroll
  for (int i = 0; i < kIters; ++i)
#pragma unroll
    for (int j = 0; j < VEC; ++j) acc[i][j] = 0.f;

  constexpr int kMain = L / UNROLL * UNROLL;
#pragma unroll 1
  for (int l0 = 0; l0 < kMain; l0 += UNROLL)
    k::gather<UNROLL, D, kIters, VEC, kTeam, kVectors, WLOAD>(acc, idx + l0, w0, lane);
#pragma unroll
  for (int l = kMain; l < L; ++l) k::gather<1, D, kIters, VEC, kTeam, kVectors, WLOAD>(acc, idx + l, w0, lane);

  P* orow = reinterpret_cast<P*>(out + static_cast<long long>(b) * D + blockIdx.y * kCols);
#pragma unroll
  for (int i = 0; i < kIters; ++i) {
    if (!kRagged || lane + i * kTeam < kVectors) {
      P o;
#pragma unroll
      for (int j = 0; j < VEC; ++j) o.e[j] = k::from_float<T>(acc[i][j]);
      orow[lane + i * kTeam] = o;
    }
  }
}

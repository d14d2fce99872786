#pragma once
// Helpers of kernel.cuh (problem ln_linear_gelu): shared-memory layout, warp reductions, the
// LayerNorm of a block's rows and the register-tiled multiply-accumulate. No system headers:
// NVRTC compiles this folder as it is, and nvcc compiles it when a .cu file includes kernel.cuh.

namespace tune_kernels {
namespace ln_linear_gelu {

__host__ __device__ constexpr int cdiv(int a, int b) { return (a + b - 1) / b; }
__host__ __device__ constexpr int imin(int a, int b) { return a < b ? a : b; }

// Stride (floats) of a shared row of `len` floats (len % 4 == 0) read VEC floats at a time by
// threads on different rows. VEC 4: a multiple of 4 with stride / 4 odd, so the 8 float4 reads of
// a quarter warp on 8 different rows fall in 32 different banks (and rows stay 16-byte aligned);
// VEC 1: odd, so 32 scalar reads on 32 different rows are conflict-free.
// problem.json computes the same numbers as a_stride and w_stride.
__host__ __device__ constexpr int row_stride(int len, int vec) {
  return vec == 4 ? (len % 8 == 0 ? len + 4 : len) : len + 1;
}

// The dynamic shared memory: [A: BM normalised rows of K][W: BN rows of a BK chunk of fc.weight
// (WSTAGE 1 only)]. problem.json's smem_bytes is kBytes.
template <int K, int BM, int BN, int VEC, int WSTAGE, int BK>
struct SmemLayout {
  static constexpr int kAStride = row_stride(K, VEC);
  static constexpr int kWStride = row_stride(BK, VEC);
  static constexpr int kA = 0;
  static constexpr int kW = BM * kAStride;
  static constexpr int kFloats = kW + (WSTAGE ? BN * kWStride : 0);
  static constexpr int kBytes = 4 * kFloats;
};

constexpr float kLnEps = 1e-5f;
constexpr unsigned kFullMask = 0xffffffffu;

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(kFullMask, v, o);
  return v;
}

// Exact GELU (nn.GELU(), approximate='none').
__device__ __forceinline__ float gelu_erf(float v) { return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f)); }

// VEC floats as one value: float4 or float.
template <int VEC>
struct Vec;
template <>
struct Vec<4> {
  using T = float4;
  static __device__ __forceinline__ T ldg(const float* p) { return __ldg(reinterpret_cast<const float4*>(p)); }
  static __device__ __forceinline__ T lds(const float* p) { return *reinterpret_cast<const float4*>(p); }
  static __device__ __forceinline__ void sts(float* p, T v) { *reinterpret_cast<float4*>(p) = v; }
  static __device__ __forceinline__ T zero() { return make_float4(0.f, 0.f, 0.f, 0.f); }
  static __device__ __forceinline__ float sum(T v) { return (v.x + v.y) + (v.z + v.w); }
  static __device__ __forceinline__ float sqdev(T v, float mean) {
    const float a = v.x - mean, b = v.y - mean, c = v.z - mean, d = v.w - mean;
    return (a * a + b * b) + (c * c + d * d);
  }
  static __device__ __forceinline__ T norm(T v, float mean, float rstd, T g, T b) {
    return make_float4((v.x - mean) * rstd * g.x + b.x, (v.y - mean) * rstd * g.y + b.y, (v.z - mean) * rstd * g.z + b.z,
                       (v.w - mean) * rstd * g.w + b.w);
  }
  static __device__ __forceinline__ float fma_dot(T a, T b, float acc) {
    acc = fmaf(a.x, b.x, acc);
    acc = fmaf(a.y, b.y, acc);
    acc = fmaf(a.z, b.z, acc);
    return fmaf(a.w, b.w, acc);
  }
};
template <>
struct Vec<1> {
  using T = float;
  static __device__ __forceinline__ T ldg(const float* p) { return __ldg(p); }
  static __device__ __forceinline__ T lds(const float* p) { return *p; }
  static __device__ __forceinline__ void sts(float* p, T v) { *p = v; }
  static __device__ __forceinline__ T zero() { return 0.f; }
  static __device__ __forceinline__ float sum(T v) { return v; }
  static __device__ __forceinline__ float sqdev(T v, float mean) { return (v - mean) * (v - mean); }
  static __device__ __forceinline__ T norm(T v, float mean, float rstd, T g, T b) { return (v - mean) * rstd * g + b; }
  static __device__ __forceinline__ float fma_dot(T a, T b, float acc) { return fmaf(a, b, acc); }
};

// Phase 1: rows m0 .. m0+BM-1 of x, LayerNormed (two passes in float: mean, then the biased
// variance of the deviations) with gamma and beta applied, into xs (row stride AS). One warp per
// row, lanes on consecutive VEC-float units (coalesced); the raw row is parked in xs between the
// passes (each lane re-reads only what it wrote). Rows past M are zeros.
template <int M, int K, int BM, int THREADS, int VEC, int AS>
__device__ __forceinline__ void layernorm_rows(const float* __restrict__ x, const float* __restrict__ gamma,
                                               const float* __restrict__ beta, float* xs, int m0) {
  using V = Vec<VEC>;
  constexpr int kWarps = THREADS / 32;
  constexpr int kUnits = K / VEC;             // VEC-float units of a row
  constexpr int kPerLane = cdiv(kUnits, 32);  // units of a lane (the last ones guarded)
  constexpr bool kExact = kUnits % 32 == 0;
  constexpr int kUnroll = kPerLane <= 8 ? kPerLane : 4;
  const int lane = threadIdx.x & 31;
#pragma unroll 1
  for (int r = threadIdx.x >> 5; r < BM; r += kWarps) {
    float* srow = xs + r * AS + lane * VEC;
    const int m = m0 + r;
    if (M % BM != 0 && m >= M) {  // warp-uniform
#pragma unroll kUnroll
      for (int i = 0; i < kPerLane; ++i)
        if (kExact || lane + 32 * i < kUnits) V::sts(srow + 32 * VEC * i, V::zero());
      continue;
    }
    const float* grow = x + static_cast<long long>(m) * K + lane * VEC;
    float s = 0.f;
#pragma unroll kUnroll
    for (int i = 0; i < kPerLane; ++i) {
      if (kExact || lane + 32 * i < kUnits) {
        const typename V::T v = V::ldg(grow + 32 * VEC * i);
        s += V::sum(v);
        V::sts(srow + 32 * VEC * i, v);
      }
    }
    const float mean = warp_sum(s) * (1.0f / K);
    float q = 0.f;
#pragma unroll kUnroll
    for (int i = 0; i < kPerLane; ++i)
      if (kExact || lane + 32 * i < kUnits) q += V::sqdev(V::lds(srow + 32 * VEC * i), mean);
    const float rstd = rsqrtf(warp_sum(q) * (1.0f / K) + kLnEps);
#pragma unroll kUnroll
    for (int i = 0; i < kPerLane; ++i) {
      if (kExact || lane + 32 * i < kUnits) {
        const int k = (lane + 32 * i) * VEC;
        V::sts(srow + 32 * VEC * i, V::norm(V::lds(srow + 32 * VEC * i), mean, rstd, V::ldg(gamma + k), V::ldg(beta + k)));
      }
    }
  }
}

// acc[i][j] += sum over k < LEN of a_i[k] * b_j[k], VEC floats a step. a_i = a + i * A_ROW (shared),
// b_j = b[j] (global through the read-only cache when B_GLOBAL, else shared: b[0] + j * B_ROW).
template <int LEN, int VEC, int TM, int TN, int A_ROW, int B_ROW, bool B_GLOBAL>
__device__ __forceinline__ void mac(float (&acc)[TM][TN], const float* a, const float* const (&b)[TN]) {
  using V = Vec<VEC>;
  static_assert(LEN % VEC == 0, "LEN must be a multiple of VEC");
  constexpr int kSteps = LEN / VEC;
  // By 4: a full unroll lets ptxas hoist the loads of many steps, up to the register cap (twice
  // the registers of small micro-tiles, and spills of global-B ones at 512 threads).
#pragma unroll 4
  for (int s = 0; s < kSteps; ++s) {
    const int k = s * VEC;
    typename V::T av[TM], bv[TN];
#pragma unroll
    for (int i = 0; i < TM; ++i) av[i] = V::lds(a + i * A_ROW + k);
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      if constexpr (B_GLOBAL) {
        bv[j] = V::ldg(b[j] + k);
      } else {
        bv[j] = V::lds(b[0] + j * B_ROW + k);
      }
    }
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
      for (int j = 0; j < TN; ++j) acc[i][j] = V::fma_dot(av[i], bv[j], acc[i][j]);
  }
}

// WSTAGE 1: copy columns k0 .. k0+LEN-1 of rows n0 .. n0+BN-1 of fc.weight into ws (row stride WS),
// float4 loads with consecutive threads on consecutive k (rows past N repeat row N-1: their
// outputs are never stored).
template <int K, int N, int BN, int THREADS, int VEC, int WS, int LEN>
__device__ __forceinline__ void stage_w(const float* __restrict__ w, float* ws, int n0, int k0) {
  constexpr int kQ = LEN / 4;                     // float4 per row
  constexpr int kIters = cdiv(BN * kQ, THREADS);  // float4 per thread (the last ones guarded)
  constexpr bool kExact = (BN * kQ) % THREADS == 0;
#pragma unroll
  for (int it = 0; it < kIters; ++it) {
    const int u = threadIdx.x + it * THREADS;
    if (kExact || u < BN * kQ) {
      const int c = u / kQ, q = u - c * kQ;
      const int n = N % BN == 0 ? n0 + c : imin(n0 + c, N - 1);
      const float4 v = __ldg(reinterpret_cast<const float4*>(w + static_cast<long long>(n) * K + k0 + 4 * q));
      float* dst = ws + c * WS + 4 * q;
      if constexpr (VEC == 4) {
        *reinterpret_cast<float4*>(dst) = v;
      } else {
        dst[0] = v.x;
        dst[1] = v.y;
        dst[2] = v.z;
        dst[3] = v.w;
      }
    }
  }
}

}  // namespace ln_linear_gelu
}  // namespace tune_kernels

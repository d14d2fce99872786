#pragma once
// LNROW 1: every staged row normalised on its own, u = (x - mean) * rstd, and gamma and beta folded
// into the block's copy of layer 1.
// Part of the contact template (contact.cuh).

#include "../strategies/mma_weights.cuh"
#include "tune_common.cuh"

namespace tune_kernels {
namespace contact {

// LNROW: rows[r] = (rows[r] - mean) * rstd for ROWS staged rows of E (stride row_stride_of<E>(C)) by NTHREADS
// threads (tid in [0, NTHREADS)): G = 1, 2 or 4 adjacent threads per row, as many as the threads
// allow, each summing every G-th float4 of the row; two passes over shared memory for the mean
// and the variance (as the reference computes it), a third to store. ROWS % 32 == 0 keeps every
// warp's lanes together in the shuffles.
// rows_used (<= ROWS, a multiple of 32 / G): the rows to normalise (ROWS / 2 for a diagonal tile
// staged with skip_t).
template <int C, int ROWS, int NTHREADS, class E>
__device__ __forceinline__ void normalize_rows(E* rows, int tid, int rows_used = ROWS) {
  constexpr int RS = row_stride_of<E>(C), kChunks = C / 4;
  constexpr int G = NTHREADS >= 4 * ROWS ? 4 : (NTHREADS >= 2 * ROWS ? 2 : 1);
  constexpr int kStep = NTHREADS / G;
  static_assert(C % 4 == 0 && ROWS % 32 == 0 && NTHREADS % 32 == 0, "normalize_rows: float4 rows, whole warps");
  const int sub = tid % G;
#pragma unroll 1
  for (int r = tid / G; r < rows_used; r += kStep) {
    E* row = rows + r * RS;
    float s[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
    for (int ch = sub; ch < kChunks; ch += G) {
      const float4 v = load4(row + 4 * ch);
      s[0] += v.x;
      s[1] += v.y;
      s[2] += v.z;
      s[3] += v.w;
    }
    const float mean = group_sum<G>((s[0] + s[1]) + (s[2] + s[3])) / static_cast<float>(C);
    float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
    for (int ch = sub; ch < kChunks; ch += G) {
      const float4 v = load4(row + 4 * ch);
      d[0] = fmaf(v.x - mean, v.x - mean, d[0]);
      d[1] = fmaf(v.y - mean, v.y - mean, d[1]);
      d[2] = fmaf(v.z - mean, v.z - mean, d[2]);
      d[3] = fmaf(v.w - mean, v.w - mean, d[3]);
    }
    const float var = group_sum<G>((d[0] + d[1]) + (d[2] + d[3])) / static_cast<float>(C);
    const float rstd = rsqrtf(var + kLnEps);
#pragma unroll
    for (int ch = sub; ch < kChunks; ch += G) {
      float4 v = load4(row + 4 * ch);
      v.x = (v.x - mean) * rstd;
      v.y = (v.y - mean) * rstd;
      v.z = (v.z - mean) * rstd;
      v.w = (v.w - mean) * rstd;
      store4(row + 4 * ch, v);
    }
  }
}

// LNROW: folds the LayerNorm's affine into the block's copy of layer 1, W0 <- W0 diag(gamma) / 2
// (the A operand is u(i,j) + u(j,i)) and b0 <- b0 + W0 beta. The weights must be in shared memory
// and visible to the block; two block barriers. E = bfloat16: the folded weights are rounded to it.
template <int C, int H, int BLOCK, class E>
__device__ __forceinline__ void fold_layernorm(E* sw) {
  using L = MmaWeightLayout<E, C, H>;
  constexpr int HP = L::HP, kPer = cdiv(HP, BLOCK);
  float bias[kPer];
#pragma unroll
  for (int k = 0; k < kPer; ++k) {
    const int h = static_cast<int>(threadIdx.x) + k * BLOCK;
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    if (h < HP) {
#pragma unroll
      for (int c = 0; c < C; ++c)
        acc[c % 4] = fmaf(to_f32(sw[L::kW0 + h * L::kW0Stride + c]), to_f32(sw[L::kBeta + c]), acc[c % 4]);
    }
    bias[k] = h < HP ? to_f32(sw[L::kB0 + h]) + ((acc[0] + acc[1]) + (acc[2] + acc[3])) : 0.0f;
  }
  __syncthreads();
#pragma unroll 4
  for (int f = threadIdx.x; f < HP * C; f += BLOCK) {
    const int h = f / C, c = f - h * C;
    const float scale = 0.5f * to_f32(sw[L::kGamma + c]);  // first, as `w *= 0.5f * gamma` reads them
    scale_by(sw[L::kW0 + h * L::kW0Stride + c], scale);
  }
#pragma unroll
  for (int k = 0; k < kPer; ++k) {
    const int h = static_cast<int>(threadIdx.x) + k * BLOCK;
    if (h < HP) assign(sw[L::kB0 + h], bias[k]);
  }
  __syncthreads();
}

}  // namespace contact
}  // namespace tune_kernels

#pragma once
// 3xTF32 on the tensor cores: operand splits and the m16n8k8 k-steps of the projections.
// Part of the scene_graph template (scene_graph.cuh).

#include "tune_common.cuh"

namespace tune_kernels {

// Tensor cores (sm_80+): x = hi + lo exactly, hi a TF32 value (truncated); the MMA reads lo's
// TF32 part, so hi*hi + hi*lo + lo*hi carries an error near FP32's (3xTF32).
__device__ __forceinline__ void sg_split_tf32(float x, float& hi, float& lo) {
  hi = tf32_trunc(x);
  lo = x - hi;
}
// The A fragments (g, t), (g+8, t), (g, t+4), (g+8, t+4) of a k-step from rows xa (g) and xb
// (g + 8) at column k, split into TF32 (hi, lo).
__device__ __forceinline__ void sg_split_a(float (&ah)[4], float (&al)[4], const float* xa, const float* xb, int k, int t) {
  sg_split_tf32(xa[k + t], ah[0], al[0]);
  sg_split_tf32(xb[k + t], ah[1], al[1]);
  sg_split_tf32(xa[k + t + 4], ah[2], al[2]);
  sg_split_tf32(xb[k + t + 4], ah[3], al[3]);
}
// The B half of a 3xTF32 k-step, A already split (ah, al): B values b0 = B[t][g], b1 = B[t+4][g]
// split here; hi*hi, hi*lo and lo*hi accumulate separately (hh, hl, lh).
__device__ __forceinline__ void sg_mma_3xtf32(float (&hh)[4], float (&hl)[4], float (&lh)[4], const float (&ah)[4],
                                              const float (&al)[4], float b0, float b1) {
  float bh[2], bl[2];
  sg_split_tf32(b0, bh[0], bl[0]);
  sg_split_tf32(b1, bh[1], bl[1]);
  mma_tf32(hl, al, bh[0], bh[1]);
  mma_tf32(lh, ah, bl[0], bl[1]);
  mma_tf32(hh, ah, bh[0], bh[1]);
}
// As sg_mma_3xtf32 with B column g at wrow (B[k][n] = wrow_n[k]), k-step k.
__device__ __forceinline__ void sg_mma_3xtf32_b(float (&hh)[4], float (&hl)[4], float (&lh)[4], const float (&ah)[4],
                                                const float (&al)[4], const float* wrow, int k, int t) {
  sg_mma_3xtf32(hh, hl, lh, ah, al, wrow[k + t], wrow[k + t + 4]);
}
// One k-step (columns k .. k+7) of a 3xTF32 tile product: A rows g and g+8 at xa and xb, B column
// g at wrow.
__device__ __forceinline__ void sg_mma_3xtf32_step(float (&hh)[4], float (&hl)[4], float (&lh)[4], const float* xa,
                                                   const float* xb, const float* wrow, int k, int t) {
  float ah[4], al[4];
  sg_split_a(ah, al, xa, xb, k, t);
  sg_mma_3xtf32_b(hh, hl, lh, ah, al, wrow, k, t);
}
// The A fragments of rows xa, xb (already split into TF32 (hi, lo) pairs) at k-step k.
__device__ __forceinline__ void sg_load_split_a(float (&ah)[4], float (&al)[4], const float2* xa, const float2* xb, int k,
                                                int t) {
  const float2 a0 = xa[k + t], a1 = xb[k + t], a2 = xa[k + t + 4], a3 = xb[k + t + 4];
  ah[0] = a0.x, ah[1] = a1.x, ah[2] = a2.x, ah[3] = a3.x;
  al[0] = a0.y, al[1] = a1.y, al[2] = a2.y, al[3] = a3.y;
}

}  // namespace tune_kernels

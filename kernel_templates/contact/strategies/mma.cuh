#pragma once
// STRATEGY 2, mma: the MLP of staged 16-pair tiles on tensor cores, m16n8k8 TF32 MMAs in 3xTF32
// (PREC 0) or plain TF32 (PREC 1). Shared memory: the staged tiles (staging.cuh) and the weights
// (mma_weights.cuh) only.
// Part of the contact template (contact.cuh).

#include "../pairs.cuh"
#include "mma_weights.cuh"
#include "tune_common.cuh"

namespace tune_kernels {
namespace contact {

// x = hi + lo exactly, hi TF32 (truncated: two instructions, where cvt.rna.tf32 takes several on
// sm_90). lo goes to the MMA as it is: the tensor core reads the TF32 part of the register, i.e.
// lo truncated, an error of at most 2^-10 |lo| <= 2^-20 |x|; hi*hi + hi*lo + lo*hi then leaves an
// error near FP32's.
__device__ __forceinline__ void split_tf32(float x, float& hi, float& lo) {
  hi = tf32_trunc(x);
  lo = x - hi;
}

// The precision of the tensor-core products: 0 = 3xTF32 (three MMAs per product, near FP32),
// 1 = TF32 (one MMA, operands rounded to TF32: about 2^-11 relative error per operand).
// PREC 1 leaves lo unset; the products that would read it are not issued.
template <int PREC>
__device__ __forceinline__ void split_operand(float x, float& hi, float& lo) {
  if constexpr (PREC == 0) {
    split_tf32(x, hi, lo);
  } else {
    hi = tf32_round(x);
  }
}

// A[p] * B for P row tiles sharing one B fragment {b0, b1}, 3xTF32, into three accumulators:
// acc[0] += Ahi Bhi, acc[1] += Alo Bhi, acc[2] += Ahi Blo. Three independent chains, each one
// MMA per k-step, instead of one chain three MMAs long; the caller adds them (mma_3xtf32_sum).
// PREC 1 (plain TF32): acc[0] += Ahi Bhi only.
template <int P, int PREC = 0>
__device__ __forceinline__ void mma_3xtf32(float (&acc)[3][P][4], const float (&ahi)[P][4], const float (&alo)[P][4],
                                           float b0, float b1) {
  float bh0, bl0, bh1, bl1;
  split_operand<PREC>(b0, bh0, bl0);
  split_operand<PREC>(b1, bh1, bl1);
#pragma unroll
  for (int p = 0; p < P; ++p) {
    if constexpr (PREC == 0) {
      mma_tf32(acc[1][p], alo[p], bh0, bh1);
      mma_tf32(acc[2][p], ahi[p], bl0, bl1);
    }
    mma_tf32(acc[0][p], ahi[p], bh0, bh1);
  }
}

// acc[0] = bias (the columns 2t, 2t+1 of the lane's fragment), acc[1] = acc[2] = 0.
template <int P>
__device__ __forceinline__ void mma_3xtf32_init(float (&acc)[3][P][4], const float (&bias)[2]) {
#pragma unroll
  for (int p = 0; p < P; ++p) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      acc[0][p][e] = bias[e & 1];
      acc[1][p][e] = acc[2][p][e] = 0.0f;
    }
  }
}

template <int P, int PREC = 0>
__device__ __forceinline__ void mma_3xtf32_sum(float (&d)[P][4], const float (&acc)[3][P][4]) {
#pragma unroll
  for (int p = 0; p < P; ++p)
#pragma unroll
    for (int e = 0; e < 4; ++e) d[p][e] = PREC == 0 ? acc[0][p][e] + (acc[1][p][e] + acc[2][p][e]) : acc[0][p][e];
}

// Element k of the lane's row p: s (LNROW 0), or u(i,j) + u(j,i) (rows r and tile T rows tr).
template <int LNROW, int P>
__device__ __forceinline__ float lane_a(const float* const (&r)[P], const float* const (&tr)[P], int p, int k) {
  return LNROW ? r[p][k] + tr[p][k] : r[p][k];
}

// Layer 2 of mma_pairs: d2 = relu(d1) W2^T + b2, the lane's d1 as its A fragment where it stands.
template <int NT, int P, bool SHARED, int PREC, int kW2Stride>
__device__ __forceinline__ void mma_layer2(float (&d2)[NT][P][4], const float (&d1)[NT][P][4], const float* w2_lane,
                                           const float (&bias2)[NT][2]) {
  float acc2[NT][3][P][4];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) mma_3xtf32_init<P>(acc2[nt], bias2[nt]);
#pragma unroll
  for (int ks = 0; ks < NT; ++ks) {
    // A fragment {(g, t), (g+8, t), (g, t+4), (g+8, t+4)} = relu(D1) at h = 8ks + {2t, 2t, 2t+1, 2t+1}.
    float ahi[P][4], alo[P][4];
#pragma unroll
    for (int p = 0; p < P; ++p) {
      split_operand<PREC>(fmaxf(d1[ks][p][0], 0.0f), ahi[p][0], alo[p][0]);
      split_operand<PREC>(fmaxf(d1[ks][p][2], 0.0f), ahi[p][1], alo[p][1]);
      split_operand<PREC>(fmaxf(d1[ks][p][1], 0.0f), ahi[p][2], alo[p][2]);
      split_operand<PREC>(fmaxf(d1[ks][p][3], 0.0f), ahi[p][3], alo[p][3]);
    }
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
      float w2v[2];
      loadv<2, SHARED>(w2_lane + nt * 8 * kW2Stride + ks * 8, w2v);
      const float2 w = make_float2(w2v[0], w2v[1]);
      mma_3xtf32<P, PREC>(acc2[nt], ahi, alo, w.x, w.y);
    }
  }
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) mma_3xtf32_sum<P, PREC>(d2[nt], acc2[nt]);
}

// MLP of the staged tile on tensor cores: warps take P tiles of 16 pairs (rows of tile A, which
// hold s) at a time. Layer 1: D1[16 x HP] = S[16 x C] W0^T. Layer 2: D2 = relu(D1) W2^T, with
// the lane's D1 values used as its A fragment where they stand: k-group ks's logical columns t
// and t+4 are h = 8ks + 2t and 8ks + 2t + 1, so B takes W2 columns (2t, 2t+1) in their place.
// warp in [0, BLOCK / 32): the warps share the 16-pair tiles (BLOCK = 32: one warp does all).
// LNROW: the rows hold u (normalize_rows), and the A operand of pair (ii,jj) is row A(ii,jj) plus
// row T(jj,ii).
template <int N, int C, int H, int BLOCK, int TILE_I, int TILE_J, int P, int SYM, bool SHARED, int PREC, int LNROW = 0>
__device__ __forceinline__ void mma_pairs(float* __restrict__ out, const TileOrigin& tile, const float* tiles,
                                          const MmaWeights<float, C, H, SHARED>& W,
                                          int warp = static_cast<int>(threadIdx.x >> 5), int t_row0 = TILE_I * TILE_J) {
  using L = MmaWeights<float, C, H, SHARED>;
  constexpr int HP = MmaWeightLayout<float, C, H>::HP, NT = HP / 8;
  constexpr int RS = row_stride(C), kRows = TILE_I * TILE_J, kMTiles = cdiv(kRows, 16), NW = BLOCK / 32;
  static_assert(C % 8 == 0 && RS % 8 == 4, "mma fragments need C % 8 == 0");
  const int lane = threadIdx.x & 31;
  const int g = lane >> 2, t = lane & 3;
  float bias0[NT][2], bias2[NT][2], w4v[NT][2];
  load_lane_biases(W, t, bias0, bias2, w4v);
  const float bias4 = load1<SHARED>(W.b4);
  const float* w0_lane = W.w0 + g * L::kW0Stride + t;      // + 8nt rows, + k0 columns
  const float* w2_lane = W.w2 + g * L::kW2Stride + 2 * t;  // + 8nt rows, + 8ks columns

#pragma unroll 1
  for (int grp = warp; grp * P < kMTiles; grp += NW) {
    const float* row_lo[P];  // rows g and g + 8 of each 16-pair tile
    const float* row_hi[P];
    const float* trow_lo[P];  // LNROW: their tile T rows
    const float* trow_hi[P];
    fragment_rows<TILE_I, TILE_J, RS>(tiles, grp, g, t, t_row0, row_lo, row_hi, trow_lo, trow_hi);
    // Layer 1 stays in this body: split into a function of its own, it changes the machine code of
    // the kernels that read the weights from global memory (SMEM_W 0; tools/cubin_identity.py).
    float d1[NT][P][4];
    {
      float acc1[NT][3][P][4];
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) mma_3xtf32_init<P>(acc1[nt], bias0[nt]);
#pragma unroll
      for (int k0 = 0; k0 < C; k0 += 8) {
        float ahi[P][4], alo[P][4];
#pragma unroll
        for (int p = 0; p < P; ++p) {
          split_operand<PREC>(lane_a<LNROW>(row_lo, trow_lo, p, k0), ahi[p][0], alo[p][0]);
          split_operand<PREC>(lane_a<LNROW>(row_hi, trow_hi, p, k0), ahi[p][1], alo[p][1]);
          split_operand<PREC>(lane_a<LNROW>(row_lo, trow_lo, p, k0 + 4), ahi[p][2], alo[p][2]);
          split_operand<PREC>(lane_a<LNROW>(row_hi, trow_hi, p, k0 + 4), ahi[p][3], alo[p][3]);
        }
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) {
          const float* w = w0_lane + nt * 8 * L::kW0Stride + k0;
          mma_3xtf32<P, PREC>(acc1[nt], ahi, alo, load1<SHARED>(w), load1<SHARED>(w + 4));
        }
      }
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) mma_3xtf32_sum<P, PREC>(d1[nt], acc1[nt]);
    }
    float d2[NT][P][4];
    mma_layer2<NT, P, SHARED, PREC, L::kW2Stride>(d2, d1, w2_lane, bias2);
    store_fragment_logits<N, TILE_I, TILE_J, SYM>(out, tile, grp, g, t, d2, w4v, bias4);
  }
}

}  // namespace contact
}  // namespace tune_kernels

#pragma once
// STRATEGY 2 with NSPLIT > 1: NSPLIT warps share a 16-pair tile, each taking 1/NSPLIT of the hidden
// units; relu(D1) and the partial logits meet in the tile T rows of that tile.
// Part of the contact template (contact.cuh).

#include "../pairs.cuh"
#include "mma.cuh"
#include "mma_weights.cuh"
#include "tune_common.cuh"

namespace tune_kernels {
namespace contact {

// d[n] = bias[n] + A[16 x K] B_n for NTW n-tiles in 3xTF32, A in the standard fragment layout:
// a_lo and a_hi point at column t of rows g and g + 8 of A; w at column t of row g of the first
// n-tile's weight rows (stride WS): the B fragment of n-tile n, k-step k0 is w[n*8*WS + k0 + {0, 4}].
template <int NTW, int K, int WS, int PREC>
__device__ __forceinline__ void mma_rows_layer(float (&d)[NTW][1][4], const float (&bias)[NTW][2], const float* a_lo,
                                               const float* a_hi, const float* w) {
  float acc[NTW][3][1][4];
#pragma unroll
  for (int n = 0; n < NTW; ++n) mma_3xtf32_init<1>(acc[n], bias[n]);
#pragma unroll
  for (int k0 = 0; k0 < K; k0 += 8) {
    float ahi[1][4], alo[1][4];
    split_operand<PREC>(a_lo[k0], ahi[0][0], alo[0][0]);
    split_operand<PREC>(a_hi[k0], ahi[0][1], alo[0][1]);
    split_operand<PREC>(a_lo[k0 + 4], ahi[0][2], alo[0][2]);
    split_operand<PREC>(a_hi[k0 + 4], ahi[0][3], alo[0][3]);
#pragma unroll
    for (int n = 0; n < NTW; ++n) {
      const float* wn = w + n * 8 * WS + k0;
      mma_3xtf32<1, PREC>(acc[n], ahi, alo, wn[0], wn[4]);
    }
  }
#pragma unroll
  for (int n = 0; n < NTW; ++n) mma_3xtf32_sum<1, PREC>(d[n], acc[n]);
}

// mma_pairs with NSPLIT warps per 16-pair tile, each taking NT / NSPLIT of the n-tiles of both
// layers: the chain of dependent MMAs a warp runs is NSPLIT times shorter. The warps of a
// group meet twice at a named barrier: relu(D1) goes through shared memory (the tile T rows of
// this m-tile, free once the LayerNorm is done: tile T has as many rows as tile A) to become
// layer 2's A operand in the standard fragment layout, and the partial logits of each warp's
// hidden units are added there. Needs TILE_I * TILE_J % 16 == 0 and HP + NSPLIT <= row_stride(C).
template <int N, int C, int H, int BLOCK, int TILE_I, int TILE_J, int NSPLIT, int SYM, int PREC>
__device__ __forceinline__ void mma_pairs_split(float* __restrict__ out, const TileOrigin& tile, float* tiles,
                                                const MmaWeights<float, C, H, true>& W) {
  using L = MmaWeights<float, C, H, true>;
  constexpr int HP = MmaWeightLayout<float, C, H>::HP, NT = HP / 8, NTW = NT / NSPLIT;
  constexpr int RS = row_stride(C), kRows = TILE_I * TILE_J, kMTiles = kRows / 16, NW = BLOCK / 32;
  constexpr int kGroups = NW / NSPLIT;
  static_assert(C % 8 == 0 && RS % 8 == 4, "mma fragments need C % 8 == 0");
  static_assert(kRows % 16 == 0 && NT % NSPLIT == 0 && NW % NSPLIT == 0 && HP + NSPLIT <= RS && kGroups <= 15,
                "NSPLIT must divide the n-tiles and the warps, and the scratch must fit a tile T row");
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int part = warp % NSPLIT, slot = warp / NSPLIT;
  const int nt0 = part * NTW;
  float bias0[NTW][2], bias2[NTW][2], w4v[NTW][2];
#pragma unroll
  for (int n = 0; n < NTW; ++n)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      bias0[n][e] = W.b0[(nt0 + n) * 8 + 2 * t + e];
      bias2[n][e] = W.b2[(nt0 + n) * 8 + 2 * t + e];
      w4v[n][e] = W.w4[(nt0 + n) * 8 + 2 * t + e];
    }
  const float bias4 = *W.b4;

#pragma unroll 1
  for (int m = slot; m < kMTiles; m += kGroups) {
    const float* row_lo = tiles + (m * 16 + g) * RS + t;
    const float* row_hi = row_lo + 8 * RS;
    float* scratch = tiles + (kRows + m * 16) * RS;  // 16 rows: relu(D1) in columns [0, HP), logits after
    float d1[NTW][1][4];
    mma_rows_layer<NTW, C, L::kW0Stride, PREC>(d1, bias0, row_lo, row_hi, W.w0 + (nt0 * 8 + g) * L::kW0Stride + t);
#pragma unroll
    for (int n = 0; n < NTW; ++n) {
      const int col = (nt0 + n) * 8 + 2 * t;
      *reinterpret_cast<float2*>(scratch + g * RS + col) = make_float2(fmaxf(d1[n][0][0], 0.0f), fmaxf(d1[n][0][1], 0.0f));
      *reinterpret_cast<float2*>(scratch + (g + 8) * RS + col) =
          make_float2(fmaxf(d1[n][0][2], 0.0f), fmaxf(d1[n][0][3], 0.0f));
    }
    named_barrier(1 + slot, NSPLIT * 32);
    float d2[NTW][1][4];
    mma_rows_layer<NTW, HP, L::kW2Stride, PREC>(d2, bias2, scratch + g * RS + t, scratch + (g + 8) * RS + t,
                                                W.w2 + (nt0 * 8 + g) * L::kW2Stride + t);
    float logit_lo, logit_hi;  // rows g and g + 8, this warp's hidden units
    fragment_logits<NTW, 1>(d2, w4v, 0, logit_lo, logit_hi);
    if (t == 0) {
      scratch[g * RS + HP + part] = logit_lo;
      scratch[(g + 8) * RS + HP + part] = logit_hi;
    }
    named_barrier(1 + slot, NSPLIT * 32);
    if (part == 0 && t < 2) {
      const int row = g + 8 * t;
      float logit = 0.0f;
#pragma unroll
      for (int q = 0; q < NSPLIT; ++q) logit += scratch[row * RS + HP + q];
      const PairSlot pslot = tile_slot<N, TILE_I, TILE_J>(tile, m * 16 + row);
      store_result<N>(out, pslot, SYM && tile.mirror, sigmoid(logit + bias4));
    }
  }
}

}  // namespace contact
}  // namespace tune_kernels

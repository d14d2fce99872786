#pragma once
// STRATEGY 2 with PREC 2 (T = __nv_bfloat16): the MLP of staged 16-pair tiles on bfloat16 tensor
// cores, mma.sync m16n8k16 .bf16 with f32 accumulation (mma_bf16, tune_common.cuh: the fragment
// layouts of the PTX ISA). A: the staged s rows (bfloat16, as the LayerNorm stored them), or with
// LNROW u(i,j) + u(j,i) rounded to bfloat16; B: the weights as they are (bfloat16); layer 2's A:
// relu(D1) rounded to bfloat16 where it stands in the lane's accumulators, as PyTorch's bfloat16
// module rounds its hidden activation; layer 3 and the sigmoid in float. Shared memory: the staged
// tiles and the weights, both bfloat16 (MmaWeightLayout<__nv_bfloat16, ...>).
// Part of the contact template (contact.cuh).

#include "../pairs.cuh"
#include "mma_weights.cuh"
#include "tune_common.cuh"

namespace tune_kernels {
namespace contact {

// Elements k, k+1 of the lane's row p as one A register: s (LNROW 0), or u(i,j) + u(j,i) (rows r
// and tile T rows tr).
template <int LNROW, int P>
__device__ __forceinline__ unsigned lane_a_word(const __nv_bfloat16* const (&r)[P], const __nv_bfloat16* const (&tr)[P],
                                                int p, int k) {
  const unsigned a = load_word<true>(r[p] + k);
  if constexpr (LNROW != 0) {
    const unsigned b = load_word<true>(tr[p] + k);
    return pack_bf16x2(bf16_lo(a) + bf16_lo(b), bf16_hi(a) + bf16_hi(b));
  } else {
    return a;
  }
}

// d[nt][p] = the lane's fragment of bias (columns 2t, 2t+1 of n-tile nt), the accumulators' start.
template <int NT, int P>
__device__ __forceinline__ void init_bias_fragments(float (&d)[NT][P][4], const float (&bias)[NT][2]) {
#pragma unroll
  for (int nt = 0; nt < NT; ++nt)
#pragma unroll
    for (int p = 0; p < P; ++p)
#pragma unroll
      for (int e = 0; e < 4; ++e) d[nt][p][e] = bias[nt][e & 1];
}

// mma_pairs in bfloat16: warps take P tiles of 16 pairs at a time. Layer 1: D1[16 x HP] = S[16 x C]
// W0^T, k-steps of 16 columns. Layer 2: D2 = relu(D1) W2^T; m16n8k16's A fragment of k-step ks is
// exactly the lane's D1 of n-tiles 2ks (columns 2t, 2t+1 of rows g, g+8: registers 0, 1) and
// 2ks+1 (registers 2, 3), so relu(D1) only has to be packed. Needs C % 16 == 0 (HP is a multiple
// of 16 by the layout).
template <int N, int C, int H, int BLOCK, int TILE_I, int TILE_J, int P, int SYM, bool SHARED, int LNROW = 0>
__device__ __forceinline__ void mma_pairs_bf16(__nv_bfloat16* __restrict__ out, const TileOrigin& tile,
                                               const __nv_bfloat16* tiles, const MmaWeights<__nv_bfloat16, C, H, SHARED>& W,
                                               int warp = static_cast<int>(threadIdx.x >> 5), int t_row0 = TILE_I * TILE_J) {
  using E = __nv_bfloat16;
  using L = MmaWeights<E, C, H, SHARED>;
  constexpr int HP = MmaWeightLayout<E, C, H>::HP, NT = HP / 8, KS2 = HP / 16;
  constexpr int RS = row_stride_of<E>(C), kRows = TILE_I * TILE_J, kMTiles = cdiv(kRows, 16), NW = BLOCK / 32;
  static_assert(C % 16 == 0 && HP % 16 == 0 && RS % 2 == 0, "bfloat16 mma fragments need C % 16 == 0");
  const int lane = threadIdx.x & 31;
  const int g = lane >> 2, t = lane & 3;
  float bias0[NT][2], bias2[NT][2], w4v[NT][2];
  load_lane_biases(W, t, bias0, bias2, w4v);
  const float bias4 = load1<SHARED>(W.b4);
  const E* w0_lane = W.w0 + g * L::kW0Stride + 2 * t;  // + 8nt rows, + k0 (+ 8) columns
  const E* w2_lane = W.w2 + g * L::kW2Stride + 2 * t;  // + 8nt rows, + 16ks (+ 8) columns

#pragma unroll 1
  for (int grp = warp; grp * P < kMTiles; grp += NW) {
    const E* row_lo[P];  // columns 2t, 2t+1 of rows g and g + 8 of each 16-pair tile
    const E* row_hi[P];
    const E* trow_lo[P];  // LNROW: their tile T rows
    const E* trow_hi[P];
    fragment_rows<TILE_I, TILE_J, RS>(tiles, grp, g, 2 * t, t_row0, row_lo, row_hi, trow_lo, trow_hi);
    // Both layers stay in this body: split into functions of their own, they change the machine code
    // of the kernels that read the weights from global memory (SMEM_W 0; tools/cubin_identity.py).
    float d1[NT][P][4];
    init_bias_fragments(d1, bias0);
#pragma unroll
    for (int k0 = 0; k0 < C; k0 += 16) {
      unsigned a[P][4];
#pragma unroll
      for (int p = 0; p < P; ++p) {
        a[p][0] = lane_a_word<LNROW>(row_lo, trow_lo, p, k0);
        a[p][1] = lane_a_word<LNROW>(row_hi, trow_hi, p, k0);
        a[p][2] = lane_a_word<LNROW>(row_lo, trow_lo, p, k0 + 8);
        a[p][3] = lane_a_word<LNROW>(row_hi, trow_hi, p, k0 + 8);
      }
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
        const E* w = w0_lane + nt * 8 * L::kW0Stride + k0;
        const unsigned b0 = load_word<SHARED>(w), b1 = load_word<SHARED>(w + 8);
#pragma unroll
        for (int p = 0; p < P; ++p) mma_bf16(d1[nt][p], a[p], b0, b1);
      }
    }
    float d2[NT][P][4];
    init_bias_fragments(d2, bias2);
#pragma unroll
    for (int ks = 0; ks < KS2; ++ks) {
      unsigned a[P][4];
#pragma unroll
      for (int p = 0; p < P; ++p) {
        a[p][0] = pack_bf16x2(fmaxf(d1[2 * ks][p][0], 0.0f), fmaxf(d1[2 * ks][p][1], 0.0f));
        a[p][1] = pack_bf16x2(fmaxf(d1[2 * ks][p][2], 0.0f), fmaxf(d1[2 * ks][p][3], 0.0f));
        a[p][2] = pack_bf16x2(fmaxf(d1[2 * ks + 1][p][0], 0.0f), fmaxf(d1[2 * ks + 1][p][1], 0.0f));
        a[p][3] = pack_bf16x2(fmaxf(d1[2 * ks + 1][p][2], 0.0f), fmaxf(d1[2 * ks + 1][p][3], 0.0f));
      }
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
        const E* w = w2_lane + nt * 8 * L::kW2Stride + 16 * ks;
        const unsigned b0 = load_word<SHARED>(w), b1 = load_word<SHARED>(w + 8);
#pragma unroll
        for (int p = 0; p < P; ++p) mma_bf16(d2[nt][p], a[p], b0, b1);
      }
    }
    store_fragment_logits<N, TILE_I, TILE_J, SYM>(out, tile, grp, g, t, d2, w4v, bias4);
  }
}

}  // namespace contact
}  // namespace tune_kernels

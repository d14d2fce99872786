#pragma once
// STRATEGY 1, warp: one warp per pair, lanes split C for the LayerNorm and H for the MLP, each
// lane keeping its rows of W0 and W2 in registers; s and h1 go through per-warp scratch rows in
// shared memory (WarpScratch).
// Part of the contact template (contact.cuh).

#include "../layernorm/warp_rows.cuh"
#include "../pairs.cuh"
#include "tune_common.cuh"

namespace tune_kernels {
namespace contact {

// Per warp and pair: s (only when not staged; s then lives in tile A) and h1.
template <int C, int H, bool STAGED>
struct WarpScratch {
  static constexpr int kS = STAGED ? 0 : round4(C);
  static constexpr int kPairFloats = kS + round4(H);
};

// Lane l owns hidden units h = l + 32r (r < HR); its rows of W0 and W2 stay in registers.
template <int C, int H>
struct LaneWeights {
  static constexpr int HR = cdiv(H, 32);
  float w0[HR][C];
  float w2[HR][H];
  float b0[HR], b2[HR], w4[HR];
  float b4;
};

// E: the weights' element type (float or __nv_bfloat16); the registers hold floats.
template <int C, int H, bool SMEM_W, class E>
__device__ __forceinline__ void load_lane_weights(LaneWeights<C, H>& lw, const E* w0, const E* b0, const E* w2, const E* b2,
                                                  const E* w4, const E* b4) {
  constexpr int HR = LaneWeights<C, H>::HR;
  constexpr int VC = vec_width_of<E>(C), VH = vec_width_of<E>(H);
  constexpr int W0S = SMEM_W ? row_stride_of<E>(C) : C, W2S = SMEM_W ? row_stride_of<E>(H) : H;
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int r = 0; r < HR; ++r) {
    const int h = lane + 32 * r;
    const bool ok = h < H;
    const int hc = ok ? h : H - 1;
#pragma unroll
    for (int c = 0; c < C; c += VC) {
      float v[VC];
      loadv<VC, SMEM_W>(w0 + hc * W0S + c, v);
#pragma unroll
      for (int q = 0; q < VC; ++q) lw.w0[r][c + q] = ok ? v[q] : 0.0f;
    }
#pragma unroll
    for (int k = 0; k < H; k += VH) {
      float v[VH];
      loadv<VH, SMEM_W>(w2 + hc * W2S + k, v);
#pragma unroll
      for (int q = 0; q < VH; ++q) lw.w2[r][k + q] = ok ? v[q] : 0.0f;
    }
    lw.b0[r] = ok ? load1<SMEM_W>(b0 + hc) : 0.0f;
    lw.b2[r] = ok ? load1<SMEM_W>(b2 + hc) : 0.0f;
    lw.w4[r] = ok ? load1<SMEM_W>(w4 + hc) : 0.0f;
  }
  lw.b4 = load1<SMEM_W>(b4);
}

// MLP of P pairs by one warp: s rows and h1 buffers in shared memory, read as broadcasts.
// Returns the logits' sigmoid in every lane. S: the s rows' element type (float scratch, or staged
// rows of the tensors' type).
template <int C, int H, int P, class S>
__device__ __forceinline__ void warp_mlp(const LaneWeights<C, H>& lw, const S* const (&srow)[P], float* const (&hbuf)[P],
                                         float (&o)[P]) {
  constexpr int HR = LaneWeights<C, H>::HR;
  constexpr int VC = vec_width_of<S>(C), VH = vec_width(H);
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int r = 0; r < HR; ++r) {
    float a[P][4];
#pragma unroll
    for (int p = 0; p < P; ++p)
#pragma unroll
      for (int q = 0; q < 4; ++q) a[p][q] = 0.0f;
#pragma unroll
    for (int c = 0; c < C; c += VC) {
      float s[P][VC];
#pragma unroll
      for (int p = 0; p < P; ++p) loadv<VC, true>(srow[p] + c, s[p]);
#pragma unroll
      for (int p = 0; p < P; ++p)
#pragma unroll
        for (int q = 0; q < VC; ++q) a[p][(c + q) & 3] = fmaf(lw.w0[r][c + q], s[p][q], a[p][(c + q) & 3]);
    }
    const int h = lane + 32 * r;
#pragma unroll
    for (int p = 0; p < P; ++p) {
      const float v = fmaxf(lw.b0[r] + ((a[p][0] + a[p][1]) + (a[p][2] + a[p][3])), 0.0f);
      if (h < H) hbuf[p][h] = v;
    }
  }
  __syncwarp();
  float logit[P];
#pragma unroll
  for (int p = 0; p < P; ++p) logit[p] = 0.0f;
#pragma unroll
  for (int r = 0; r < HR; ++r) {
    float a[P][4];
#pragma unroll
    for (int p = 0; p < P; ++p)
#pragma unroll
      for (int q = 0; q < 4; ++q) a[p][q] = 0.0f;
#pragma unroll
    for (int k = 0; k < H; k += VH) {
      float v[P][VH];
#pragma unroll
      for (int p = 0; p < P; ++p) loadv<VH, true>(hbuf[p] + k, v[p]);
#pragma unroll
      for (int p = 0; p < P; ++p)
#pragma unroll
        for (int q = 0; q < VH; ++q) a[p][(k + q) & 3] = fmaf(lw.w2[r][k + q], v[p][q], a[p][(k + q) & 3]);
    }
#pragma unroll
    for (int p = 0; p < P; ++p) {
      const float v = fmaxf(lw.b2[r] + ((a[p][0] + a[p][1]) + (a[p][2] + a[p][3])), 0.0f);
      logit[p] = fmaf(lw.w4[r], v, logit[p]);  // w4 is 0 for lanes past H
    }
  }
#pragma unroll
  for (int p = 0; p < P; ++p) o[p] = sigmoid(warp_sum(logit[p]) + lw.b4);
}

// x, the weights, the staged tiles and out are E (float or __nv_bfloat16); the scratch rows are float.
template <int B, int N, int C, int H, int MAPPING, int BLOCK, int TILE_I, int TILE_J, bool STAGED, bool SMEM_W, int P,
          int SYM, class E>
__device__ __forceinline__ void warp_pairs(const E* __restrict__ x, const E* gamma, const E* beta, const E* w0, const E* b0,
                                           const E* w2, const E* b2, const E* w4, const E* b4, E* __restrict__ out,
                                           const TileOrigin& tile, E* tiles, float* scratch) {
  constexpr int CR = cdiv(C, 32), RS = row_stride_of<E>(C), NW = BLOCK / 32;
  using Scratch = WarpScratch<C, H, STAGED>;
  constexpr int kScratchS = Scratch::kS;
  constexpr int kScratchPair = Scratch::kPairFloats;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  float* my_scratch = scratch + warp * P * kScratchPair;
  float* hbuf[P];
#pragma unroll
  for (int p = 0; p < P; ++p) hbuf[p] = my_scratch + p * kScratchPair + kScratchS;

  LaneWeights<C, H> lw;
  load_lane_weights<C, H, SMEM_W>(lw, w0, b0, w2, b2, w4, b4);
  float g[CR], be[CR];
  if constexpr (!STAGED) {
    load_lane_vec<C, SMEM_W>(gamma, g);
    load_lane_vec<C, SMEM_W>(beta, be);
  }

  constexpr int kGroups = MAPPING == 0 ? 1 : cdiv(TILE_I * TILE_J, P);
  constexpr int kStep = MAPPING == 0 ? 1 : NW;
#pragma unroll 1
  for (int grp = MAPPING == 0 ? 0 : warp; grp < kGroups; grp += kStep) {
    PairSlot slot[P];
#pragma unroll
    for (int p = 0; p < P; ++p) {
      if constexpr (MAPPING == 0) {
        slot[p] = linear_slot<B, N>((static_cast<long long>(blockIdx.x) * NW + warp) * P + p);
      } else {
        slot[p] = tile_slot<N, TILE_I, TILE_J>(tile, grp * P + p);
      }
    }
    const E* trow[P];  // STAGED: the pairs' s rows in tile A
    const float* srow[P];
    if constexpr (STAGED) {
#pragma unroll
      for (int p = 0; p < P; ++p) trow[p] = tiles + slot[p].tile_row * RS;
    } else {
#pragma unroll
      for (int p = 0; p < P; ++p) {
        const E* ra = x + row_offset(N, C, slot[p].b, slot[p].i, slot[p].j);
        const E* rt = x + row_offset(N, C, slot[p].b, slot[p].j, slot[p].i);
        float a[CR], t[CR];
#pragma unroll
        for (int k = 0; k < CR; ++k) {
          const int c = lane + 32 * k;
          a[k] = c < C ? load1<false>(ra + c) : 0.0f;
          t[k] = c < C ? load1<false>(rt + c) : 0.0f;
        }
        warp_layernorm2<C>(a, t, g, be);
        float* s = my_scratch + p * kScratchPair;
#pragma unroll
        for (int k = 0; k < CR; ++k) {
          const int c = lane + 32 * k;
          if (c < C) s[c] = (a[k] + t[k]) * 0.5f;
        }
        srow[p] = s;
      }
      __syncwarp();
    }
    float o[P];
    if constexpr (STAGED) {
      warp_mlp<C, H, P>(lw, trow, hbuf, o);
    } else {
      warp_mlp<C, H, P>(lw, srow, hbuf, o);
    }
#pragma unroll
    for (int p = 0; p < P; ++p)
      if (lane == p) store_result<N>(out, slot[p], SYM && tile.mirror, o[p]);
    __syncwarp();  // the scratch rows are rewritten by the next group
  }
}

}  // namespace contact
}  // namespace tune_kernels

#pragma once
// sg_fused_head (kernels/fused_head.cuh), steps 1 and 2: its shared-memory layout, the weights'
// L2 prefetch and the pair bias of head h.
// Part of the scene_graph template (scene_graph.cuh).

#include "../../pair_bias.cuh"
#include "../../ptx.cuh"
#include "../../sizes.cuh"
#include "../../smem.cuh"
#include "tune_common.cuh"

// Offsets (floats) of sg_fused_head's dynamic shared memory, sizes as sg_fused_head_smem_bytes.
template <int N, int D, int H>
struct SgFusedHeadLayout {
  static constexpr int HD = D / H, S = tune_kernels::sg_row_stride(D);
  static constexpr int kHn = 0;                                 // N x S: LayerNorm of all N rows
  static constexpr int kQh = kHn + N * S;                       // HD: q_h, scaled
  static constexpr int kCtx = kQh + tune_kernels::round4(HD);   // HD: ctx_h
  static constexpr int kU = kCtx + tune_kernels::round4(HD);    // D: Wk_hᵀ q_h, later Σ_j a[j] hn[j]
  static constexpr int kSc = kU + S;                            // N: bias, scores, attention
  static constexpr int kMsk = kSc + tune_kernels::round4(N);    // N: edge mask row i
  static constexpr int kPart = kMsk + tune_kernels::round4(N);  // D: this head's share of out[b, i, :]
};

// Step 1b. An L2 prefetch of head h's weight rows (cold after a flush), which the cluster's
// blocks share (no shared memory).
template <int N, int D, int H, int BLOCK>
__device__ __forceinline__ void sg_fused_head_prefetch_weights(const float* __restrict__ wq, const float* __restrict__ wk,
                                                               const float* __restrict__ wv, int h, int tid) {
  namespace k = tune_kernels;
  constexpr int HD = D / H;
  constexpr int LINES = k::cdiv(HD * D, 32);
  for (int l = tid; l < 3 * LINES; l += BLOCK) {
    const float* w = l < LINES ? wq : (l < 2 * LINES ? wk : wv);
    k::sg_prefetch_l2(w + h * HD * D + (l % LINES) * 32);
  }
}

// Step 2. Pair bias of head h for the N pairs (i, j), LPP lanes per pair, while the copies fly:
// writes sc[j] (reads only global memory).
template <int N, int D, int H, int P, int BLOCK>
__device__ __forceinline__ void sg_fused_head_pair_bias(const float* __restrict__ pair_feats, const float* __restrict__ w0,
                                                        const float* __restrict__ b0, const float* __restrict__ w2,
                                                        const float* __restrict__ b2, int b, int i, int h, int tid) {
  namespace k = tune_kernels;
  using L = SgFusedHeadLayout<N, D, H>;
  using tune_kernels::sg_smem;
  float* sc = reinterpret_cast<float*>(sg_smem) + L::kSc;
  constexpr int LPP = k::sg_pair_lanes(N, P, BLOCK);
  for (int base = 0; base < N * LPP; base += BLOCK) {
    const int raw = base + tid;
    const int uu = raw < N * LPP ? raw : N * LPP - 1;
    const int j = uu / LPP, kl = uu % LPP;
    float res[H];
    k::sg_pair_mlp<P, H, LPP, 0>(pair_feats + ((b * N + i) * N + j) * P, w0, b0, w2, b2, kl, res);
    float mine = 0.0f;
#pragma unroll
    for (int hh = 0; hh < H; ++hh) {
      float v = res[hh];
#pragma unroll
      for (int off = LPP / 2; off > 0; off /= 2) v += __shfl_xor_sync(0xffffffffu, v, off);
      if (hh == h) mine = v;
    }
    if (raw < N * LPP && kl == 0) sc[j] = mine;
  }
}

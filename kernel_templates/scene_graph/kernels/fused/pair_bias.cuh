#pragma once
// sg_attention_block (kernels/fused.cuh), step 2 (BIAS_IN = 0): the pair bias of the block's rows.
// Part of the scene_graph template (scene_graph.cuh).

#include "../../pair_bias.cuh"
#include "../../sizes.cuh"
#include "../../smem.cuh"
#include "copies.cuh"

namespace tune_kernels {

// Step 2. Pair bias of this block's rows while the copies are in flight: writes sc[h][r][j]
// (reads only global memory). LPP adjacent lanes share a pair (its hidden units split among
// them) so the few pairs of a small tile still occupy the block; the pass loop is uniform, so
// the shuffles are full-warp.
template <int N, int D, int H, int P, int QT, int BLOCK>
__device__ __forceinline__ void sg_attention_pair_bias(const float* __restrict__ pair_feats, const float* __restrict__ w0,
                                                       const float* __restrict__ b0, const float* __restrict__ w2,
                                                       const float* __restrict__ b2, int b, int i0, int tid) {
  using L = SgAttentionLayout<N, D, H, QT>;
  using tune_kernels::sg_smem;
  float* sc = reinterpret_cast<float*>(sg_smem) + L::kSc;
  const auto row_of = [&](int r) { return i0 + r < N ? i0 + r : N - 1; };
  constexpr int PAIRS = QT * N;
  constexpr int LPP = sg_pair_lanes(PAIRS, P, BLOCK);
  for (int base = 0; base < PAIRS * LPP; base += BLOCK) {
    const int raw = base + tid;
    const int u = raw < PAIRS * LPP ? raw : PAIRS * LPP - 1;
    const int r = (u / LPP) / N, j = (u / LPP) % N, kl = u % LPP;
    float res[H];
    sg_pair_mlp<P, H, LPP, 0>(pair_feats + ((b * N + row_of(r)) * N + j) * P, w0, b0, w2, b2, kl, res);
#pragma unroll
    for (int h = 0; h < H; ++h) {
#pragma unroll
      for (int off = LPP / 2; off > 0; off /= 2) res[h] += __shfl_xor_sync(0xffffffffu, res[h], off);
    }
    if (raw < PAIRS * LPP) {
#pragma unroll
      for (int h = 0; h < H; ++h) {
        if (h % LPP == kl) sc[(h * QT + r) * N + j] = res[h];
      }
    }
  }
}

}  // namespace tune_kernels

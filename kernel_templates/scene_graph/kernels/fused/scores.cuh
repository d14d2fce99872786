#pragma once
// sg_attention_block (kernels/fused.cuh), steps 6 and 7: the scores and the attention-weighted
// sum of the LayerNorm'd rows.
// Part of the scene_graph template (scene_graph.cuh).

#include "../../reductions.cuh"
#include "../../rows.cuh"
#include "../../sizes.cuh"
#include "../../smem.cuh"
#include "copies.cuh"
#include "tune_common.cuh"

namespace tune_kernels {

// Step 6. sc[h][r][j] += qk[r][h]·hn[j]: reads qk and hn, adds to sc (the bias).
template <int N, int D, int H, int QT, int BLOCK, int ILP>
__device__ __forceinline__ void sg_attention_scores(int tid) {
  using L = SgAttentionLayout<N, D, H, QT>;
  constexpr int S = L::S;
  using tune_kernels::sg_smem;
  float* hn = reinterpret_cast<float*>(sg_smem) + L::kHn;
  float* qk = reinterpret_cast<float*>(sg_smem) + L::kQk;
  float* sc = reinterpret_cast<float*>(sg_smem) + L::kSc;
  if constexpr (ILP != 0) {
    // SL adjacent lanes share one score, each taking every SL-th float4 of the row.
    constexpr int SU = H * QT * N;
    constexpr int SL = sg_t_lanes(SU, D / 4, BLOCK);
    for (int base = 0; base < SU * SL; base += BLOCK) {
      const int raw = base + tid;
      const int lu = raw < SU * SL ? raw : SU * SL - 1;
      const int u = lu / SL, sl = lu % SL;
      const int j = u % N, r = (u / N) % QT, h = u / (N * QT);
      const float4* x = reinterpret_cast<const float4*>(qk + (r * H + h) * S);
      const float4* y = reinterpret_cast<const float4*>(hn + j * S);
      float acc = 0.0f;
#pragma unroll
      for (int k = 0; k < cdiv(D / 4, SL); ++k) {
        const int c4 = sl + SL * k;
        if ((D / 4) % SL == 0 || c4 < D / 4) acc = sg_dot4(x[c4], y[c4], acc);
      }
#pragma unroll
      for (int off = SL / 2; off > 0; off /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, off);
      if (raw < SU * SL && sl == 0) sc[u] += acc;
    }
  } else {
    for (int u = tid; u < H * QT * N; u += BLOCK) {
      const int j = u % N, r = (u / N) % QT, h = u / (N * QT);
      const float4* x = reinterpret_cast<const float4*>(qk + (r * H + h) * S);
      const float4* y = reinterpret_cast<const float4*>(hn + j * S);
      float acc = 0.0f;
#pragma unroll 8
      for (int c4 = 0; c4 < D / 4; ++c4) acc = sg_dot4(x[c4], y[c4], acc);
      sc[u] += acc;
    }
  }
}

// Step 7 (after the masked softmax of sc). qk[r][h] = Σ_j a[h][r][j] hn[j]: reads sc and hn,
// writes qk.
template <int N, int D, int H, int QT, int BLOCK, int ILP>
__device__ __forceinline__ void sg_attention_weighted_rows() {
  using L = SgAttentionLayout<N, D, H, QT>;
  constexpr int S = L::S;
  using tune_kernels::sg_smem;
  float* hn = reinterpret_cast<float*>(sg_smem) + L::kHn;
  float* qk = reinterpret_cast<float*>(sg_smem) + L::kQk;
  float* sc = reinterpret_cast<float*>(sg_smem) + L::kSc;
  const auto mload = [&](int, int t, int c4) { return *reinterpret_cast<const float4*>(hn + t * S + 4 * c4); };
  const auto xval = [&](int r, int h, int t) { return sc[(h * QT + r) * N + t]; };
  const auto store = [&](int r, int h, int c4, float4 y) { *reinterpret_cast<float4*>(qk + (r * H + h) * S + 4 * c4) = y; };
  if constexpr (ILP != 0) {
    sg_cols_accum_split<QT, H, D / 4, N, BLOCK>(mload, xval, store);
  } else {
    sg_cols_accum<QT, H, D / 4, N, BLOCK>(mload, xval, store);
  }
}

}  // namespace tune_kernels

#pragma once
// sg_attention_block (kernels/fused.cuh), steps 4, 5, 8, 9: the projections by Wq, Wk, Wv, Wout.
// Part of the scene_graph template (scene_graph.cuh).
// w_q, w_k, w_v, w_o: the weights where they are read (SMEM_W: sw, row stride S; else global).

#include "../../rows.cuh"
#include "../../smem.cuh"
#include "copies.cuh"

namespace tune_kernels {

// Step 4. q[r] = scale · hn[row r]·Wqᵀ: reads hn, writes qc.
template <int N, int D, int H, int QT, int BLOCK, int SMEM_W>
__device__ __forceinline__ void sg_attention_query(const float* __restrict__ w_q, int i0) {
  using L = SgAttentionLayout<N, D, H, QT>;
  constexpr int S = L::S, HD = D / H, WS = SMEM_W ? S : D;
  using tune_kernels::sg_smem;
  float* hn = reinterpret_cast<float*>(sg_smem) + L::kHn;
  float* qc = reinterpret_cast<float*>(sg_smem) + L::kQc;
  const auto row_of = [&](int r) { return i0 + r < N ? i0 + r : N - 1; };
  const float scale = 1.0f / sqrtf(static_cast<float>(HD));
  sg_rows_dot<QT, D, D, BLOCK>([&](int o, int c4) { return sg_load4<SMEM_W>(w_q + o * WS + 4 * c4); },
                               [&](int r, int, int c4) {
                                 return *reinterpret_cast<const float4*>(hn + row_of(r) * S + 4 * c4);
                               },
                               [&](int r, int o, float y) { qc[r * S + o] = y * scale; });
}

// Step 5. qk[r][h] = Wk_hᵀ q_h[r], D values per (row, head): reads qc, writes qk.
template <int N, int D, int H, int QT, int BLOCK, int SMEM_W, int ILP>
__device__ __forceinline__ void sg_attention_fold_keys(const float* __restrict__ w_k) {
  using L = SgAttentionLayout<N, D, H, QT>;
  constexpr int S = L::S, HD = D / H, WS = SMEM_W ? S : D;
  using tune_kernels::sg_smem;
  float* qc = reinterpret_cast<float*>(sg_smem) + L::kQc;
  float* qk = reinterpret_cast<float*>(sg_smem) + L::kQk;
  const auto mload = [&](int h, int t, int c4) { return sg_load4<SMEM_W>(w_k + (h * HD + t) * WS + 4 * c4); };
  const auto xval = [&](int r, int h, int t) { return qc[r * S + h * HD + t]; };
  const auto store = [&](int r, int h, int c4, float4 y) { *reinterpret_cast<float4*>(qk + (r * H + h) * S + 4 * c4) = y; };
  if constexpr (ILP != 0) {
    sg_cols_accum_split<QT, H, D / 4, HD, BLOCK>(mload, xval, store);
  } else {
    sg_cols_accum<QT, H, D / 4, HD, BLOCK>(mload, xval, store);
  }
}

// Step 8. ctx[r][o] = Wv[o]·qk[r][head of o]: reads qk, writes qc.
template <int N, int D, int H, int QT, int BLOCK, int SMEM_W>
__device__ __forceinline__ void sg_attention_context(const float* __restrict__ w_v) {
  using L = SgAttentionLayout<N, D, H, QT>;
  constexpr int S = L::S, HD = D / H, WS = SMEM_W ? S : D;
  using tune_kernels::sg_smem;
  float* qc = reinterpret_cast<float*>(sg_smem) + L::kQc;
  float* qk = reinterpret_cast<float*>(sg_smem) + L::kQk;
  sg_rows_dot<QT, D, D, BLOCK>([&](int o, int c4) { return sg_load4<SMEM_W>(w_v + o * WS + 4 * c4); },
                               [&](int r, int o, int c4) {
                                 return *reinterpret_cast<const float4*>(qk + (r * H + o / HD) * S + 4 * c4);
                               },
                               [&](int r, int o, float y) { qc[r * S + o] = y; });
}

// Step 9. out = nodes + ctx·Woutᵀ, rows i0 + r < N: reads qc (ctx), writes global out.
template <int N, int D, int H, int QT, int BLOCK, int SMEM_W>
__device__ __forceinline__ void sg_attention_out(const float* __restrict__ w_o, const float* __restrict__ nodes,
                                                 float* __restrict__ out, int b, int i0) {
  using L = SgAttentionLayout<N, D, H, QT>;
  constexpr int S = L::S, WS = SMEM_W ? S : D;
  using tune_kernels::sg_smem;
  float* qc = reinterpret_cast<float*>(sg_smem) + L::kQc;
  sg_rows_dot<QT, D, D, BLOCK>([&](int o, int c4) { return sg_load4<SMEM_W>(w_o + o * WS + 4 * c4); },
                               [&](int r, int, int c4) { return *reinterpret_cast<const float4*>(qc + r * S + 4 * c4); },
                               [&](int r, int o, float y) {
                                 if (i0 + r < N) {
                                   const int e = (b * N + i0 + r) * D + o;
                                   out[e] = __ldg(nodes + e) + y;
                                 }
                               });
}

}  // namespace tune_kernels

#pragma once
// sg_fused_head (kernels/fused_head.cuh), steps 4 to 8: head h's attention of query row i.
// Part of the scene_graph template (scene_graph.cuh).

#include "../../reductions.cuh"
#include "../../rows.cuh"
#include "../../smem.cuh"
#include "inputs.cuh"

// Step 4. q_h[t] = scale · hn[i]·Wq[h·HD + t]: reads hn, writes qh.
template <int N, int D, int H, int BLOCK>
__device__ __forceinline__ void sg_fused_head_query(const float* __restrict__ wq, int i, int h) {
  namespace k = tune_kernels;
  using L = SgFusedHeadLayout<N, D, H>;
  constexpr int HD = L::HD, S = L::S;
  using tune_kernels::sg_smem;
  float* hn = reinterpret_cast<float*>(sg_smem) + L::kHn;
  float* qh = reinterpret_cast<float*>(sg_smem) + L::kQh;
  const float scale = 1.0f / sqrtf(static_cast<float>(HD));
  k::sg_rows_dot<1, HD, D, BLOCK>([&](int o,
                                      int c4) { return __ldg(reinterpret_cast<const float4*>(wq + (h * HD + o) * D) + c4); },
                                  [&](int, int, int c4) { return *reinterpret_cast<const float4*>(hn + i * S + 4 * c4); },
                                  [&](int, int o, float y) { qh[o] = y * scale; });
}

// Step 5. u = Wk_hᵀ q_h: reads qh, writes u.
template <int N, int D, int H, int BLOCK>
__device__ __forceinline__ void sg_fused_head_fold_key(const float* __restrict__ wk, int h) {
  namespace k = tune_kernels;
  using L = SgFusedHeadLayout<N, D, H>;
  constexpr int HD = L::HD;
  using tune_kernels::sg_smem;
  float* qh = reinterpret_cast<float*>(sg_smem) + L::kQh;
  float* u = reinterpret_cast<float*>(sg_smem) + L::kU;
  k::sg_cols_accum<1, 1, D / 4, HD, BLOCK>(
      [&](int, int t, int c4) { return __ldg(reinterpret_cast<const float4*>(wk + (h * HD + t) * D) + c4); },
      [&](int, int, int t) { return qh[t]; },
      [&](int, int, int c4, float4 y) { *reinterpret_cast<float4*>(u + 4 * c4) = y; });
}

// Step 6. sc[j] += u·hn[j], a warp per j: reads u and hn, adds to sc (the bias).
template <int N, int D, int H, int BLOCK>
__device__ __forceinline__ void sg_fused_head_scores(int tid) {
  namespace k = tune_kernels;
  using L = SgFusedHeadLayout<N, D, H>;
  constexpr int S = L::S;
  using tune_kernels::sg_smem;
  float* hn = reinterpret_cast<float*>(sg_smem) + L::kHn;
  float* u = reinterpret_cast<float*>(sg_smem) + L::kU;
  float* sc = reinterpret_cast<float*>(sg_smem) + L::kSc;
  const int warp = tid / 32, lane = tid % 32;
  for (int j = warp; j < N; j += BLOCK / 32) {
    float acc = 0.0f;
    for (int c = lane; c < D; c += 32) acc = fmaf(u[c], hn[j * S + c], acc);
    acc = k::sg_warp_sum(acc);
    if (lane == 0) sc[j] += acc;
  }
}

// Step 7 (after the masked softmax of sc). u = Σ_j a[j] hn[j]: reads sc and hn, writes u.
template <int N, int D, int H, int BLOCK>
__device__ __forceinline__ void sg_fused_head_weighted_rows() {
  namespace k = tune_kernels;
  using L = SgFusedHeadLayout<N, D, H>;
  constexpr int S = L::S;
  using tune_kernels::sg_smem;
  float* hn = reinterpret_cast<float*>(sg_smem) + L::kHn;
  float* u = reinterpret_cast<float*>(sg_smem) + L::kU;
  float* sc = reinterpret_cast<float*>(sg_smem) + L::kSc;
  k::sg_cols_accum<1, 1, D / 4, N, BLOCK>([&](int, int t,
                                              int c4) { return *reinterpret_cast<const float4*>(hn + t * S + 4 * c4); },
                                          [&](int, int, int t) { return sc[t]; },
                                          [&](int, int, int c4, float4 y) { *reinterpret_cast<float4*>(u + 4 * c4) = y; });
}

// Step 8. ctx_h[t] = Wv[h·HD + t]·u: reads u, writes ctx.
template <int N, int D, int H, int BLOCK>
__device__ __forceinline__ void sg_fused_head_context(const float* __restrict__ wv, int h) {
  namespace k = tune_kernels;
  using L = SgFusedHeadLayout<N, D, H>;
  constexpr int HD = L::HD;
  using tune_kernels::sg_smem;
  float* ctx = reinterpret_cast<float*>(sg_smem) + L::kCtx;
  float* u = reinterpret_cast<float*>(sg_smem) + L::kU;
  k::sg_rows_dot<1, HD, D, BLOCK>([&](int o,
                                      int c4) { return __ldg(reinterpret_cast<const float4*>(wv + (h * HD + o) * D) + c4); },
                                  [&](int, int, int c4) { return *reinterpret_cast<const float4*>(u + 4 * c4); },
                                  [&](int, int o, float y) { ctx[o] = y; });
}

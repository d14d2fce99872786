#pragma once
// sg_head_attention (kernels/split.cuh), steps 3 to 5: head's projections and attention.
// Part of the scene_graph template (scene_graph.cuh).

#include "../../rows.cuh"
#include "../../smem.cuh"
#include "head_inputs.cuh"

// Step 3. q_h (scaled), k_h, v_h of all N rows, output o = m*HD + t: reads hn and (SMEM_W) sw,
// writes qkv.
template <int N, int D, int H, int BLOCK, int SMEM_W>
__device__ __forceinline__ void sg_head_project(const float* __restrict__ wq, const float* __restrict__ wk,
                                                const float* __restrict__ wv, int head) {
  using namespace tune_kernels;
  using L = SgHeadLayout<N, D, H, SMEM_W>;
  constexpr int HD = L::HD, S = L::S, HS = L::HS, WS = SMEM_W ? S : D;
  using tune_kernels::sg_smem;
  float* hn = reinterpret_cast<float*>(sg_smem) + L::kHn;
  float* sw = reinterpret_cast<float*>(sg_smem) + L::kSw;
  float* qkv = reinterpret_cast<float*>(sg_smem) + L::kQkv;
  const float scale = 1.0f / sqrtf(static_cast<float>(HD));
  const float* s_w = sw + 2 * D;
  sg_rows_dot<N, 3 * HD, D, BLOCK>(
      [&](int o, int c4) {
        if constexpr (SMEM_W != 0) {
          return *reinterpret_cast<const float4*>(s_w + o * WS + 4 * c4);
        } else {
          const float* w = o < HD ? wq : (o < 2 * HD ? wk : wv);
          return __ldg(reinterpret_cast<const float4*>(w + (head * HD + o % HD) * D + 4 * c4));
        }
      },
      [&](int r, int, int c4) { return *reinterpret_cast<const float4*>(hn + r * S + 4 * c4); },
      [&](int r, int o, float y) { qkv[((o / HD) * N + r) * HS + o % HD] = o < HD ? y * scale : y; });
}

// Step 4. sc[i][j] += q_h[i]·k_h[j]: reads qkv, adds to sc (the bias). qkv and sc come from the
// kernel (re-deriving them here from sg_smem changed the machine code).
template <int N, int D, int H, int BLOCK, int SMEM_W>
__device__ __forceinline__ void sg_head_scores(int tid, const float* qkv, float* sc) {
  using namespace tune_kernels;
  using L = SgHeadLayout<N, D, H, SMEM_W>;
  constexpr int HD = L::HD, HS = L::HS;
  const float* q = qkv;
  const float* k = qkv + N * HS;
  for (int u = tid; u < N * N; u += BLOCK) {
    const int i = u / N, j = u % N;
    float acc = 0.0f;
#pragma unroll 8
    for (int t = 0; t < HD; ++t) acc = fmaf(q[i * HS + t], k[j * HS + t], acc);
    sc[u] += acc;
  }
}

// Step 5 (after the masked softmax of sc). ctx[b, i, head·HD + t] = Σ_j a[i][j] v_h[j][t]:
// reads sc and qkv, writes global ctx.
template <int N, int D, int H, int BLOCK, int SMEM_W>
__device__ __forceinline__ void sg_head_context(float* __restrict__ ctx, int b, int head, int tid) {
  using namespace tune_kernels;
  using L = SgHeadLayout<N, D, H, SMEM_W>;
  constexpr int HD = L::HD, HS = L::HS;
  using tune_kernels::sg_smem;
  float* qkv = reinterpret_cast<float*>(sg_smem) + L::kQkv;
  float* sc = reinterpret_cast<float*>(sg_smem) + L::kSc;
  const float* v = qkv + 2 * N * HS;
  for (int u = tid; u < N * HD; u += BLOCK) {
    const int i = u / HD, t = u % HD;
    float acc = 0.0f;
#pragma unroll 8
    for (int j = 0; j < N; ++j) acc = fmaf(sc[i * N + j], v[j * HS + t], acc);
    ctx[(b * N + i) * D + head * HD + t] = acc;
  }
}

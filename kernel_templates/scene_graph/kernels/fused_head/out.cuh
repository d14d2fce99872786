#pragma once
// sg_fused_head (kernels/fused_head.cuh), step 9: the output row, summed over the cluster.
// Part of the scene_graph template (scene_graph.cuh).

#include "../../ptx.cuh"
#include "../../rows.cuh"
#include "../../smem.cuh"
#include "inputs.cuh"

// Step 9a. part[o] = Σ_t Wout[o][h·HD + t] ctx_h[t]: reads ctx, writes part (this head's share).
template <int N, int D, int H, int BLOCK>
__device__ __forceinline__ void sg_fused_head_out_share(const float* __restrict__ wo, int h) {
  namespace k = tune_kernels;
  using L = SgFusedHeadLayout<N, D, H>;
  constexpr int HD = L::HD;
  using tune_kernels::sg_smem;
  float* ctx = reinterpret_cast<float*>(sg_smem) + L::kCtx;
  float* part = reinterpret_cast<float*>(sg_smem) + L::kPart;
  k::sg_rows_dot<1, D, HD, BLOCK>([&](int o,
                                      int c4) { return __ldg(reinterpret_cast<const float4*>(wo + o * D + h * HD) + c4); },
                                  [&](int, int, int c4) { return *reinterpret_cast<const float4*>(ctx + 4 * c4); },
                                  [&](int, int o, float y) { part[o] = y; });
}

// Step 9b (after a cluster barrier). out[b, i, o] = nodes + Σ_r part_r[o] for block h's outputs
// o in [h·HD, (h+1)·HD), the shares in rank order: reads part of every block of the cluster.
template <int N, int D, int H, int BLOCK>
__device__ __forceinline__ void sg_fused_head_out_sum(const float* __restrict__ nodes, float* __restrict__ out, int b, int i,
                                                      int h, int tid) {
  namespace k = tune_kernels;
  using L = SgFusedHeadLayout<N, D, H>;
  constexpr int HD = L::HD;
  using tune_kernels::sg_smem;
  float* part = reinterpret_cast<float*>(sg_smem) + L::kPart;
  for (int t = tid; t < HD; t += BLOCK) {
    const int o = h * HD + t;
    float acc = 0.0f;
#pragma unroll
    for (int r = 0; r < H; ++r) acc += k::sg_cluster_load(part + o, static_cast<unsigned>(r));
    const int e = (b * N + i) * D + o;
    out[e] = __ldg(nodes + e) + acc;
  }
}

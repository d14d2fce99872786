#pragma once
// strategy fused, mapping head: sg_fused_head, a cluster of `heads` blocks per query row, and its
// shared-memory size.
// Part of the scene_graph template (scene_graph.cuh).

#include "../attention.cuh"
#include "../layernorm.cuh"
#include "../ptx.cuh"
#include "../rows.cuh"
#include "../sizes.cuh"
#include "../smem.cuh"
#include "fused_head/attention.cuh"
#include "fused_head/inputs.cuh"
#include "fused_head/out.cuh"
#include "tune_common.cuh"

namespace tune_kernels {

// Dynamic shared memory (bytes) of sg_fused_head (config: `fh_smem`).
__host__ __device__ constexpr int sg_fused_head_smem_bytes(int N, int D, int H) {
  return 4 * (N * sg_row_stride(D)  // hn
              + round4(D / H) * 2   // q_h, ctx_h
              + sg_row_stride(D)    // Wk_hᵀ q_h, later Σ_j a hn[j]
              + 2 * round4(N)       // bias/scores/attention, mask row
              + round4(D));         // this head's share of the output row, read by the cluster
}

}  // namespace tune_kernels

// strategy fused, mapping head: one launch, grid B * N * H in clusters of H blocks. The cluster
// of (batch b, query row i) has one block per head h, and block h computes only head h: its
// HD rows of Wq, Wk, Wv and HD columns of Wout (a quarter of the weight bytes of a
// query-row block at H = 4, on H times as many SMs), the pair bias of head h, and its share
// Σ_t Wout[o][h·HD + t] ctx_h[t] of every output o. The cluster adds the H shares through
// distributed shared memory: block h writes the outputs o in [h·HD, (h+1)·HD), summing the
// shares in rank order (deterministic). Every block of a cluster takes the same branches, so
// none leaves a cluster barrier waiting.
template <int B, int N, int D, int H, int P, int BLOCK>
__global__ void __cluster_dims__(H, 1, 1) __launch_bounds__(BLOCK)
    sg_fused_head(const float* __restrict__ nodes, const float* __restrict__ pair_feats, const float* __restrict__ edge_mask,
                  const float* __restrict__ gamma, const float* __restrict__ beta, const float* __restrict__ wq,
                  const float* __restrict__ wk, const float* __restrict__ wv, const float* __restrict__ w0,
                  const float* __restrict__ b0, const float* __restrict__ w2, const float* __restrict__ b2,
                  const float* __restrict__ wo, float* __restrict__ out) {
  namespace k = tune_kernels;
  constexpr int HD = D / H;
  constexpr int S = k::sg_row_stride(D);
  static_assert(D % H == 0 && HD % 4 == 0 && D % 4 == 0, "needs D / heads a multiple of 4");
  static_assert(H >= 1 && H <= 8, "a portable cluster has at most 8 blocks");
  using tune_kernels::sg_smem;
  if (blockDim.x != BLOCK || k::sg_dynamic_smem_size() < static_cast<unsigned>(k::sg_fused_head_smem_bytes(N, D, H))) {
    return;
  }
  using L = SgFusedHeadLayout<N, D, H>;                      // kernels/fused_head/inputs.cuh
  float* hn = reinterpret_cast<float*>(sg_smem) + L::kHn;    // N x S
  float* sc = reinterpret_cast<float*>(sg_smem) + L::kSc;    // N: bias, scores, attention
  float* msk = reinterpret_cast<float*>(sg_smem) + L::kMsk;  // N: edge mask row i
  const int h = static_cast<int>(k::sg_cluster_rank());
  const int b = static_cast<int>(blockIdx.x) / H / N, i = static_cast<int>(blockIdx.x) / H % N;
  const int tid = static_cast<int>(threadIdx.x);

  // Step 1. One cp.async group: all N node rows into hn, mask row i into msk (inline: as a phase
  // of its own the copies compiled differently); the weights' L2 prefetch (inputs.cuh).
  k::sg_copy_rows<N, D, S, BLOCK>(hn, [&](int r) { return nodes + (b * N + r) * D; });
  for (int j = tid; j < N; j += BLOCK) k::sg_copy4(msk + j, edge_mask + (b * N + i) * N + j);
  k::copy_commit();
  sg_fused_head_prefetch_weights<N, D, H, BLOCK>(wq, wk, wv, h, tid);
  // Step 2 (inputs.cuh), while the copies fly. Step 3: LayerNorm of hn (layernorm.cuh).
  sg_fused_head_pair_bias<N, D, H, P, BLOCK>(pair_feats, w0, b0, w2, b2, b, i, h, tid);
  k::copy_wait<0>();
  __syncthreads();
  k::sg_layernorm_rows<N, D, S, BLOCK, 0>(hn, gamma, beta);
  __syncthreads();

  // Steps 4-8 (kernels/fused_head/attention.cuh).
  sg_fused_head_query<N, D, H, BLOCK>(wq, i, h);
  __syncthreads();
  sg_fused_head_fold_key<N, D, H, BLOCK>(wk, h);
  __syncthreads();
  sg_fused_head_scores<N, D, H, BLOCK>(tid);
  __syncthreads();
  k::sg_masked_softmax<N, BLOCK>(sc, 1, [&](int) { return msk; });
  __syncthreads();
  sg_fused_head_weighted_rows<N, D, H, BLOCK>();
  __syncthreads();
  sg_fused_head_context<N, D, H, BLOCK>(wv, h);
  __syncthreads();
  // Step 9 (kernels/fused_head/out.cuh): this head's share, then the cluster's sum.
  sg_fused_head_out_share<N, D, H, BLOCK>(wo, h);
  k::sg_cluster_sync();
  sg_fused_head_out_sum<N, D, H, BLOCK>(nodes, out, b, i, h, tid);
  k::sg_cluster_sync();  // no block leaves while another still reads its shared memory
}

#pragma once
// strategy fused (mappings batch and qtile) and strategy split's second launch: sg_fused and
// sg_split_attention, one body (sg_attention_block), and their shared-memory size.
// Part of the scene_graph template (scene_graph.cuh).

#include "../attention.cuh"
#include "../layernorm.cuh"
#include "../ptx.cuh"
#include "../sizes.cuh"
#include "../smem.cuh"
#include "fused/copies.cuh"
#include "fused/pair_bias.cuh"
#include "fused/projections.cuh"
#include "fused/scores.cuh"
#include "tune_common.cuh"

namespace tune_kernels {

// Dynamic shared memory (bytes) of sg_fused / sg_split_attention; configs/scene_graph.json
// derives the same number as `attn_smem`.
__host__ __device__ constexpr int sg_attention_smem_bytes(int N, int D, int H, int QT, int SMEM_W) {
  return 4 * (N * sg_row_stride(D)                                 // hn: LayerNorm of all N rows
              + QT * sg_row_stride(D)                              // q, later ctx
              + QT * H * sg_row_stride(D)                          // Wk_hᵀ q_h, later Σ_j a hn[j]
              + round4(H * QT * N)                                 // bias, scores, attention
              + round4(QT * N)                                     // edge mask rows
              + (SMEM_W ? 2 * D + 4 * D * sg_row_stride(D) : 0));  // gamma, beta, Wq Wk Wv Wout
}

// Body of sg_fused (BIAS_IN = 0: computes the pair bias of its rows) and sg_split_attention
// (BIAS_IN = 1: reads it from the scratch `bias`, layout (B, H, N, N)). One block per
// (batch b, tile of QT query rows starting at i0); rows past N are computed on row N-1 and
// not stored. Shared memory as sg_attention_smem_bytes. With SMEM_W the four projection
// weights arrive by cp.async in four groups, waited for just before their first use.
template <int B, int N, int D, int H, int P, int QT, int BLOCK, int SMEM_W, int BIAS_IN, int ILP = 0, int L1PF = 0>
__device__ __forceinline__ void sg_attention_block(const float* __restrict__ nodes, const float* __restrict__ pair_feats,
                                                   const float* __restrict__ edge_mask, const float* __restrict__ gamma,
                                                   const float* __restrict__ beta, const float* __restrict__ wq,
                                                   const float* __restrict__ wk, const float* __restrict__ wv,
                                                   const float* __restrict__ w0, const float* __restrict__ b0,
                                                   const float* __restrict__ w2, const float* __restrict__ b2,
                                                   const float* __restrict__ wo, const float* __restrict__ bias,
                                                   float* __restrict__ out) {
  static_assert(D % H == 0 && D % 4 == 0, "D must be a multiple of heads and of 4");
  using L = SgAttentionLayout<N, D, H, QT>;
  constexpr int NT = cdiv(N, QT);
  using tune_kernels::sg_smem;
  if (blockDim.x != BLOCK || sg_dynamic_smem_size() < static_cast<unsigned>(sg_attention_smem_bytes(N, D, H, QT, SMEM_W))) {
    return;
  }
  float* hn = reinterpret_cast<float*>(sg_smem) + L::kHn;
  float* sc = reinterpret_cast<float*>(sg_smem) + L::kSc;
  float* msk = reinterpret_cast<float*>(sg_smem) + L::kMsk;
  float* sw = reinterpret_cast<float*>(sg_smem) + L::kSw;  // SMEM_W: gamma, beta, Wq, Wk, Wv, Wout
  const int b = static_cast<int>(blockIdx.x) / NT;
  const int i0 = (static_cast<int>(blockIdx.x) % NT) * QT;
  const int tid = static_cast<int>(threadIdx.x);

  // Step 1 (kernels/fused/copies.cuh): cp.async groups 0 (inputs), then Wq, Wk, Wv, Wout (SMEM_W).
  sg_attention_copy_inputs<N, D, H, QT, BLOCK, SMEM_W, BIAS_IN, L1PF>(nodes, edge_mask, gamma, beta, wq, wk, wv, wo, bias, b,
                                                                      i0, tid);
  // Where the weights are read: shared memory (SMEM_W, row stride S) or global memory.
  constexpr int S = L::S;
  const float* const g_gamma = SMEM_W ? sw : gamma;
  const float* const g_beta = SMEM_W ? sw + D : beta;
  const float* const w_q = SMEM_W ? sw + 2 * D : wq;
  const float* const w_k = SMEM_W ? sw + 2 * D + D * S : wk;
  const float* const w_v = SMEM_W ? sw + 2 * D + 2 * D * S : wv;
  const float* const w_o = SMEM_W ? sw + 2 * D + 3 * D * S : wo;

  // Step 2 (kernels/fused/pair_bias.cuh), while the copies are in flight.
  if constexpr (BIAS_IN == 0) sg_attention_pair_bias<N, D, H, P, QT, BLOCK>(pair_feats, w0, b0, w2, b2, b, i0, tid);

  // Step 3. LayerNorm of hn (layernorm.cuh).
  copy_wait<(SMEM_W ? 4 : 0)>();
  __syncthreads();
  sg_layernorm_rows<N, D, S, BLOCK, SMEM_W>(hn, g_gamma, g_beta);
  copy_wait<(SMEM_W ? 3 : 0)>();
  __syncthreads();

  // Steps 4-9 (kernels/fused/projections.cuh, kernels/fused/scores.cuh).
  sg_attention_query<N, D, H, QT, BLOCK, SMEM_W>(w_q, i0);
  copy_wait<(SMEM_W ? 2 : 0)>();
  __syncthreads();
  sg_attention_fold_keys<N, D, H, QT, BLOCK, SMEM_W, ILP>(w_k);
  __syncthreads();
  sg_attention_scores<N, D, H, QT, BLOCK, ILP>(tid);
  __syncthreads();
  sg_masked_softmax<N, BLOCK>(sc, H * QT, [&](int row) { return msk + (row % QT) * N; });
  copy_wait<(SMEM_W ? 1 : 0)>();
  __syncthreads();
  sg_attention_weighted_rows<N, D, H, QT, BLOCK, ILP>();
  __syncthreads();
  sg_attention_context<N, D, H, QT, BLOCK, SMEM_W>(w_v);
  copy_wait<0>();
  __syncthreads();
  sg_attention_out<N, D, H, QT, BLOCK, SMEM_W>(w_o, nodes, out, b, i0);
}

}  // namespace tune_kernels

// ---------------------------------------------------------------------------------------
// Tuned variants: strategies fused and split.

// strategy fused: one launch. Grid B * cdiv(N, QT), block BLOCK, dynamic smem attn_smem.
// L1PF = 1 (SMEM_W = 0): Wq and Wk are prefetched into L1 at the start.
// ILP = 1: the Wk fold, the scores and the attention-weighted sum of hn split each unit's
// terms over up to 8 adjacent lanes (more threads, more loads in flight, shorter chains).
template <int B, int N, int D, int H, int P, int QT, int BLOCK, int SMEM_W, int ILP, int L1PF = 0>
__global__ void __launch_bounds__(BLOCK, 1)
    sg_fused(const float* __restrict__ nodes, const float* __restrict__ pair_feats, const float* __restrict__ edge_mask,
             const float* __restrict__ gamma, const float* __restrict__ beta, const float* __restrict__ wq,
             const float* __restrict__ wk, const float* __restrict__ wv, const float* __restrict__ w0,
             const float* __restrict__ b0, const float* __restrict__ w2, const float* __restrict__ b2,
             const float* __restrict__ wo, float* __restrict__ out) {
  tune_kernels::sg_attention_block<B, N, D, H, P, QT, BLOCK, SMEM_W, 0, ILP, L1PF>(nodes, pair_feats, edge_mask, gamma, beta,
                                                                                   wq, wk, wv, w0, b0, w2, b2, wo, nullptr,
                                                                                   out);
}

// strategy split, mapping batch/qtile, second launch: as sg_fused with the bias from scratch.
template <int B, int N, int D, int H, int QT, int BLOCK, int SMEM_W>
__global__ void __launch_bounds__(BLOCK, 1)
    sg_split_attention(const float* __restrict__ nodes, const float* __restrict__ bias, const float* __restrict__ edge_mask,
                       const float* __restrict__ gamma, const float* __restrict__ beta, const float* __restrict__ wq,
                       const float* __restrict__ wk, const float* __restrict__ wv, const float* __restrict__ wo,
                       float* __restrict__ out) {
  tune_kernels::sg_attention_block<B, N, D, H, 1, QT, BLOCK, SMEM_W, 1>(nodes, nullptr, edge_mask, gamma, beta, wq, wk, wv,
                                                                        nullptr, nullptr, nullptr, nullptr, wo, bias, out);
}

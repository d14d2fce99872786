#pragma once
// sg_head_attention (kernels/split.cuh), step 1: its shared-memory layout and the copies into it.
// Part of the scene_graph template (scene_graph.cuh).

#include "../../ptx.cuh"
#include "../../rows.cuh"
#include "../../sizes.cuh"
#include "../../smem.cuh"
#include "tune_common.cuh"

// Offsets (floats) of sg_head_attention's dynamic shared memory, sizes as sg_head_smem_bytes.
template <int N, int D, int H, int SMEM_W>
struct SgHeadLayout {
  static constexpr int HD = D / H, S = tune_kernels::sg_row_stride(D), HS = tune_kernels::sg_odd_stride(HD);
  static constexpr int kHn = 0;                                         // N x S
  static constexpr int kSw = kHn + N * S;                               // SMEM_W: gamma, beta, 3 x HD x S
  static constexpr int kQkv = kSw + (SMEM_W ? 2 * D + 3 * HD * S : 0);  // 3 x N x HS: q_h, k_h, v_h
  static constexpr int kSc = kQkv + tune_kernels::round4(3 * N * HS);   // N x N: bias, scores, attention
  static constexpr int kMsk = kSc + tune_kernels::round4(N * N);        // N x N: edge mask
};

// Step 1. Group 0: the N node rows into hn, the mask into msk and head's bias into sc; with
// SMEM_W gamma and beta (group 0) and head's rows of Wq, Wk, Wv (group 1) into sw.
template <int N, int D, int H, int BLOCK, int SMEM_W>
__device__ __forceinline__ void sg_head_copy_inputs(const float* __restrict__ nodes, const float* __restrict__ bias,
                                                    const float* __restrict__ edge_mask, const float* __restrict__ gamma,
                                                    const float* __restrict__ beta, const float* __restrict__ wq,
                                                    const float* __restrict__ wk, const float* __restrict__ wv, int b,
                                                    int head, int tid) {
  using namespace tune_kernels;
  using L = SgHeadLayout<N, D, H, SMEM_W>;
  constexpr int HD = L::HD, S = L::S;
  using tune_kernels::sg_smem;
  float* hn = reinterpret_cast<float*>(sg_smem) + L::kHn;
  float* sw = reinterpret_cast<float*>(sg_smem) + L::kSw;
  float* sc = reinterpret_cast<float*>(sg_smem) + L::kSc;
  float* msk = reinterpret_cast<float*>(sg_smem) + L::kMsk;
  sg_copy_rows<N, D, S, BLOCK>(hn, [&](int r) { return nodes + (b * N + r) * D; });
  for (int idx = tid; idx < N * N; idx += BLOCK) {
    sg_copy4(msk + idx, edge_mask + b * N * N + idx);
    sg_copy4(sc + idx, bias + (b * H + head) * N * N + idx);
  }
  if constexpr (SMEM_W != 0) {
    sg_copy_rows<1, D, D, BLOCK>(sw, [&](int) { return gamma; });
    sg_copy_rows<1, D, D, BLOCK>(sw + D, [&](int) { return beta; });
    copy_commit();
    // rows m*HD + t of the slice: row head*HD + t of Wq (m=0), Wk (m=1), Wv (m=2)
    sg_copy_rows<3 * HD, D, S, BLOCK>(sw + 2 * D, [&](int r) {
      const float* w = r < HD ? wq : (r < 2 * HD ? wk : wv);
      return w + (head * HD + r % HD) * D;
    });
  }
  copy_commit();
}

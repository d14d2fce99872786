#pragma once
// sg_attention_block (kernels/fused.cuh), step 1: its shared-memory layout and the copies into it.
// Part of the scene_graph template (scene_graph.cuh).

#include "../../ptx.cuh"
#include "../../rows.cuh"
#include "../../sizes.cuh"
#include "../../smem.cuh"
#include "tune_common.cuh"

namespace tune_kernels {

// Offsets (floats) of sg_attention_block's dynamic shared memory, sizes as sg_attention_smem_bytes.
template <int N, int D, int H, int QT>
struct SgAttentionLayout {
  static constexpr int S = sg_row_stride(D);
  static constexpr int kHn = 0;                          // N x S: LayerNorm of all N rows
  static constexpr int kQc = kHn + N * S;                // QT x S: q, later ctx
  static constexpr int kQk = kQc + QT * S;               // (QT x H) x S: Wk_hᵀ q_h, later Σ_j a hn[j]
  static constexpr int kSc = kQk + QT * H * S;           // (H x QT) x N: bias, scores, attention
  static constexpr int kMsk = kSc + round4(H * QT * N);  // QT x N: edge mask rows
  static constexpr int kSw = kMsk + round4(QT * N);      // SMEM_W: gamma, beta, Wq, Wk, Wv, Wout
};

// Step 1. Group 0: node rows, mask rows (and the bias tile, and gamma/beta); then one group per
// weight (SMEM_W), or an L2 (and L1PF: L1) prefetch of the weights.
// Writes hn (the node rows, LayerNorm'd in step 3), msk, sc (BIAS_IN: the bias tile) and
// (SMEM_W) sw: gamma, beta, Wq, Wk, Wv, Wout.
template <int N, int D, int H, int QT, int BLOCK, int SMEM_W, int BIAS_IN, int L1PF>
__device__ __forceinline__ void sg_attention_copy_inputs(const float* __restrict__ nodes,
                                                         const float* __restrict__ edge_mask,
                                                         const float* __restrict__ gamma, const float* __restrict__ beta,
                                                         const float* __restrict__ wq, const float* __restrict__ wk,
                                                         const float* __restrict__ wv, const float* __restrict__ wo,
                                                         const float* __restrict__ bias, int b, int i0, int tid) {
  using L = SgAttentionLayout<N, D, H, QT>;
  constexpr int S = L::S;
  using tune_kernels::sg_smem;
  float* hn = reinterpret_cast<float*>(sg_smem) + L::kHn;
  float* sc = reinterpret_cast<float*>(sg_smem) + L::kSc;
  float* msk = reinterpret_cast<float*>(sg_smem) + L::kMsk;
  float* sw = reinterpret_cast<float*>(sg_smem) + L::kSw;
  const auto row_of = [&](int r) { return i0 + r < N ? i0 + r : N - 1; };
  sg_copy_rows<N, D, S, BLOCK>(hn, [&](int r) { return nodes + (b * N + r) * D; });
  for (int idx = tid; idx < QT * N; idx += BLOCK) {
    sg_copy4(msk + idx, edge_mask + (b * N + row_of(idx / N)) * N + idx % N);
  }
  if constexpr (BIAS_IN != 0) {
    for (int idx = tid; idx < H * QT * N; idx += BLOCK) {
      const int h = idx / (QT * N), r = (idx / N) % QT, j = idx % N;
      sg_copy4(sc + idx, bias + ((b * H + h) * N + row_of(r)) * N + j);
    }
  }
  if constexpr (SMEM_W != 0) {
    float* s_w = sw + 2 * D;
    sg_copy_rows<1, D, D, BLOCK>(sw, [&](int) { return gamma; });
    sg_copy_rows<1, D, D, BLOCK>(sw + D, [&](int) { return beta; });
    copy_commit();
    sg_copy_rows<D, D, S, BLOCK>(s_w, [&](int r) { return wq + r * D; });
    copy_commit();
    sg_copy_rows<D, D, S, BLOCK>(s_w + D * S, [&](int r) { return wk + r * D; });
    copy_commit();
    sg_copy_rows<D, D, S, BLOCK>(s_w + 2 * D * S, [&](int r) { return wv + r * D; });
    copy_commit();
    sg_copy_rows<D, D, S, BLOCK>(s_w + 3 * D * S, [&](int r) { return wo + r * D; });
    copy_commit();
  } else {
    copy_commit();
    // Warm L2 with the weights (cold after a flush); the grid shares the prefetching.
    constexpr int LINES = cdiv(D * D, 32);  // 128-byte lines per weight
    for (int l = static_cast<int>(blockIdx.x) * BLOCK + tid; l < 4 * LINES; l += static_cast<int>(gridDim.x) * BLOCK) {
      const float* w = l < LINES ? wq : (l < 2 * LINES ? wk : (l < 3 * LINES ? wv : wo));
      sg_prefetch_l2(w + (l % LINES) * 32);
    }
    // L1PF: also pull this block's Wq and Wk into its SM's L1 while the LayerNorm runs, so the
    // first two projections read L1 instead of L2.
    if constexpr (L1PF != 0) {
      for (int l = tid; l < 2 * LINES; l += BLOCK) sg_prefetch_l1((l < LINES ? wq : wk) + (l % LINES) * 32);
    }
  }
}

}  // namespace tune_kernels

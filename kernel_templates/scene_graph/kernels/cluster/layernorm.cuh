#pragma once
// sg_cluster, step 2a: the LayerNorm of the block's own rows (kernels/cluster.cuh), stored as
// TF32 (hi, lo) pairs for the projections (step 3). Shared memory: reads xs (RN x S node rows)
// and gb (gamma, beta), writes xh (RN x S float2) of SgClusterLayout. Part of the scene_graph template (scene_graph.cuh).

#include "../../mma.cuh"
#include "../../reductions.cuh"
#include "../../smem.cuh"
#include "tune_common.cuh"

// The first LNW warps, a warp per row and the row in registers: rows warp + LNW q, all of a
// warp's rows at once (independent shuffles).
template <class C>
__device__ __forceinline__ void sg_cluster_layernorm(int warp, int lane) {
  namespace k = tune_kernels;
  using L = typename C::L;
  constexpr int D = C::kD, S = C::S, RN = C::RN, LNW = C::LNW;
  using tune_kernels::sg_smem;
  float* const sm = reinterpret_cast<float*>(sg_smem);
  float* xs = sm + L::kX;                               // RN x S: own node rows
  float2* xh = reinterpret_cast<float2*>(sm + L::kXh);  // RN x S: their LayerNorm, TF32 (hi, lo)
  float* gb = sm + L::kGB;                              // gamma, beta
  if (warp < LNW) {
    constexpr int DL = k::cdiv(D, 32), RPW = k::cdiv(RN, LNW);
    constexpr float inv_d = 1.0f / static_cast<float>(D);
    float x[RPW][DL], mean[RPW], inv[RPW];
#pragma unroll
    for (int q = 0; q < RPW; ++q) {
      const int i = warp + LNW * q < RN ? warp + LNW * q : RN - 1;
      mean[q] = 0.0f;
#pragma unroll
      for (int c = 0; c < DL; ++c) {
        const int col = lane + 32 * c;
        x[q][c] = col < D ? xs[i * S + col] : 0.0f;
        mean[q] += x[q][c];
      }
    }
    k::sg_warp_sums(mean);
#pragma unroll
    for (int q = 0; q < RPW; ++q) {
      mean[q] *= inv_d;
      inv[q] = 0.0f;
#pragma unroll
      for (int c = 0; c < DL; ++c) {
        const float d = lane + 32 * c < D ? x[q][c] - mean[q] : 0.0f;
        inv[q] = fmaf(d, d, inv[q]);
      }
    }
    k::sg_warp_sums(inv);
#pragma unroll
    for (int q = 0; q < RPW; ++q) {
      const int i = warp + LNW * q;
      const float rs = rsqrtf(fmaf(inv[q], inv_d, 1e-5f));
#pragma unroll
      for (int c = 0; c < DL; ++c) {
        const int col = lane + 32 * c;
        if (col < D && i < RN) {
          float hi = 0.0f, lo = 0.0f;
          k::sg_split_tf32((x[q][c] - mean[q]) * rs * gb[col] + gb[D + col], hi, lo);
          xh[i * S + col] = make_float2(hi, lo);
        }
      }
    }
  }
}

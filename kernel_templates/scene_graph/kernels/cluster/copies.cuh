#pragma once
// sg_cluster, step 1: the copies into shared memory (kernels/cluster.cuh).
// Part of the scene_graph template (scene_graph.cuh).

#include "../../ptx.cuh"
#include "../../rows.cuh"
#include "../../smem.cuh"
#include "tune_common.cuh"

// Step 1. Group 0: what step 2 needs; then the q/k/v weights (group 1, or the bulk copies).
// A warp per row; each copy starts on the warp after the previous one's last row.
// Into shared memory (SgClusterLayout): the own node rows and mask rows, gamma and beta, the
// relation MLP, the pair features (kMlpMma) and head h's rows of Wq, Wk, Wv.
template <class C>
__device__ __forceinline__ void sg_cluster_copy_inputs(const float* __restrict__ nodes, const float* __restrict__ pair_feats,
                                                       const float* __restrict__ edge_mask, const float* __restrict__ gamma,
                                                       const float* __restrict__ beta, const float* __restrict__ wq,
                                                       const float* __restrict__ wk, const float* __restrict__ wv,
                                                       const float* __restrict__ w0, const float* __restrict__ b0,
                                                       const float* __restrict__ w2, const float* __restrict__ b2, int b,
                                                       int h, int i0, int tid, int warp, int lane) {
  namespace k = tune_kernels;
  using L = typename C::L;
  constexpr int N = C::kN, D = C::kD, H = C::kH, P = C::kP, BLOCK = C::kBlock, BULK = C::kBulk;
  constexpr int HD = C::HD, S = C::S, RN = C::RN, PS = C::PS, JC = C::JC, NW = C::NW, PW = C::PW;
  constexpr bool kOv = C::kOv;
  using tune_kernels::sg_smem;
  float* const sm = reinterpret_cast<float*>(sg_smem);
  float* xs = sm + L::kX;      // RN x S: own node rows
  float* ws = sm + L::kW;      // 3 HD x S: rows h HD + t of Wq, Wk, Wv
  float* msk = sm + L::kMask;  // RN x N
  float* mw0 = sm + L::kW0;    // P x PS
  float* mb0 = sm + L::kB0;    // P
  float* mw2 = sm + L::kW2;    // H x P, then b2
  float* gb = sm + L::kGB;     // gamma, beta
  float* pfs = sm + L::kPF;    // L::kMlpMma: pair features, PAIRS x PS
  float* bar = sm + L::kBar;   // mbarrier of the BULK weight copies
  const auto row_of = [&](int i) { return i0 + i < N ? i0 + i : N - 1; };
  // pair u of this block: own row u / JC, column h JC + u % JC (clamped)
  const auto pair_src = [&](int u) {
    const int j = h * JC + u % JC;
    return pair_feats + ((b * N + row_of(u / JC)) * N + (j < N ? j : N - 1)) * P;
  };
  constexpr int F_GB = RN, F_W0 = F_GB + 2, F_B0 = F_W0 + P, F_W2 = F_B0 + 1, F_MSK = F_W2 + H, F_PF = F_MSK + RN;
  constexpr int F_W = F_PF + (L::kMlpMma ? RN : 0);
  k::sg_copy_rows_warp<RN, D, S, BLOCK, 0>(xs, [&](int i) { return nodes + (b * N + row_of(i)) * D; });
  k::sg_copy_rows_warp<2, D, D, BLOCK, F_GB>(gb, [&](int q) { return q == 0 ? gamma : beta; });
  k::sg_copy_rows_warp<P, P, PS, BLOCK, F_W0>(mw0, [&](int q) { return w0 + q * P; });
  k::sg_copy_rows_warp<1, P, P, BLOCK, F_B0>(mb0, [&](int) { return b0; });
  k::sg_copy_rows_warp<H, P, P, BLOCK, F_W2>(mw2, [&](int q) { return w2 + q * P; });
  if (tid >= BLOCK - H) k::sg_copy4(mw2 + H * P + (tid - (BLOCK - H)), b2 + (tid - (BLOCK - H)));
  if constexpr (N % 4 == 0) {
    k::sg_copy_rows_warp<RN, N, N, BLOCK, F_MSK>(msk, [&](int i) { return edge_mask + (b * N + row_of(i)) * N; });
  } else {
    for (int idx = tid; idx < RN * N; idx += BLOCK)
      k::sg_copy4(msk + idx, edge_mask + (b * N + row_of(idx / N)) * N + idx % N);
  }
  if constexpr (L::kMlpMma) {
    // own row i: its JC pairs (P floats each, clamped to column N - 1) into rows of stride PS
    constexpr int P4 = P / 4;
    k::sg_rows_by_warp<RN, JC * P4, BLOCK, F_PF>([&](int i, int ch) {
      const int u = i * JC + ch / P4;
      k::sg_copy16(pfs + u * PS + ch % P4 * 4, pair_src(u) + ch % P4 * 4);
    });
  }
  k::copy_commit();
  const auto w_row = [&](int o) { return (o < HD ? wq : (o < 2 * HD ? wk : wv)) + (h * HD + o % HD) * D; };
  if constexpr (BULK != 0) {
    // warp 0 starts the bulk copies of the weight rows (no load unit slots held, no block barrier)
    if (warp == 0) {
      if (lane == 0) {
        k::sg_mbar_init(bar, 1);
        k::sg_mbar_expect_bytes(bar, 3u * HD * D * 4u);
      }
      __syncwarp();
      for (int o = lane; o < 3 * HD; o += 32) k::sg_bulk_copy(ws + o * S, w_row(o), D * 4u, bar);
    }
  } else {
    {  // a call per matrix: head h's source rows are consecutive, no division per row
      constexpr int WW = kOv ? PW : NW, F0 = kOv ? 0 : F_W;
      k::sg_copy_rows_warp<HD, D, S, BLOCK, F0, WW>(ws, [&](int t) { return wq + (h * HD + t) * D; });
      k::sg_copy_rows_warp<HD, D, S, BLOCK, F0 + HD, WW>(ws + HD * S, [&](int t) { return wk + (h * HD + t) * D; });
      k::sg_copy_rows_warp<HD, D, S, BLOCK, F0 + 2 * HD, WW>(ws + 2 * HD * S, [&](int t) { return wv + (h * HD + t) * D; });
    }
    k::copy_commit();
  }
}

// FP32 relation MLP (not kMlpMma): the pair features of pairs tid + BLOCK q into registers.
template <class C>
__device__ __forceinline__ void sg_cluster_load_pair_features(float4 (&pf)[C::L::kMlpMma ? 1 : C::PPT][C::kP / 4],
                                                              const float* __restrict__ pair_feats, int b, int h, int i0,
                                                              int tid) {
  using L = typename C::L;
  constexpr int N = C::kN, P = C::kP, BLOCK = C::kBlock, JC = C::JC, PAIRS = C::PAIRS, PPT = C::PPT;
  const auto row_of = [&](int i) { return i0 + i < N ? i0 + i : N - 1; };
  // pair u of this block: own row u / JC, column h JC + u % JC (clamped)
  const auto pair_src = [&](int u) {
    const int j = h * JC + u % JC;
    return pair_feats + ((b * N + row_of(u / JC)) * N + (j < N ? j : N - 1)) * P;
  };
  if constexpr (!L::kMlpMma) {
#pragma unroll
    for (int q = 0; q < PPT; ++q) {
      const float4* src = reinterpret_cast<const float4*>(pair_src(tid + BLOCK * q < PAIRS ? tid + BLOCK * q : PAIRS - 1));
#pragma unroll
      for (int c = 0; c < P / 4; ++c) pf[q][c] = __ldg(src + c);
    }
  }
}

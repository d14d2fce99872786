#pragma once
// sg_cluster, step 2b: the relation MLP (all heads) of the pairs (own rows) x (column chunk h)
// (kernels/cluster.cuh), each head's bias stored into block (head, r) through distributed shared
// memory (exchange 1, kernels/cluster/exchange.cuh). Each thread waits once at the cluster's first
// barrier (all blocks run) before its first remote store. Shared memory: reads W0 (P x PS), b0,
// W2 and b2, and with kMlpMma the staged pair features (PAIRS x PS) and, with kMlpHalves, kMx
// (tiles x 16 x H) of SgClusterLayout; writes the bias rows (RN x N) of the H blocks of row split r.
// Part of the scene_graph template (scene_graph.cuh).

#include "../../mma.cuh"
#include "../../ptx.cuh"
#include "../../reductions.cuh"
#include "../../smem.cuh"
#include "exchange.cuh"

// hidden = pf · W0ᵀ on the tensor cores for 16 pairs (tile u) and hidden tiles nt0 .. nt0 +
// NTH - 1; lane (g, t) finishes hidden units 2t, 2t+1 of each 8-unit tile for pairs g and
// g+8, then the 4 lanes of a pair add their shares of W2·silu(hidden + b0) into acc.
template <class C, int NTH>
__device__ __forceinline__ void sg_mlp_tile(float (&acc)[2][C::kH], int u, int nt0, int g, int t4, const float* pfs,
                                            const float* mw0, const float* mb0, const float* mw2) {
  namespace k = tune_kernels;
  constexpr int H = C::kH, P = C::kP, PS = C::PS, PAIRS = C::PAIRS;
  const int pa = 16 * u + g, pb = pa + 8;
  const float* xa = pfs + (pa < PAIRS ? pa : PAIRS - 1) * PS;
  const float* xb = pfs + (pb < PAIRS ? pb : PAIRS - 1) * PS;
#pragma unroll
  for (int hh = 0; hh < H; ++hh) acc[0][hh] = acc[1][hh] = 0.0f;
#pragma unroll
  for (int n = 0; n < NTH; ++n) {
    const int nt = nt0 + n;
    const float* wrow = mw0 + (8 * nt + g) * PS;
    float hh4[4] = {0.0f, 0.0f, 0.0f, 0.0f}, hl[4] = {0.0f, 0.0f, 0.0f, 0.0f}, lh[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
    for (int k0 = 0; k0 < P; k0 += 8) k::sg_mma_3xtf32_step(hh4, hl, lh, xa, xb, wrow, k0, t4);
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int col = 8 * nt + 2 * t4 + (e % 2);
      const float a = hh4[e] + (hl[e] + lh[e]) + mb0[col];
      const float sl = __fdividef(a, 1.0f + __expf(-a));  // silu (MUFU exp: relative error near 1e-6)
#pragma unroll
      for (int hh = 0; hh < H; ++hh) acc[e / 2][hh] = fmaf(mw2[hh * P + col], sl, acc[e / 2][hh]);
    }
  }
#pragma unroll
  for (int e = 0; e < 2; ++e) k::sg_lane_sums<1, 2>(acc[e]);
}

// Tile u's biases (acc + b2) into the bias rows bs of block (head, r): lane (g, t) stores heads
// t, t+4, ... of pairs g (e = 0) and g+8 (e = 1).
template <class C>
__device__ __forceinline__ void sg_mlp_store(const float (&acc)[2][C::kH], int u, int h, int r, int rank, int g, int t4,
                                             float* bs, const float* mw2) {
  constexpr int N = C::kN, H = C::kH, P = C::kP, R = C::kR, JC = C::JC, PAIRS = C::PAIRS;
#pragma unroll
  for (int e = 0; e < 2; ++e) {
    const int pu = 16 * u + g + 8 * e;
    const int i = pu / JC, j = h * JC + pu % JC;
    if (pu < PAIRS && j < N) {
#pragma unroll
      for (int hh = 0; hh < H; ++hh) {
        if (hh % 4 == t4) sg_cluster_put<C, 1>(bs + i * N + j, hh * R + r, acc[e][hh] + mw2[H * P + hh], rank);
      }
    }
  }
}

// kMlpHalves: two warps share a tile, half the hidden units each: the second (v odd) leaves its
// sums in shared memory (mx: 16 x H of tile u) and arrives at the tile's named barrier, the first
// waits there, adds them and stores.
template <class C>
__device__ __forceinline__ void sg_mlp_halves(int v, int h, int r, int rank, int g, int t4, const float* pfs,
                                              const float* mw0, const float* mb0, const float* mw2, float* bs,
                                              float* mx_all) {
  namespace k = tune_kernels;
  constexpr int H = C::kH, UT = C::UT, NTH = C::kP / 16;
  if (v < 2 * UT) {
    const int u = v / 2;
    float acc[2][H];
    sg_mlp_tile<C, NTH>(acc, u, v % 2 * NTH, g, t4, pfs, mw0, mb0, mw2);
    float* mx = mx_all + u * 16 * H;  // (e 8 + g) H + head
    if (v % 2 == 1) {
      if (t4 == 0) {
#pragma unroll
        for (int e = 0; e < 2; ++e) {
#pragma unroll
          for (int hh = 0; hh < H; ++hh) mx[(e * 8 + g) * H + hh] = acc[e][hh];
        }
      }
      asm volatile("bar.arrive %0, 64;" ::"r"(1 + u) : "memory");
      k::sg_cluster_wait();
    } else {
      asm volatile("bar.sync %0, 64;" ::"r"(1 + u) : "memory");
#pragma unroll
      for (int e = 0; e < 2; ++e) {
#pragma unroll
        for (int hh = 0; hh < H; ++hh) acc[e][hh] += mx[(e * 8 + g) * H + hh];
      }
      k::sg_cluster_wait();
      sg_mlp_store<C>(acc, u, h, r, rank, g, t4, bs, mw2);
    }
  } else {
    k::sg_cluster_wait();
  }
}

// P % 8 == 0 (L::kMlpMma): on the tensor cores, on the last warps (the first ones have the
// LayerNorm rows): warp v = NW - 1 - warp takes tiles v, v + NW, ... of 16 pairs (sg_mlp_tile),
// or with kMlpHalves half of tile v / 2 (sg_mlp_halves).
template <class C>
__device__ __forceinline__ void sg_cluster_relation_mlp_mma(int h, int r, int rank, int warp, int g, int t4) {
  namespace k = tune_kernels;
  using L = typename C::L;
  constexpr int H = C::kH, P = C::kP, NW = C::NW, UT = C::UT;
  using tune_kernels::sg_smem;
  float* const sm = reinterpret_cast<float*>(sg_smem);
  float* bs = sm + L::kBias;  // RN x N: bias of head h, from the H blocks of row split r
  float* mw0 = sm + L::kW0;   // P x PS
  float* mb0 = sm + L::kB0;   // P
  float* mw2 = sm + L::kW2;   // H x P, then b2
  float* pfs = sm + L::kPF;   // pair features, PAIRS x PS
  const int v = NW - 1 - warp;
  if constexpr (C::kMlpHalves) {
    sg_mlp_halves<C>(v, h, r, rank, g, t4, pfs, mw0, mb0, mw2, bs, sm + L::kMx);
  } else {
    if (v < UT) {
      for (int u = v; u < UT; u += NW) {
        float acc[2][H];
        sg_mlp_tile<C, P / 8>(acc, u, 0, g, t4, pfs, mw0, mb0, mw2);
        if (u == v) k::sg_cluster_wait();
        sg_mlp_store<C>(acc, u, h, r, rank, g, t4, bs, mw2);
      }
    } else {
      k::sg_cluster_wait();
    }
  }
}

// P % 8 != 0: FP32, a thread per pair (tid + BLOCK q), its pair features in registers (pf,
// loaded in step 1 by sg_cluster_load_pair_features).
template <class C>
__device__ __forceinline__ void sg_cluster_relation_mlp_fp32(const float4 (&pf)[C::L::kMlpMma ? 1 : C::PPT][C::kP / 4],
                                                             int h, int r, int rank, int tid) {
  namespace k = tune_kernels;
  using L = typename C::L;
  constexpr int N = C::kN, H = C::kH, P = C::kP, R = C::kR, BLOCK = C::kBlock, PS = C::PS, JC = C::JC;
  constexpr int PAIRS = C::PAIRS, PPT = C::PPT;
  using tune_kernels::sg_smem;
  float* const sm = reinterpret_cast<float*>(sg_smem);
  float* bs = sm + L::kBias;  // RN x N: bias of head h, from the H blocks of row split r
  float* mw0 = sm + L::kW0;   // P x PS
  float* mb0 = sm + L::kB0;   // P
  float* mw2 = sm + L::kW2;   // H x P, then b2
  const auto put1 = [&](float* p, int to, float v) { sg_cluster_put<C, 1>(p, to, v, rank); };
  k::sg_cluster_wait();
#pragma unroll
  for (int q = 0; q < PPT; ++q) {
    const int u = tid + BLOCK * q;
    const int i = u / JC, j = h * JC + u % JC;
    if (u < PAIRS && j < N) {
      float acc[H];
#pragma unroll
      for (int hh = 0; hh < H; ++hh) acc[hh] = mw2[H * P + hh];
#pragma unroll 4
      for (int hk = 0; hk < P; ++hk) {
        const float4* w = reinterpret_cast<const float4*>(mw0 + hk * PS);
        float a0 = mb0[hk], a1 = 0.0f;
#pragma unroll
        for (int c = 0; c < P / 4; ++c) {
          if (c % 2 == 0) {
            a0 = k::sg_dot4(w[c], pf[q][c], a0);
          } else {
            a1 = k::sg_dot4(w[c], pf[q][c], a1);
          }
        }
        const float a = a0 + a1;
        const float sl = __fdividef(a, 1.0f + expf(-a));  // silu, as sg_pair_mlp
#pragma unroll
        for (int hh = 0; hh < H; ++hh) acc[hh] = fmaf(mw2[hh * P + hk], sl, acc[hh]);
      }
#pragma unroll
      for (int hh = 0; hh < H; ++hh) {
        put1(bs + i * N + j, hh * R + r, acc[hh]);
      }
    }
  }
}

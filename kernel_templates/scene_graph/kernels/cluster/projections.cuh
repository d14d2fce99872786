#pragma once
// sg_cluster, step 3: q_h, k_h, v_h of the block's own rows on the tensor cores (kernels/cluster.cuh),
// and what the projection warps wait for first. Shared memory: reads the LayerNorm rows xh (RN x S
// float2) and head h's weight rows ws (3 HD x S); writes qs (RN x HS), with KSPLIT > 1 the partial
// sums (kPart: KSPLIT x 3 x RN x HD, or KSPLIT - 1 MMA fragments per tile), and k_h, v_h (N x HS)
// of the R blocks of head h (exchange 1) of SgClusterLayout.
// Part of the scene_graph template (scene_graph.cuh).

#include "../../mma.cuh"
#include "../../ptx.cuh"
#include "../../smem.cuh"
#include "exchange.cuh"
#include "tune_common.cuh"

// kOv: the LayerNorm warps (the projection warps among them, which wait for their weight copies)
// meet at the projection barrier, then run the projections while the MLP warps go on.
template <class C>
__device__ __forceinline__ void sg_cluster_projection_warps_meet(int warp) {
  namespace k = tune_kernels;
  constexpr int BULK = C::kBulk, PW = C::PW, LNW = C::LNW, kProjBar = C::kProjBar;
  using tune_kernels::sg_smem;
  float* const sm = reinterpret_cast<float*>(sg_smem);
  float* bar = sm + C::L::kBar;  // mbarrier 0: the BULK weight copies
  if constexpr (C::kOv) {
    if (warp < LNW) {
      if constexpr (BULK != 0) {
        if (warp < PW) k::sg_mbar_wait(bar, 0);
      } else {
        k::copy_wait<0>();
      }
      asm volatile("bar.sync %0, %1;" ::"n"(kProjBar), "n"(LNW * 32) : "memory");
    }
  }
}

// Without kOv: every warp waits for the weight copies at a block barrier after the MLP.
template <class C>
__device__ __forceinline__ void sg_cluster_weights_wait() {
  namespace k = tune_kernels;
  constexpr int BULK = C::kBulk;
  using tune_kernels::sg_smem;
  float* const sm = reinterpret_cast<float*>(sg_smem);
  float* bar = sm + C::L::kBar;  // mbarrier 0: the BULK weight copies
  if constexpr (!C::kOv) {
    if constexpr (BULK != 0) {
      k::sg_mbar_wait(bar, 0);
    } else {
      k::copy_wait<0>();
    }
    __syncthreads();
  }
}

// kGroupSum of sg_cluster_project: the KSPLIT warps of one (matrix, row tile, column group) are
// consecutive and meet at the group's named barrier (1 + group) (ids 1 .. 13, 13 for kEvenBar).
template <class C>
constexpr bool sg_cluster_group_sum = C::kKsplit > 1 && C::kOv&& C::PW / C::kKsplit <= 12;

// Step 3, one value: y of matrix m (0 q, 1 k, 2 v), own row li, column o. Writes qs (scale · q_h,
// own block) or k_h, v_h (ks, vs) in the R blocks of head h (exchange 1).
template <class C>
__device__ __forceinline__ void sg_cluster_project_deliver(int m, int li, int o, float y, int h, int rank, int i0) {
  using L = typename C::L;
  constexpr int N = C::kN, R = C::kR, HD = C::HD, HS = C::HS;
  using tune_kernels::sg_smem;
  float* const sm = reinterpret_cast<float*>(sg_smem);
  float* qs = sm + L::kQ;  // RN x HS: scale · q_h
  float* ks = sm + L::kK;  // N x HS: k_h of all rows, from the R blocks of head h
  float* vs = sm + L::kV;  // N x HS
  const float scale = 1.0f / sqrtf(static_cast<float>(HD));
  if (i0 + li >= N) return;
  if (m == 0) {
    qs[li * HS + o] = y * scale;
  } else {
#pragma unroll
    for (int rs = 0; rs < R; ++rs) {
      sg_cluster_put<C, 1>((m == 1 ? ks : vs) + (i0 + li) * HS + o, h * R + rs, y, rank);
    }
  }
}

// Step 3, columns o, o + 1 of row li (o even): one 8-byte remote store per block when rows of
// q/k/v are 8-byte aligned (ASYNC), else two sg_cluster_project_deliver. Writes qs, ks, vs.
template <class C>
__device__ __forceinline__ void sg_cluster_project_deliver2(int m, int li, int o, float y0, float y1, int h, int rank,
                                                            int i0) {
  namespace k = tune_kernels;
  using L = typename C::L;
  constexpr int N = C::kN, R = C::kR, ASYNC = C::kAsync, HD = C::HD, HS = C::HS;
  using tune_kernels::sg_smem;
  float* const sm = reinterpret_cast<float*>(sg_smem);
  float* qs = sm + L::kQ;  // RN x HS: scale · q_h
  float* ks = sm + L::kK;  // N x HS: k_h of all rows, from the R blocks of head h
  float* vs = sm + L::kV;  // N x HS
  float* const bar_x1 = sm + L::kBar + 2;
  const float scale = 1.0f / sqrtf(static_cast<float>(HD));
  if constexpr (ASYNC != 0 && HS % 2 == 0 && HD % 2 == 0) {
    if (i0 + li >= N) return;
    if (m == 0) {
      qs[li * HS + o] = y0 * scale;
      qs[li * HS + o + 1] = y1 * scale;
    } else {
      float* p = (m == 1 ? ks : vs) + (i0 + li) * HS + o;
#pragma unroll
      for (int rs = 0; rs < R; ++rs) {
        if (h * R + rs == rank) {
          *reinterpret_cast<float2*>(p) = make_float2(y0, y1);
        } else {
          k::sg_st_async2(p, static_cast<unsigned>(h * R + rs), y0, y1, bar_x1);
        }
      }
    }
  } else {
    sg_cluster_project_deliver<C>(m, li, o, y0, h, rank, i0);
    if (o + 1 < HD) sg_cluster_project_deliver<C>(m, li, o + 1, y1, h, rank, i0);
  }
}

// Step 3, kGroupSum: column tile n of the group is summed and delivered by warp n % KSPLIT: each
// warp leaves its sums y of the tiles it does not own in shared memory (kPart) as MMA fragments
// (slot kr, or kr - 1 past the owner), an owner waits at the barrier and adds the KSPLIT sums of
// its tiles in k order into y (reads kPart), the others only arrive. Returns whether this warp
// owns a tile.
template <class C>
__device__ __forceinline__ bool sg_cluster_project_group_sum(float (&y)[C::NB][4], int m, int mt, int ng, int kr, int warp,
                                                             int lane) {
  using L = typename C::L;
  constexpr int KSPLIT = C::kKsplit, NT = C::NT, MT = C::MT, NB = C::NB;
  using tune_kernels::sg_smem;
  float* const sm = reinterpret_cast<float*>(sg_smem);
  float* part = sm + L::kPart;  // KSPLIT > 1: KSPLIT - 1 MMA fragments per tile
  const int group = warp / KSPLIT;
  // fragment of (slot, matrix, row tile, column tile): 32 lanes x 4 floats; warp kq's sums of
  // tile n sit in slot kq, or kq - 1 past the tile's owner n % KSPLIT
  const auto frag = [&](int kq, int n) {
    const int slot = kq < n % KSPLIT ? kq : kq - 1;
    return reinterpret_cast<float4*>(part) + (((slot * 3 + m) * MT + mt) * NT + ng * NB + n) * 32 + lane;
  };
  bool owns = false;
#pragma unroll
  for (int n = 0; n < NB; ++n) {
    if (NT % NB != 0 && ng * NB + n >= NT) continue;
    if (n % KSPLIT != kr) {
      *frag(kr, n) = make_float4(y[n][0], y[n][1], y[n][2], y[n][3]);
    } else {
      owns = true;
    }
  }
  if (!owns) {
    asm volatile("bar.arrive %0, %1;" ::"r"(1 + group), "n"(KSPLIT * 32) : "memory");
    return false;
  }
  asm volatile("bar.sync %0, %1;" ::"r"(1 + group), "n"(KSPLIT * 32) : "memory");
#pragma unroll
  for (int n = 0; n < NB; ++n) {
    if ((NT % NB != 0 && ng * NB + n >= NT) || n % KSPLIT != kr) continue;
    const auto sums_of = [&](int kq) { return kq == kr ? make_float4(y[n][0], y[n][1], y[n][2], y[n][3]) : *frag(kq, n); };
    float4 sum = sums_of(0);
#pragma unroll
    for (int kq = 1; kq < KSPLIT; ++kq) {  // in k order
      const float4 pk = sums_of(kq);
      sum.x += pk.x, sum.y += pk.y, sum.z += pk.z, sum.w += pk.w;
    }
    y[n][0] = sum.x, y[n][1] = sum.y, y[n][2] = sum.z, y[n][3] = sum.w;
  }
  return true;
}

// Step 3, one task of a warp: matrix m, 16-row tile mt, column group ng (NB 8-column tiles),
// k-range kr. A = LayerNorm rows, B[k][n] = W[h HD + n][k]. Each of the three 3xTF32 terms
// accumulates in KC independent chains (k-steps alternate), which the warp adds at the end: the
// MMAs of a chain wait for each other, those of different chains overlap. Reads xh and ws;
// delivers (qs, ks, vs), or with KSPLIT > 1 leaves its partial sums in kPart.
template <class C>
__device__ __forceinline__ void sg_cluster_project_tile(int m, int mt, int ng, int kr, int h, int rank, int i0, int warp,
                                                        int lane, int g, int t4) {
  namespace k = tune_kernels;
  using L = typename C::L;
  constexpr int KSPLIT = C::kKsplit, HD = C::HD, S = C::S, RN = C::RN, NT = C::NT, KST = C::KST, NB = C::NB;
  constexpr bool kGroupSum = sg_cluster_group_sum<C>;
  using tune_kernels::sg_smem;
  float* const sm = reinterpret_cast<float*>(sg_smem);
  float2* xh = reinterpret_cast<float2*>(sm + L::kXh);  // RN x S: LayerNorm rows, TF32 (hi, lo)
  float* ws = sm + L::kW;                               // 3 HD x S: rows h HD + t of Wq, Wk, Wv
  float* part = sm + L::kPart;                          // KSPLIT > 1: KSPLIT x 3 x RN x HD
  const int la = 16 * mt + g, lb = la + 8;
  const float2* xa = xh + (la < RN ? la : RN - 1) * S;
  const float2* xb = xh + (lb < RN ? lb : RN - 1) * S;
  const float* wrow[NB];
#pragma unroll
  for (int n = 0; n < NB; ++n) {
    const int on = 8 * (ng * NB + n) + g;
    wrow[n] = ws + (m * HD + (on < HD ? on : HD - 1)) * S;
  }
  constexpr int KC = NB == 1 && KST % 2 == 0 ? 2 : 1;
  float hh[KC][NB][4], hl[KC][NB][4], lh[KC][NB][4];
#pragma unroll
  for (int c = 0; c < KC; ++c) {
#pragma unroll
    for (int n = 0; n < NB; ++n) {
#pragma unroll
      for (int e = 0; e < 4; ++e) hh[c][n][e] = hl[c][n][e] = lh[c][n][e] = 0.0f;
    }
  }
#pragma unroll 6
  for (int k0 = 8 * KST * kr; k0 < 8 * KST * (kr + 1); k0 += 8 * KC) {
#pragma unroll
    for (int c = 0; c < KC; ++c) {
      float ah[4], al[4];
      k::sg_load_split_a(ah, al, xa, xb, k0 + 8 * c, t4);
#pragma unroll
      for (int n = 0; n < NB; ++n) {
        if (NT % NB == 0 || ng * NB + n < NT)
          k::sg_mma_3xtf32_b(hh[c][n], hl[c][n], lh[c][n], ah, al, wrow[n], k0 + 8 * c, t4);
      }
    }
  }
  float y[NB][4];
#pragma unroll
  for (int n = 0; n < NB; ++n) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      y[n][e] = 0.0f;
#pragma unroll
      for (int c = 0; c < KC; ++c) y[n][e] += hh[c][n][e] + (hl[c][n][e] + lh[c][n][e]);
    }
  }
  if constexpr (kGroupSum) {
    if (!sg_cluster_project_group_sum<C>(y, m, mt, ng, kr, warp, lane)) return;
  }
#pragma unroll
  for (int n = 0; n < NB; ++n) {
    if (kGroupSum && n % KSPLIT != kr) continue;
#pragma unroll
    for (int e = 0; e < 4; e += 2) {
      const int li = e < 2 ? la : lb, o = 8 * (ng * NB + n) + 2 * t4;
      if (o >= HD || li >= RN) continue;
      if constexpr (KSPLIT == 1 || kGroupSum) {
        sg_cluster_project_deliver2<C>(m, li, o, y[n][e], y[n][e + 1], h, rank, i0);
      } else {
        part[((kr * 3 + m) * RN + li) * HD + o] = y[n][e];
        if (o + 1 < HD) part[((kr * 3 + m) * RN + li) * HD + o + 1] = y[n][e + 1];
      }
    }
  }
}

// Step 3, KSPLIT > 1 without kGroupSum: after the projection barrier, the partial sums (kPart)
// are added in k order and delivered (qs, ks, vs).
template <class C>
__device__ __forceinline__ void sg_cluster_project_sum_parts(int h, int rank, int i0, int tid, int warp) {
  using L = typename C::L;
  constexpr int BLOCK = C::kBlock, KSPLIT = C::kKsplit, HD = C::HD, RN = C::RN, PW = C::PW, kProjBar = C::kProjBar;
  constexpr bool kOv = C::kOv;
  using tune_kernels::sg_smem;
  float* const sm = reinterpret_cast<float*>(sg_smem);
  float* part = sm + L::kPart;               // KSPLIT x 3 x RN x HD
  constexpr int PT = kOv ? PW * 32 : BLOCK;  // threads of the partial sums
  if (!kOv || warp < PW) {
    if constexpr (kOv) {
      asm volatile("bar.sync %0, %1;" ::"n"(kProjBar), "n"(PW * 32) : "memory");
    } else {
      __syncthreads();
    }
  }
  for (int idx = tid; idx < (tid < PT ? 3 * RN * HD : 0); idx += PT) {
    float y = part[idx];
#pragma unroll
    for (int kr = 1; kr < KSPLIT; ++kr) y += part[kr * 3 * RN * HD + idx];
    sg_cluster_project_deliver<C>(idx / (RN * HD), idx / HD % RN, idx % HD, y, h, rank, i0);
  }
}

// Step 3. Projections of the own rows on the tensor cores, a warp per (matrix, 16-row tile,
// 8-column tile, k-range), all at once (sg_cluster_project_tile); k and v stored into the R
// blocks of head h. With KSPLIT > 1 the partial sums of the k-ranges meet in shared memory and
// are added in k order (in the tasks' warps with kGroupSum, else sg_cluster_project_sum_parts).
template <class C>
__device__ __forceinline__ void sg_cluster_project(int h, int rank, int i0, int tid, int warp, int lane, int g, int t4) {
  constexpr int KSPLIT = C::kKsplit, NW = C::NW, MT = C::MT, NG = C::NG, PW = C::PW;
  constexpr bool kOv = C::kOv;
  constexpr int LNW = C::LNW, kOutBar = C::kOutBar;
  // task u: k-range fastest, then column group, row tile, matrix (k and v, the remote ones, first)
  if (!kOv || warp < PW) {
    for (int u = warp; u < PW; u += NW) {
      sg_cluster_project_tile<C>((u / (MT * NG * KSPLIT) + 1) % 3, u / (NG * KSPLIT) % MT, u / KSPLIT % NG, u % KSPLIT, h,
                                 rank, i0, warp, lane, g, t4);
    }
  }
  if constexpr (KSPLIT > 1 && !sg_cluster_group_sum<C>) sg_cluster_project_sum_parts<C>(h, rank, i0, tid, warp);
  // compute-sanitizer's racecheck orders a store before a later load only when the loading warp
  // has passed more barriers than the storing warp had at the store, whichever barriers they were
  // (docs/scene-graph-racecheck.md; with these two barriers racecheck is clean on the H200, without
  // them it flagged the reads after the next block-wide barrier). With kOv the warps that skipped
  // the LayerNorm's named barrier (from LNW on) or their projection group's (from PW on) meet at
  // barriers of their own here, so that every warp reaches the block-wide barrier below having
  // passed as many. They would wait there anyway; kOutBar is free until after it.
  if constexpr (kOv && LNW < NW) {
    if (warp >= LNW) asm volatile("bar.sync %0, %1;" ::"n"(kOutBar), "n"((NW - LNW) * 32) : "memory");
  }
  if constexpr (kOv && KSPLIT > 1 && PW < NW) {
    constexpr int kEvenBar = 13;
    if (warp >= PW) asm volatile("bar.sync %0, %1;" ::"n"(kEvenBar), "n"((NW - PW) * 32) : "memory");
  }
}

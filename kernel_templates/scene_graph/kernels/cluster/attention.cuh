#pragma once
// sg_cluster, step 4: attention of the block's query rows for head h (kernels/cluster.cuh), ctx_h
// stored into the ctx rows of the H blocks of row split r (exchange 2). Shared memory: reads qs
// (RN x HS), k_h and v_h (N x HS), the bias and mask rows (RN x N); writes ctx (RN x S, head h's
// columns in every block of the row split) of SgClusterLayout.
// Part of the scene_graph template (scene_graph.cuh).

#include "../../reductions.cuh"
#include "../../smem.cuh"
#include "exchange.cuh"
#include "tune_common.cuh"

// Columns tq HQ + 2 u2, + 1 of a row (the quarter tq of a head's HQ-column quarters; 0 past HQ).
template <int HQ>
__device__ __forceinline__ float2 sg_quad_row2(const float* base, int tq, int u2) {
  if constexpr (HQ % 2 == 0) {
    return *reinterpret_cast<const float2*>(base + tq * HQ + 2 * u2);
  } else {
    return make_float2(base[tq * HQ + 2 * u2], 2 * u2 + 1 < HQ ? base[tq * HQ + 2 * u2 + 1] : 0.0f);
  }
}

// The scores q · k of query row i against the lane's keys jg + 8 m (the last key past N), over
// the lane's quarter tq of the columns; the quarters' partial scores summed, every lane of a key
// gets the same sum.
template <class C, int MQ>
__device__ __forceinline__ void sg_quad_scores(float (&sc)[MQ], const float* qs, const float* ks, int i, int jg, int tq) {
  namespace k = tune_kernels;
  constexpr int N = C::kN, HS = C::HS, HQ = C::HD / 4, H2 = k::cdiv(HQ, 2);
  float2 q[H2];
#pragma unroll
  for (int u2 = 0; u2 < H2; ++u2) q[u2] = sg_quad_row2<HQ>(qs + i * HS, tq, u2);
#pragma unroll
  for (int m = 0; m < MQ; ++m) {
    const int j = jg + 8 * m < N ? jg + 8 * m : N - 1;
    float a0 = 0.0f, a1 = 0.0f;
#pragma unroll
    for (int u2 = 0; u2 < H2; ++u2) {
      const float2 kv = sg_quad_row2<HQ>(ks + j * HS, tq, u2);
      a0 = fmaf(q[u2].x, kv.x, a0);
      a1 = fmaf(q[u2].y, kv.y, a1);
    }
    sc[m] = a0 + a1;
  }
  k::sg_lane_sums<8, 16>(sc);
}

// The softmax of query row i over the 8 key lanes: sc becomes the unnormalised weights exp(s + bias
// - max) (0 where the mask is off or past N); returns 1 / their sum, 0 for a row without edges.
template <class C, int MQ>
__device__ __forceinline__ float sg_quad_softmax(float (&sc)[MQ], const float* bs, const float* msk, int i, int jg) {
  namespace k = tune_kernels;
  constexpr int N = C::kN;
  bool on[MQ];
  float mx = -3.402823466e38f;
  bool any = false;
#pragma unroll
  for (int m = 0; m < MQ; ++m) {
    const int j = jg + 8 * m;
    on[m] = j < N && msk[i * N + (j < N ? j : N - 1)] >= 0.5f;
    sc[m] = on[m] ? sc[m] + bs[i * N + (j < N ? j : N - 1)] : 0.0f;
    if (on[m]) mx = fmaxf(mx, sc[m]);
    any = any || on[m];
  }
  mx = k::sg_lane_max<1, 4>(mx);
  const bool row_has_edge = __any_sync(0xffffffffu, any);
  float sum = 0.0f;
#pragma unroll
  for (int m = 0; m < MQ; ++m) {
    sc[m] = on[m] ? __expf(sc[m] - mx) : 0.0f;
    sum += sc[m];
  }
  sum = k::sg_lane_sum<1, 4>(sum);
  return row_has_edge ? __fdividef(1.0f, sum) : 0.0f;  // sum in [1, N]
}

// ctx_h of query row i: the weights sc times the lane's keys' v rows, the partial sums met over the
// key lanes, stored (times inv_sum) into the ctx rows cx of the H blocks of row split r.
template <class C, int MQ>
__device__ __forceinline__ void sg_quad_context(const float (&sc)[MQ], float inv_sum, const float* vs, float* cx, int h,
                                                int r, int rank, int i, int lane) {
  namespace k = tune_kernels;
  constexpr int N = C::kN, H = C::kH, R = C::kR, HD = C::HD, S = C::S, HS = C::HS;
  constexpr int HQ = HD / 4, CV = HQ <= 8 ? 8 : HQ, H2 = k::cdiv(HQ, 2);
  const auto put2 = [&](float* p, int to, float v) { sg_cluster_put<C, 2>(p, to, v, rank); };
  const int jg = lane % 8, tq = lane / 8;
  float cv[CV];
#pragma unroll
  for (int u = 0; u < CV; ++u) cv[u] = 0.0f;
#pragma unroll
  for (int m = 0; m < MQ; ++m) {
    const int j = jg + 8 * m < N ? jg + 8 * m : N - 1;  // a key past N has weight 0
#pragma unroll
    for (int u2 = 0; u2 < H2; ++u2) {
      const float2 vv = sg_quad_row2<HQ>(vs + j * HS, tq, u2);
      cv[2 * u2] = fmaf(sc[m], vv.x, cv[2 * u2]);
      if (2 * u2 + 1 < HQ) cv[2 * u2 + 1] = fmaf(sc[m], vv.y, cv[2 * u2 + 1]);
    }
  }
  if constexpr (HQ <= 8) {  // lane jg ends with column tq HQ + jg
    k::sg_transpose_sum<4>(cv, lane);
    k::sg_transpose_sum<2>(cv, lane);
    k::sg_transpose_sum<1>(cv, lane);
    if (jg < HQ) {
      const float c = cv[0] * inv_sum;
#pragma unroll
      for (int hh = 0; hh < H; ++hh) put2(cx + i * S + h * HD + tq * HQ + jg, hh * R + r, c);
    }
  } else {
    k::sg_lane_sums<1, 4>(cv);  // CV == HQ here
#pragma unroll
    for (int u = 0; u < HQ; ++u) {
      if (u % 8 == jg) {
#pragma unroll
        for (int hh = 0; hh < H; ++hh) put2(cx + i * S + h * HD + tq * HQ + u, hh * R + r, cv[u] * inv_sum);
      }
    }
  }
}

// Step 4. A warp per query row i0 + i: lane j % 32 holds score j; lanes over t for ctx_h.
// ATTN == 1 (attention quad): a warp per query row, lane (tq, jg) = (lane / 8, lane % 8) takes
// the keys jg + 8 m and the quarter tq of the head's columns: each lane reads HQ = HD / 4 columns
// of its keys' k and v rows and of q (8-byte loads, conflict-free), the quarters' partial scores
// meet in two shuffles, the softmax reductions run over the 8 key lanes (three), and the partial
// sums over v meet in a transposed butterfly over the key lanes (lane jg ends with column
// tq HQ + jg).
// About 40 % fewer shared-memory wavefronts than a lane per key with q broadcast (a 16-byte
// load costs four wavefronts whatever the lanes share), and shorter reductions.
template <class C>
__device__ __forceinline__ void sg_cluster_attention_quad(int h, int r, int rank, int i0, int warp, int lane) {
  namespace k = tune_kernels;
  using L = typename C::L;
  constexpr int N = C::kN, RN = C::RN, NW = C::NW, MQ = k::cdiv(N, 8);
  using tune_kernels::sg_smem;
  float* const sm = reinterpret_cast<float*>(sg_smem);
  float* cx = sm + L::kCtx;    // RN x S: ctx rows, a head from each block of the row split
  float* qs = sm + L::kQ;      // RN x HS: scale · q_h
  float* ks = sm + L::kK;      // N x HS
  float* vs = sm + L::kV;      // N x HS
  float* bs = sm + L::kBias;   // RN x N
  float* msk = sm + L::kMask;  // RN x N
  const int jg = lane % 8, tq = lane / 8;
  for (int i = warp; i < RN && i0 + i < N; i += NW) {
    float sc[MQ];
    sg_quad_scores<C>(sc, qs, ks, i, jg, tq);
    const float inv_sum = sg_quad_softmax<C>(sc, bs, msk, i, jg);
    sg_quad_context<C>(sc, inv_sum, vs, cx, h, r, rank, i, lane);
  }
}

// ATTN 0 (attention lanes): a warp per query row i0 + i: lane j % 32 holds score j; lanes over t
// for ctx_h.
template <class C>
__device__ __forceinline__ void sg_cluster_attention_lanes(int h, int r, int rank, int i0, int warp, int lane) {
  namespace k = tune_kernels;
  using L = typename C::L;
  constexpr int N = C::kN, H = C::kH, R = C::kR, HD = C::HD, S = C::S, HS = C::HS, RN = C::RN, NW = C::NW;
  using tune_kernels::sg_smem;
  float* const sm = reinterpret_cast<float*>(sg_smem);
  float* cx = sm + L::kCtx;    // RN x S: ctx rows, a head from each block of the row split
  float* qs = sm + L::kQ;      // RN x HS: scale · q_h
  float* ks = sm + L::kK;      // N x HS
  float* vs = sm + L::kV;      // N x HS
  float* bs = sm + L::kBias;   // RN x N
  float* msk = sm + L::kMask;  // RN x N
  const auto put2 = [&](float* p, int to, float v) { sg_cluster_put<C, 2>(p, to, v, rank); };
  constexpr int JL = k::cdiv(N, 32), TL = k::cdiv(HD, 32);
  for (int i = warp; i < RN && i0 + i < N; i += NW) {
    float a[JL];
    bool on[JL];
    float mx = -3.402823466e38f;
    bool any = false;
#pragma unroll
    for (int jt = 0; jt < JL; ++jt) {
      const int j = lane + 32 * jt;
      float sp[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      if (j < N) {
        if constexpr (HD % 4 == 0) {
#pragma unroll
          for (int c4 = 0; c4 < HD / 4; ++c4) {
            const float4 q = reinterpret_cast<const float4*>(qs + i * HS)[c4];
            const float4 kv = reinterpret_cast<const float4*>(ks + j * HS)[c4];
            sp[0] = fmaf(q.x, kv.x, sp[0]);
            sp[1] = fmaf(q.y, kv.y, sp[1]);
            sp[2] = fmaf(q.z, kv.z, sp[2]);
            sp[3] = fmaf(q.w, kv.w, sp[3]);
          }
        } else {
#pragma unroll
          for (int t = 0; t < HD; ++t) sp[t % 4] = fmaf(qs[i * HS + t], ks[j * HS + t], sp[t % 4]);
        }
      }
      on[jt] = j < N && msk[i * N + j] >= 0.5f;
      a[jt] = on[jt] ? (sp[0] + sp[1]) + (sp[2] + sp[3]) + bs[i * N + j] : 0.0f;
      if (on[jt]) mx = fmaxf(mx, a[jt]);
      any = any || on[jt];
    }
    mx = k::sg_warp_max(mx);
    const bool row_has_edge = __any_sync(0xffffffffu, any);
    float sum = 0.0f;
#pragma unroll
    for (int jt = 0; jt < JL; ++jt) {
      a[jt] = on[jt] ? __expf(a[jt] - mx) : 0.0f;
      sum += a[jt];
    }
    sum = k::sg_warp_sum(sum);
    const float inv_sum = row_has_edge ? __fdividef(1.0f, sum) : 0.0f;  // sum in [1, N]
#pragma unroll
    for (int tt = 0; tt < TL; ++tt) {
      const int t = lane + 32 * tt;
      float cp[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
      for (int jt = 0; jt < JL; ++jt) {
#pragma unroll
        for (int jj = 0; jj < 32 && 32 * jt + jj < N; ++jj) {
          const float aj = __shfl_sync(0xffffffffu, a[jt], jj);
          if (t < HD) cp[jj % 4] = fmaf(aj, vs[(32 * jt + jj) * HS + t], cp[jj % 4]);
        }
      }
      if (t < HD) {
        const float c = ((cp[0] + cp[1]) + (cp[2] + cp[3])) * inv_sum;
#pragma unroll
        for (int hh = 0; hh < H; ++hh) put2(cx + i * S + h * HD + t, hh * R + r, c);
      }
    }
  }
}

#pragma once
// sg_cluster, step 5 with OUT 1 (out mma): out = nodes + ctx · Woutᵀ on the tensor cores (3xTF32),
// KW warps per 16-row tile, a k-range each with its Wout B fragments in registers (wof, loaded in
// step 1 by sg_cluster_load_wout); the partial fragments meet at named barrier kOutBar through the
// LayerNorm buffer xh (free by then: MT (KW - 1) NT 128 floats <= 2 RN S) and the tile's last warp
// adds them in k order. Shared memory: reads ctx and the node rows xs (the residual).
// Part of the scene_graph template (scene_graph.cuh).

#include "../../mma.cuh"
#include "../../smem.cuh"

template <class C>
__device__ __forceinline__ void sg_cluster_out_mma(const float (&wof)[C::NT][C::KSW][2], float* __restrict__ out, int b,
                                                   int h, int i0, int warp, int lane, int g, int t4) {
  namespace k = tune_kernels;
  using L = typename C::L;
  constexpr int N = C::kN, D = C::kD, HD = C::HD, S = C::S, RN = C::RN;
  constexpr int NT = C::NT, MT = C::MT, KW = C::KW, KSW = C::KSW, kOutBar = C::kOutBar;
  using tune_kernels::sg_smem;
  float* const sm = reinterpret_cast<float*>(sg_smem);
  float* xs = sm + L::kX;                               // RN x S: own node rows (the residual)
  float2* xh = reinterpret_cast<float2*>(sm + L::kXh);  // the partial fragments
  float* cx = sm + L::kCtx;                             // RN x S: ctx rows, all heads
  if (warp < MT * KW) {
    const int mt = warp / KW, kq = warp % KW;
    const int la = 16 * mt + g, lb = la + 8;
    const float* xa = cx + (la < RN ? la : RN - 1) * S;
    const float* xb = cx + (lb < RN ? lb : RN - 1) * S;
    float hh[NT][4], hl[NT][4], lh[NT][4];
#pragma unroll
    for (int n = 0; n < NT; ++n) {
#pragma unroll
      for (int e = 0; e < 4; ++e) hh[n][e] = hl[n][e] = lh[n][e] = 0.0f;
    }
#pragma unroll
    for (int ks = 0; ks < KSW; ++ks) {
      float ah[4], al[4];
      k::sg_split_a(ah, al, xa, xb, (kq * KSW + ks) * 8, t4);
#pragma unroll
      for (int n = 0; n < NT; ++n) k::sg_mma_3xtf32(hh[n], hl[n], lh[n], ah, al, wof[n][ks][0], wof[n][ks][1]);
    }
    float4* frag = reinterpret_cast<float4*>(xh) + (mt * (KW - 1) * NT) * 32 + lane;  // [kq][n][lane]
    if (kq < KW - 1) {
#pragma unroll
      for (int n = 0; n < NT; ++n) {
        frag[(kq * NT + n) * 32] = make_float4(hh[n][0] + (hl[n][0] + lh[n][0]), hh[n][1] + (hl[n][1] + lh[n][1]),
                                               hh[n][2] + (hl[n][2] + lh[n][2]), hh[n][3] + (hl[n][3] + lh[n][3]));
      }
      asm volatile("bar.arrive %0, %1;" ::"n"(kOutBar), "n"(MT * KW * 32) : "memory");
    } else {
      asm volatile("bar.sync %0, %1;" ::"n"(kOutBar), "n"(MT * KW * 32) : "memory");
#pragma unroll
      for (int n = 0; n < NT; ++n) {
        float y[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) y[e] = 0.0f;
#pragma unroll
        for (int q = 0; q < KW - 1; ++q) {
          const float4 f = frag[(q * NT + n) * 32];
          y[0] += f.x, y[1] += f.y, y[2] += f.z, y[3] += f.w;
        }
#pragma unroll
        for (int e = 0; e < 4; e += 2) {
          const int li = e < 2 ? la : lb, o = 8 * n + 2 * t4;
          if (li >= RN || i0 + li >= N || o >= HD) continue;
          const float y0 = xs[li * S + h * HD + o] + (y[e] + (hh[n][e] + (hl[n][e] + lh[n][e])));
          float* dst = out + (b * N + i0 + li) * D + h * HD + o;
          if (o + 1 < HD) {
            const float y1 = xs[li * S + h * HD + o + 1] + (y[e + 1] + (hh[n][e + 1] + (hl[n][e + 1] + lh[n][e + 1])));
            if constexpr (HD % 2 == 0 && D % 2 == 0) {
              *reinterpret_cast<float2*>(dst) = make_float2(y0, y1);
            } else {
              dst[0] = y0, dst[1] = y1;
            }
          } else {
            dst[0] = y0;
          }
        }
      }
    }
  }
}

#pragma once
// sg_cluster, step 5: out[i0 + i][h HD + oo] = nodes + ctx[i] · Wout[h HD + oo] for the block's
// rows i and head h's columns, Wout from the registers loaded in step 1 (kernels/cluster.cuh).
// OUT 0, out fma: sg_cluster_out_plain (OUT 1, out mma: kernels/cluster/out_mma.cuh; OUT 2, out
// butterfly: kernels/cluster/out_bfly.cuh). Part of the scene_graph template (scene_graph.cuh).

#include "../../reductions.cuh"
#include "../../smem.cuh"
#include "tune_common.cuh"

// Step 1's loads of head h's Wout rows into registers for step 5: wof (OUT 1, the B fragments of
// the first MT KW warps), wt (OUT 2, the last W5 warps), else wor (threads from warp OW0 on).
template <class C>
__device__ __forceinline__ void sg_cluster_load_wout(float (&wof)[C::kOutMma ? C::NT : 1][C::kOutMma ? C::KSW : 1][2],
                                                     float (&wt)[C::kOutBfly ? C::OPW : 1][C::kOutBfly ? C::KS5 : 1],
                                                     float4 (&wor)[C::kOutMma || C::kOutBfly ? 1 : C::WO4],
                                                     const float* __restrict__ wo, int h, int tid, int warp, int lane) {
  constexpr int D = C::kD, HD = C::HD, NT = C::NT, MT = C::MT, KW = C::KW, KSW = C::KSW, NW = C::NW;
  constexpr int KS5 = C::KS5, OPW = C::OPW, NOG = C::NOG, W5 = C::W5, KLO = C::KLO, WO4 = C::WO4;
  constexpr int RGO = C::RGO, OW0 = C::OW0;
  constexpr bool kOutMma = C::kOutMma, kOutBfly = C::kOutBfly;
  const int g = lane / 4, t4 = lane % 4;  // mma lane coordinates
  const int v5 = warp - (NW - W5);        // kOutBfly: this warp's index among the last W5
  const int ot = tid - OW0 * 32;
  const int rg = ot / (HD * KLO), oo = ot % (HD * KLO) / KLO, ol = ot % KLO;
  const bool o_on = ot >= 0 && rg < RGO;
  if constexpr (kOutMma) {
    if (warp < MT * KW) {
      const int kq = warp % KW;
#pragma unroll
      for (int n = 0; n < NT; ++n) {
        const float* w = wo + (h * HD + (8 * n + g < HD ? 8 * n + g : HD - 1)) * D + kq * KSW * 8 + t4;
#pragma unroll
        for (int ks = 0; ks < KSW; ++ks) {
          wof[n][ks][0] = __ldg(w + 8 * ks);
          wof[n][ks][1] = __ldg(w + 8 * ks + 4);
        }
      }
    }
  } else if constexpr (kOutBfly) {
    if (v5 >= 0) {
      const int og = v5 % NOG;
#pragma unroll
      for (int oq = 0; oq < OPW; ++oq) {
        const int o = og * OPW + oq;
#pragma unroll
        for (int s5 = 0; s5 < KS5; ++s5) {
          const int c = lane + 32 * s5;
          wt[oq][s5] = o < HD && (D % 32 == 0 || c < D) ? __ldg(wo + (h * HD + o) * D + c) : 0.0f;
        }
      }
    }
  } else {
    const float4* w = reinterpret_cast<const float4*>(wo + (h * HD + (o_on ? oo : 0)) * D);
#pragma unroll
    for (int s = 0; s < WO4; ++s) wor[s] = o_on ? __ldg(w + ol + KLO * s) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  }
}

// OUT == 0: FP32 FMAs, KLO lanes per output: threads from warp OW0 on, row group rg, column oo
// of head h, lane ol, holding wor[s] = float4 ol + KLO s of Wout row h HD + oo.
template <class C>
__device__ __forceinline__ void sg_cluster_out_plain(const float4 (&wor)[C::WO4], float* __restrict__ out, int b, int h,
                                                     int i0, int tid, int warp) {
  namespace k = tune_kernels;
  using L = typename C::L;
  constexpr int N = C::kN, D = C::kD, HD = C::HD, S = C::S, RN = C::RN;
  using tune_kernels::sg_smem;
  float* const sm = reinterpret_cast<float*>(sg_smem);
  float* xs = sm + L::kX;    // RN x S: own node rows (the residual)
  float* cx = sm + L::kCtx;  // RN x S: ctx rows, all heads
  constexpr int KLO = C::KLO, WO4 = C::WO4, RGO = C::RGO, OW0 = C::OW0;
  const int ot = tid - OW0 * 32;
  const int rg = ot / (HD * KLO), oo = ot % (HD * KLO) / KLO, ol = ot % KLO;
  const bool o_on = ot >= 0 && rg < RGO;
  if (warp >= OW0) {
    constexpr int RT = k::cdiv(RN, RGO), RC5 = RT <= 16 ? RT : 8;
#pragma unroll 1
    for (int c0 = 0; c0 < RT; c0 += RC5) {
      float acc[RC5];
#pragma unroll
      for (int rr = 0; rr < RC5; ++rr) acc[rr] = 0.0f;
#pragma unroll
      for (int s = 0; s < WO4; ++s) {
#pragma unroll
        for (int rr = 0; rr < RC5; ++rr) {
          const int ir = rg + RGO * (c0 + rr);
          const int i = o_on && ir < RN ? ir : RN - 1;
          acc[rr] = k::sg_dot4(wor[s], reinterpret_cast<const float4*>(cx + i * S)[ol + KLO * s], acc[rr]);
        }
      }
#pragma unroll
      for (int rr = 0; rr < RC5; ++rr) {
#pragma unroll
        for (int off = KLO / 2; off > 0; off /= 2) acc[rr] += __shfl_xor_sync(0xffffffffu, acc[rr], off);
      }
      if (o_on) {
#pragma unroll
        for (int rr = 0; rr < RC5; ++rr) {
          const int i = rg + RGO * (c0 + rr);
          if (rr % KLO == ol && i < RN && i0 + i < N)
            out[(b * N + i0 + i) * D + h * HD + oo] = xs[i * S + h * HD + oo] + acc[rr];
        }
      }
    }
  }
}

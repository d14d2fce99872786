#pragma once
// sg_cluster, step 5: out[i0 + i][h HD + oo] = nodes + ctx[i] · Wout[h HD + oo] for the block's
// rows i and head h's columns, Wout from the registers loaded in step 1 (kernels/cluster.cuh).
// OUT 0: sg_cluster_out_plain (OUT 1 outmma and 2 outbfly are still in the kernel: as functions
// they changed the machine code). Part of the scene_graph template: scene_graph.cuh includes it
// after kernels/cluster/plan.cuh.

// OUT == 0: FP32 FMAs, KLO lanes per output: threads from warp OW0 on, row group rg, column oo
// of head h, lane ol, holding wor[s] = float4 ol + KLO s of Wout row h HD + oo.
template <class C>
__device__ __forceinline__ void sg_cluster_out_plain(const float4 (&wor)[C::WO4], float* __restrict__ out, int b,
                                                     int h, int i0, int tid, int warp) {
  namespace k = tune_kernels;
  using L = typename C::L;
  constexpr int N = C::kN, D = C::kD, HD = C::HD, S = C::S, RN = C::RN;
  extern __shared__ float4 sg_smem[];
  float* const sm = reinterpret_cast<float*>(sg_smem);
  float* xs = sm + L::kX;      // RN x S: own node rows (the residual)
  float* cx = sm + L::kCtx;    // RN x S: ctx rows, all heads
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
          if (rr % KLO == ol && i < RN && i0 + i < N) out[(b * N + i0 + i) * D + h * HD + oo] = xs[i * S + h * HD + oo] + acc[rr];
        }
      }
    }
  }
}

#pragma once
// sg_cluster, step 5 with OUT 2 (out butterfly): out = nodes + ctx · Woutᵀ with FP32 FMAs, a warp per
// (OPW outputs, RPW rows) among the last W5 warps, Wout from registers (wt, loaded in step 1 by
// sg_cluster_load_wout), the warp's 32 sums meeting in a transposed butterfly (SgClusterPlan says
// how). Shared memory: reads ctx and the node rows xs (the residual); nothing of its own.
// Part of the scene_graph template (scene_graph.cuh).

#include "../../reductions.cuh"
#include "../../smem.cuh"

// v5: this warp's index among the last W5 (negative: not one of them), from the kernel.
template <class C>
__device__ __forceinline__ void sg_cluster_out_bfly(const float (&wt)[C::OPW][C::KS5], float* __restrict__ out, int b, int h,
                                                    int i0, int v5, int lane) {
  namespace k = tune_kernels;
  using L = typename C::L;
  constexpr int N = C::kN, D = C::kD, HD = C::HD, S = C::S, RN = C::RN;
  constexpr int KS5 = C::KS5, OPW = C::OPW, RPW = C::RPW, NOG = C::NOG, NRG = C::NRG, RGW = C::RGW;
  using tune_kernels::sg_smem;
  float* const sm = reinterpret_cast<float*>(sg_smem);
  float* xs = sm + L::kX;    // RN x S: own node rows (the residual)
  float* cx = sm + L::kCtx;  // RN x S: ctx rows, all heads
  if (v5 >= 0) {
    const int og = v5 % NOG;
#pragma unroll 1
    for (int rq = v5 / NOG; rq < NRG; rq += RGW) {
      float x[32];
#pragma unroll
      for (int rr = 0; rr < RPW; ++rr) {
        const int ir = rq * RPW + (rr ^ (lane / OPW));
        const int i = ir < RN ? ir : RN - 1;
        float c[KS5];
#pragma unroll
        for (int s5 = 0; s5 < KS5; ++s5) c[s5] = D % 32 == 0 || lane + 32 * s5 < D ? cx[i * S + lane + 32 * s5] : 0.0f;
#pragma unroll
        for (int oq = 0; oq < OPW; ++oq) {
          float a = 0.0f;
#pragma unroll
          for (int s5 = 0; s5 < KS5; ++s5) a = fmaf(wt[oq][s5], c[s5], a);
          x[rr * OPW + oq] = a;
        }
      }
      // the 32 sums over the warp's lanes: the row levels without selects (slot row q of lane
      // l holds row q ^ (l / OPW), as does slot row q + HW / OPW of partner l ^ HW), then the
      // output levels
      k::sg_fold_upper<16>(x);
      k::sg_fold_upper<8>(x);
      if constexpr (OPW == 4) {
        k::sg_fold_upper<4>(x);
      } else {
        k::sg_transpose_sum<4>(x, lane);
      }
      k::sg_transpose_sum<2>(x, lane);
      k::sg_transpose_sum<1>(x, lane);
      const int i = rq * RPW + lane / OPW, oc = og * OPW + lane % OPW;
      if (i < RN && i0 + i < N && oc < HD) out[(b * N + i0 + i) * D + h * HD + oc] = xs[i * S + h * HD + oc] + x[0];
    }
  }
}

#pragma once
// The relation MLP of a pair (the attention bias of every head).
// Part of the scene_graph template (scene_graph.cuh).

#include "rows.cuh"

namespace tune_kernels {

// Relation MLP of one pair, x = the P floats at pf (global): res[h] = (W2 silu(W0 x + b0) + b2)[h]
// summed over the hidden units k = lane + LANES*kk that this lane (of LANES sharing the
// pair) takes; the caller adds the lanes' results. b2 is added by lane 0.
template <int P, int H, int LANES, int SMEM>
__device__ __forceinline__ void sg_pair_mlp(const float* pf, const float* w0, const float* b0, const float* w2,
                                            const float* b2, int lane, float (&res)[H]) {
  static_assert(P % LANES == 0, "LANES must divide P");
  float x[P];
  if constexpr (P % 4 == 0) {
#pragma unroll
    for (int p = 0; p < P; p += 4) {
      const float4 v = __ldg(reinterpret_cast<const float4*>(pf + p));
      x[p] = v.x;
      x[p + 1] = v.y;
      x[p + 2] = v.z;
      x[p + 3] = v.w;
    }
  } else {
#pragma unroll
    for (int p = 0; p < P; ++p) x[p] = __ldg(pf + p);
  }
#pragma unroll
  for (int h = 0; h < H; ++h) res[h] = lane == 0 ? sg_load<SMEM>(b2 + h) : 0.0f;
#pragma unroll 2
  for (int kk = 0; kk < P / LANES; ++kk) {
    const int k = lane + LANES * kk;
    float a = sg_load<SMEM>(b0 + k);
#pragma unroll
    for (int p = 0; p < P; ++p) a = fmaf(sg_load<SMEM>(w0 + k * P + p), x[p], a);
    // silu; __fdividef is within 2 ulp for denominators in [1, 2^126] and gives the right
    // 0 beyond (a < -87), and it avoids the division slow path's call and stack frame.
    const float s = __fdividef(a, 1.0f + expf(-a));
#pragma unroll
    for (int h = 0; h < H; ++h) res[h] = fmaf(sg_load<SMEM>(w2 + h * P + k), s, res[h]);
  }
}

// Pair bias of pair number `pair` (pairs ordered (b, i, j)) into bias (B, H, N, N).
template <int N, int H, int P, int SMEM>
__device__ __forceinline__ void sg_pair_bias_one(int pair, const float* __restrict__ pair_feats, const float* w0,
                                                 const float* b0, const float* w2, const float* b2,
                                                 float* __restrict__ bias) {
  const int b = pair / (N * N), ij = pair % (N * N);
  float res[H];
  sg_pair_mlp<P, H, 1, SMEM>(pair_feats + pair * P, w0, b0, w2, b2, 0, res);
#pragma unroll
  for (int h = 0; h < H; ++h) bias[(b * H + h) * N * N + ij] = res[h];
}

}  // namespace tune_kernels

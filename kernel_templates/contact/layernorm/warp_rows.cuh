#pragma once
// LayerNorm of a pair's two rows by one warp, a row's values spread over the lanes (the warp
// strategy's unstaged rows, and the group LayerNorm when C % 4 != 0).
// Part of the contact template (contact.cuh).

#include "tune_common.cuh"

namespace tune_kernels {
namespace contact {

// One warp normalises two rows held as lane values c = lane + 32k (zero where c >= C).
// Both rows run the same code, so LN(row) does not depend on whether it is the (i,j) or the
// (j,i) operand: s and the output stay exactly symmetric.
template <int C>
__device__ __forceinline__ void warp_layernorm2(float (&a)[cdiv(C, 32)], float (&t)[cdiv(C, 32)],
                                                const float (&g)[cdiv(C, 32)], const float (&be)[cdiv(C, 32)]) {
  constexpr int CR = cdiv(C, 32);
  const int lane = threadIdx.x & 31;
  float sa = 0.0f, st = 0.0f;
#pragma unroll
  for (int k = 0; k < CR; ++k) {
    sa += a[k];
    st += t[k];
  }
  sa = warp_sum(sa);
  st = warp_sum(st);
  const float ma = sa / static_cast<float>(C), mt = st / static_cast<float>(C);
  float da = 0.0f, dt = 0.0f;
#pragma unroll
  for (int k = 0; k < CR; ++k) {
    if (lane + 32 * k < C) {
      const float ua = a[k] - ma, ut = t[k] - mt;
      da = fmaf(ua, ua, da);
      dt = fmaf(ut, ut, dt);
    }
  }
  da = warp_sum(da);
  dt = warp_sum(dt);
  const float ra = rsqrtf(da / static_cast<float>(C) + kLnEps);
  const float rt = rsqrtf(dt / static_cast<float>(C) + kLnEps);
#pragma unroll
  for (int k = 0; k < CR; ++k) {
    a[k] = fmaf((a[k] - ma) * ra, g[k], be[k]);
    t[k] = fmaf((t[k] - mt) * rt, g[k], be[k]);
  }
}

template <int C, bool SHARED, class E>
__device__ __forceinline__ void load_lane_vec(const E* v, float (&out)[cdiv(C, 32)]) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int k = 0; k < cdiv(C, 32); ++k) {
    const int c = lane + 32 * k;
    out[k] = c < C ? load1<SHARED>(v + c) : 0.0f;
  }
}

}  // namespace contact
}  // namespace tune_kernels

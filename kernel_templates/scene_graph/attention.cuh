#pragma once
// Masked softmax of score rows, a warp per row.
// Part of the scene_graph template (scene_graph.cuh).

#include "reductions.cuh"
#include "tune_common.cuh"

namespace tune_kernels {

// Masked softmax of `rows` rows of N scores (stride N) in place; mask_row(r) gives the edge
// mask row of score row r. A warp per row; a row without any edge becomes all zeros.
template <int N, int BLOCK, class MaskRow>
__device__ __forceinline__ void sg_masked_softmax(float* scores, int rows, const MaskRow& mask_row) {
  constexpr int PER_LANE = cdiv(N, 32);
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  for (int r = warp; r < rows; r += BLOCK / 32) {
    float* s = scores + r * N;
    const float* m = mask_row(r);
    float v[PER_LANE];
    bool on[PER_LANE];
    float mx = -3.402823466e38f;
    bool any = false;
#pragma unroll
    for (int t = 0; t < PER_LANE; ++t) {
      const int j = lane + 32 * t;
      on[t] = j < N && m[j] >= 0.5f;
      v[t] = on[t] ? s[j] : 0.0f;
      if (on[t]) mx = fmaxf(mx, v[t]);
      any = any || on[t];
    }
    mx = sg_warp_max(mx);
    const bool row_has_edge = __any_sync(0xffffffffu, any);
    float sum = 0.0f;
#pragma unroll
    for (int t = 0; t < PER_LANE; ++t) {
      v[t] = on[t] ? expf(v[t] - mx) : 0.0f;
      sum += v[t];
    }
    sum = sg_warp_sum(sum);
    const float inv_sum = row_has_edge ? __fdividef(1.0f, sum) : 0.0f;  // sum in [1, N]
#pragma unroll
    for (int t = 0; t < PER_LANE; ++t) {
      const int j = lane + 32 * t;
      if (j < N) s[j] = v[t] * inv_sum;
    }
  }
}

}  // namespace tune_kernels

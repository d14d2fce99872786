#pragma once
// LayerNorm of shared rows, a warp per row.
// Part of the scene_graph template (scene_graph.cuh).

#include "reductions.cuh"
#include "rows.cuh"

namespace tune_kernels {

// LayerNorm (eps 1e-5, biased variance, affine) of ROWS shared rows of stride S, in place;
// a warp per row.
template <int ROWS, int D, int S, int BLOCK, int SMEM>
__device__ __forceinline__ void sg_layernorm_rows(float* rows, const float* gamma, const float* beta) {
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  for (int r = warp; r < ROWS; r += BLOCK / 32) {
    float* x = rows + r * S;
    constexpr float inv_d = 1.0f / static_cast<float>(D);
    float sum = 0.0f;
    for (int c = lane; c < D; c += 32) sum += x[c];
    const float mean = sg_warp_sum(sum) * inv_d;
    float var = 0.0f;
    for (int c = lane; c < D; c += 32) {
      const float d = x[c] - mean;
      var = fmaf(d, d, var);
    }
    const float inv = rsqrtf(fmaf(sg_warp_sum(var), inv_d, 1e-5f));
    for (int c = lane; c < D; c += 32) x[c] = (x[c] - mean) * inv * sg_load<SMEM>(gamma + c) + sg_load<SMEM>(beta + c);
  }
}

}  // namespace tune_kernels

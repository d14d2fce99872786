#pragma once
// Warp-level sums and maxima (full warps and lane ranges), the transposed butterfly, float4 dot
// products.
// Part of the scene_graph template (scene_graph.cuh).

namespace tune_kernels {

// One level of a transposed butterfly over a warp: sums x[0 .. 2 HW) of each lane, a lane keeps
// the half its bit HW selects (in x[0 .. HW)) and adds its partner's share of it. Levels 16, 8,
// 4, 2, 1 in turn leave lane l with the warp's total of x[l] (31 shuffles for 32 sums).
template <int HW, int NX>
__device__ __forceinline__ void sg_transpose_sum(float (&x)[NX], int lane) {
  static_assert(2 * HW <= NX, "a level needs 2 HW sums");
  const bool up = (lane & HW) != 0;
#pragma unroll
  for (int q = 0; q < HW; ++q) {
    const float lo = x[q], hi = x[q + HW];
    const float got = __shfl_xor_sync(0xffffffffu, up ? lo : hi, HW);
    x[q] = (up ? hi : lo) + got;
  }
}

// A level of the same butterfly for sums whose slots the lanes already hold permuted (slot
// q + HW of lane l ^ HW holds the sum slot q of lane l holds): no selects.
template <int HW, int NX>
__device__ __forceinline__ void sg_fold_upper(float (&x)[NX]) {
  static_assert(2 * HW <= NX, "a level needs 2 HW sums");
#pragma unroll
  for (int q = 0; q < HW; ++q) x[q] += __shfl_xor_sync(0xffffffffu, x[q + HW], HW);
}

__device__ __forceinline__ float sg_dot4(float4 a, float4 b, float acc) {
  acc = fmaf(a.x, b.x, acc);
  acc = fmaf(a.y, b.y, acc);
  acc = fmaf(a.z, b.z, acc);
  return fmaf(a.w, b.w, acc);
}
__device__ __forceinline__ void sg_axpy4(float s, float4 m, float4& acc) {
  acc.x = fmaf(s, m.x, acc.x);
  acc.y = fmaf(s, m.y, acc.y);
  acc.z = fmaf(s, m.z, acc.z);
  acc.w = fmaf(s, m.w, acc.w);
}
__device__ __forceinline__ float sg_warp_sum(float v) {
  for (int off = 16; off > 0; off /= 2) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}
// Warp sums of M values at once: their shuffles interleave (independent), so M rows cost little
// more latency than one.
template <int M>
__device__ __forceinline__ void sg_warp_sums(float (&v)[M]) {
#pragma unroll
  for (int off = 16; off > 0; off /= 2) {
#pragma unroll
    for (int q = 0; q < M; ++q) v[q] += __shfl_xor_sync(0xffffffffu, v[q], off);
  }
}
__device__ __forceinline__ float sg_warp_max(float v) {
  for (int off = 16; off > 0; off /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
  return v;
}
// Sums and maxima over the lanes whose indices differ only in bits LO .. HI (powers of two; the
// offsets LO, 2 LO, .., HI in turn), of M values at once or of one.
template <int LO, int HI, int M>
__device__ __forceinline__ void sg_lane_sums(float (&v)[M]) {
#pragma unroll
  for (int q = 0; q < M; ++q) {
#pragma unroll
    for (int off = LO; off <= HI; off *= 2) v[q] += __shfl_xor_sync(0xffffffffu, v[q], off);
  }
}
template <int LO, int HI, int M>
__device__ __forceinline__ void sg_lane_maxes(float (&v)[M]) {
#pragma unroll
  for (int q = 0; q < M; ++q) {
#pragma unroll
    for (int off = LO; off <= HI; off *= 2) v[q] = fmaxf(v[q], __shfl_xor_sync(0xffffffffu, v[q], off));
  }
}
template <int LO, int HI>
__device__ __forceinline__ float sg_lane_sum(float v) {
#pragma unroll
  for (int off = LO; off <= HI; off *= 2) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}
template <int LO, int HI>
__device__ __forceinline__ float sg_lane_max(float v) {
#pragma unroll
  for (int off = LO; off <= HI; off *= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
  return v;
}

}  // namespace tune_kernels

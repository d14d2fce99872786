#pragma once
// Sizes the scene_graph kernels derive from their parameters: row strides, lanes per dot
// product, rows per thread.
// Part of the scene_graph template (scene_graph.cuh).

#include "tune_common.cuh"

namespace tune_kernels {

__host__ __device__ constexpr int sg_min(int a, int b) { return a < b ? a : b; }

// Row stride (floats) of a D-float row in shared memory: a whole number of float4s, and an
// odd number of them, so 8 lanes reading one float4 of 8 different rows hit 8 bank quads.
__host__ __device__ constexpr int sg_row_stride(int d) { return d % 8 == 0 ? d + 4 : d; }
// Row stride for scalar reads with lanes over rows: odd, so the lanes hit distinct banks.
__host__ __device__ constexpr int sg_odd_stride(int d) { return d % 2 == 0 ? d + 1 : d; }
// Lanes that share one dot product of K4 float4s (a power of two dividing K4, at most 8):
// 8 lanes read 128 contiguous bytes of a weight row.
__host__ __device__ constexpr int sg_k_lanes(int k4) { return k4 % 8 == 0 ? 8 : (k4 % 4 == 0 ? 4 : (k4 % 2 == 0 ? 2 : 1)); }
// Largest power of two that divides p and is at most cap.
__host__ __device__ constexpr int sg_pow2_divisor(int p, int cap) {
  int l = 1;
  while (l * 2 <= cap && p % (l * 2) == 0) l *= 2;
  return l;
}
// Lanes that share one pair's relation MLP (each takes P/lanes hidden units): enough that the
// pairs of a block keep its threads busy, a power of two dividing P.
__host__ __device__ constexpr int sg_pair_lanes(int pairs, int p, int block) {
  int l = 1;
  while (l < sg_pow2_divisor(p, 32) && pairs * l < block) l *= 2;
  return l;
}
// Rows per thread: as many as possible (up to 8; each weight load is reused that often from
// registers) while every one of `workers` still gets a unit of work.
__host__ __device__ constexpr int sg_rows_per_thread(int rows, int units_per_row_group, int workers) {
  const int candidates[4] = {rows < 8 ? rows : 8, 4, 2, 1};
  for (int i = 0; i < 4; ++i) {
    const int rt = candidates[i];
    if (rt <= rows && cdiv(rows, rt) * units_per_row_group >= workers) return rt;
  }
  return 1;
}

// Units a thread of sg_rows_dot takes per pass (at most `wanted`): bounded so that the weight
// float4s in flight (4*TW registers a unit), the accumulators (RT a unit) and one set of
// input float4s (4*RT) stay within a register budget that leaves room at this block size.
__host__ __device__ constexpr int sg_units_per_pass(int tw, int rt, int wanted, int block) {
  const int budget = block >= 1024 ? 32 : (block >= 512 ? 64 : 96);
  int ub = sg_min(wanted, sg_min(12 / tw, 24 / rt));
  while (ub > 1 && ub * (4 * tw + rt) + 4 * rt > budget) --ub;
  return ub > 1 ? ub : 1;
}

// Lanes that share one output column of a register-resident weight slice (sg_cluster): a power
// of two up to 8 dividing K/4, as many as let all `cols` columns fit in the block at once. Each
// lane keeps K/lanes weights in registers (configs/scene_graph.json: cl_klo).
__host__ __device__ constexpr int sg_reg_lanes(int cols, int k, int block) {
  int l = 1;
  while (l < 8 && (k / 4) % (l * 2) == 0 && cols * l * 2 <= block) l *= 2;
  return l;
}

// Lanes that split the T terms of one sg_cols_accum_split unit: the largest power of two up
// to 8 (and at most T) with which all units still fit in one pass of the block.
__host__ __device__ constexpr int sg_t_lanes(int units, int t, int block) {
  int l = 1;
  while (l < 8 && l * 2 <= t && units * l * 2 <= block) l *= 2;
  return l;
}

// As sg_cols_accum, with TL adjacent lanes sharing one (row group, head, c4) unit: lane tl
// takes the terms t = tl + TL*k (all loads of a lane independent and in flight together),
// and the group adds its partial sums with shuffles. Uses up to 8x more threads than

}  // namespace tune_kernels

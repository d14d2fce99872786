#pragma once
// LNROW 0 on staged tiles: groups of lanes normalise a pair's two rows and store s with gamma
// and beta applied.
// Part of the contact template (contact.cuh).

#include "tune_common.cuh"
#include "warp_rows.cuh"

namespace tune_kernels {
namespace contact {

// Lanes per pair in the staged LayerNorm: groups of G lanes read float4 chunks of a row (G = 8
// makes a quarter-warp read 128 contiguous bytes), so a pair costs a few segmented shuffles
// instead of a whole warp's. 0 when C % 4 != 0: a whole warp per pair then.
__host__ __device__ constexpr int ln_group(int C) {
  if (C % 4 != 0) return 0;
  int g = 8;
  while (g > C / 4) g /= 2;
  return g;
}

// LNROW 0, G == 0 (C % 4 != 0): a whole warp per pair, lane c % 32 holding column c.
template <int C, int TILE_I, int TILE_J, int BLOCK, bool SMEM_W, class E>
__device__ __forceinline__ void layernorm_tile_warps(E* tiles, const E* gamma, const E* beta, int warp, int t_row0) {
  constexpr int RS = row_stride_of<E>(C), kRows = TILE_I * TILE_J, CR = cdiv(C, 32);
  const int lane = threadIdx.x & 31;
  float g[CR], be[CR];
  load_lane_vec<C, SMEM_W>(gamma, g);
  load_lane_vec<C, SMEM_W>(beta, be);
#pragma unroll 1
  for (int q = warp; q < kRows; q += BLOCK / 32) {
    const int ii = q / TILE_J, jj = q - ii * TILE_J;
    E* ra = tiles + q * RS;
    const E* rt = tiles + (t_row0 + jj * TILE_I + ii) * RS;
    float a[CR], t[CR];
#pragma unroll
    for (int k = 0; k < CR; ++k) {
      const int c = lane + 32 * k;
      a[k] = c < C ? to_f32(ra[c]) : 0.0f;
      t[k] = c < C ? to_f32(rt[c]) : 0.0f;
    }
    warp_layernorm2<C>(a, t, g, be);
#pragma unroll
    for (int k = 0; k < CR; ++k) {
      const int c = lane + 32 * k;
      if (c < C) store1(ra + c, (a[k] + t[k]) * 0.5f);
    }
  }
}

// The lane's chunks (k0 + m G) of gamma and beta for layernorm_tile_groups; zeros past the row.
template <int C, bool SMEM_W, class E, int kPerLane>
__device__ __forceinline__ void load_group_chunks(const E* gamma, const E* beta, int k0, float (&g)[kPerLane][4],
                                                  float (&be)[kPerLane][4]) {
  constexpr int G = ln_group(C), kChunks = C / 4;
#pragma unroll
  for (int m = 0; m < kPerLane; ++m) {
    const int ch = k0 + m * G;
    if (ch < kChunks) {
      loadv<4, SMEM_W>(gamma + 4 * ch, g[m]);
      loadv<4, SMEM_W>(beta + 4 * ch, be[m]);
    } else {
#pragma unroll
      for (int e = 0; e < 4; ++e) g[m][e] = be[m][e] = 0.0f;
    }
  }
}

// One pair of layernorm_tile_groups: the G lanes of the pair normalise rows ra and rt (the
// lane's chunks k0 + m G) and, when owner, store s into ra.
template <int C, class E, int kPerLane>
__device__ __forceinline__ void group_layernorm_pair(E* ra, const E* rt, int k0, bool owner, const float (&g)[kPerLane][4],
                                                     const float (&be)[kPerLane][4]) {
  constexpr int G = ln_group(C), kChunks = C / 4;
  float a[kPerLane][4], t[kPerLane][4];
  float sa = 0.0f, st = 0.0f;
#pragma unroll
  for (int m = 0; m < kPerLane; ++m) {
    const int ch = k0 + m * G;
    if (ch < kChunks) {
      loadv<4, true>(ra + 4 * ch, a[m]);
      loadv<4, true>(rt + 4 * ch, t[m]);
    } else {
#pragma unroll
      for (int e = 0; e < 4; ++e) a[m][e] = t[m][e] = 0.0f;
    }
    sa += (a[m][0] + a[m][1]) + (a[m][2] + a[m][3]);
    st += (t[m][0] + t[m][1]) + (t[m][2] + t[m][3]);
  }
  sa = group_sum<G>(sa);
  st = group_sum<G>(st);
  const float ma = sa / static_cast<float>(C), mt = st / static_cast<float>(C);
  float da = 0.0f, dt = 0.0f;
#pragma unroll
  for (int m = 0; m < kPerLane; ++m) {
    if (k0 + m * G < kChunks) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float ua = a[m][e] - ma, ut = t[m][e] - mt;
        da = fmaf(ua, ua, da);
        dt = fmaf(ut, ut, dt);
      }
    }
  }
  da = group_sum<G>(da);
  dt = group_sum<G>(dt);
  const float ra_std = rsqrtf(da / static_cast<float>(C) + kLnEps);
  const float rt_std = rsqrtf(dt / static_cast<float>(C) + kLnEps);
#pragma unroll
  for (int m = 0; m < kPerLane; ++m) {
    const int ch = k0 + m * G;
    float s[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const float la = fmaf((a[m][e] - ma) * ra_std, g[m][e], be[m][e]);
      const float lt = fmaf((t[m][e] - mt) * rt_std, g[m][e], be[m][e]);
      s[e] = (la + lt) * 0.5f;
    }
    if (owner && ch < kChunks) storev<4>(ra + 4 * ch, s);
  }
}

// LNROW 0, G > 0: groups of G lanes per pair (ln_group), float4 chunks k0 + m G of the rows.
template <int C, int TILE_I, int TILE_J, int BLOCK, bool SMEM_W, class E>
__device__ __forceinline__ void layernorm_tile_groups(E* tiles, const E* gamma, const E* beta, int warp, int t_row0) {
  constexpr int RS = row_stride_of<E>(C), kRows = TILE_I * TILE_J, G = ln_group(C);
  constexpr int kPerLane = cdiv(C / 4, G);  // chunks of 4 of one row per lane (a float4, or 8 bytes of bfloat16)
  constexpr int kPairsPerWarp = 32 / G;
  const int lane = threadIdx.x & 31;
  const int k0 = lane % G;
  float g[kPerLane][4], be[kPerLane][4];
  load_group_chunks<C, SMEM_W>(gamma, beta, k0, g, be);
#pragma unroll 1
  for (int base = warp * kPairsPerWarp; base < kRows; base += (BLOCK / 32) * kPairsPerWarp) {
    // Every lane takes part in the shuffles; lanes past the tile work on its last pair and store nothing.
    const int q_raw = base + lane / G;
    const bool owner = q_raw < kRows;
    const int q = owner ? q_raw : kRows - 1;
    const int ii = q / TILE_J, jj = q - ii * TILE_J;
    group_layernorm_pair<C>(tiles + q * RS, tiles + (t_row0 + jj * TILE_I + ii) * RS, k0, owner, g, be);
  }
}

// Staged tiles (elements of E, s stored rounded to E): each pair (ii,jj) of the tile normalises row A(ii,jj) and row T(jj,ii) once and
// overwrites row A(ii,jj) with s. Both rows run the same code (same reduction order), so LN(row)
// does not depend on whether it is the (i,j) or the (j,i) operand: s stays exactly symmetric.
// The BLOCK / 32 warps share the rows (warp in [0, BLOCK / 32); BLOCK = 32: one warp does all).
// t_row0: the first tile T row (kRows; 0 for a diagonal tile staged with skip_t).
template <int C, int TILE_I, int TILE_J, int BLOCK, bool SMEM_W, class E>
__device__ __forceinline__ void layernorm_tile(E* tiles, const E* gamma, const E* beta,
                                               int warp = static_cast<int>(threadIdx.x >> 5), int t_row0 = TILE_I * TILE_J) {
  if constexpr (ln_group(C) == 0) {
    layernorm_tile_warps<C, TILE_I, TILE_J, BLOCK, SMEM_W>(tiles, gamma, beta, warp, t_row0);
  } else {
    layernorm_tile_groups<C, TILE_I, TILE_J, BLOCK, SMEM_W>(tiles, gamma, beta, warp, t_row0);
  }
}

}  // namespace contact
}  // namespace tune_kernels

#pragma once
// Block loops over shared rows: copies a warp per row, weight loads from shared memory or the
// read-only cache, and the register-blocked products (sg_rows_dot, sg_cols_accum[_split]).
// Part of the scene_graph template (scene_graph.cuh).

#include "ptx.cuh"
#include "reductions.cuh"
#include "sizes.cuh"
#include "tune_common.cuh"

namespace tune_kernels {

// chunk(row, c) for the C chunks of each of ROWS rows, a warp per row (row r by warp
// (r + FIRST) % WARPS of the first WARPS warps, so that successive calls start on the warp after
// the previous one's last row), chunk c by lane c % 32: no division per chunk, compile-time trip
// counts.
template <int ROWS, int C, int BLOCK, int FIRST, int WARPS = BLOCK / 32, class Chunk>
__device__ __forceinline__ void sg_rows_by_warp(const Chunk& chunk) {
  constexpr int NW = WARPS;
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  if (WARPS < BLOCK / 32 && warp >= WARPS) return;
  const int first = (warp + NW - FIRST % NW) % NW;
#pragma unroll
  for (int q = 0; q < cdiv(ROWS, NW); ++q) {
    const int row = first + q * NW;
    if (ROWS % NW == 0 || row < ROWS) {
#pragma unroll
      for (int c = 0; c < cdiv(C, 32); ++c) {
        if (C % 32 == 0 || lane + 32 * c < C) chunk(row, lane + 32 * c);
      }
    }
  }
}
// ROWS rows of L floats (L % 4 == 0) from global rows src_row(r) into shared rows of stride S,
// 16-byte cp.async chunks spread as sg_rows_by_warp.
template <int ROWS, int L, int S, int BLOCK, int FIRST, int WARPS = BLOCK / 32, class SrcRow>
__device__ __forceinline__ void sg_copy_rows_warp(float* dst, const SrcRow& src_row) {
  sg_rows_by_warp<ROWS, L / 4, BLOCK, FIRST, WARPS>(
      [&](int row, int c) { sg_copy16(dst + row * S + 4 * c, src_row(row) + 4 * c); });
}

// ROWS rows of D floats (D % 4 == 0) from global rows src_row(r) into shared rows of stride S.
template <int ROWS, int D, int S, int BLOCK, class SrcRow>
__device__ __forceinline__ void sg_copy_rows(float* dst, const SrcRow& src_row) {
  constexpr int D4 = D / 4;
  for (int idx = threadIdx.x; idx < ROWS * D4; idx += BLOCK) {
    const int r = idx / D4, c = (idx % D4) * 4;
    sg_copy16(dst + r * S + c, src_row(r) + c);
  }
}

// Loads a weight from shared memory (SMEM) or through the read-only cache.
template <int SMEM>
__device__ __forceinline__ float sg_load(const float* p) {
  if constexpr (SMEM != 0) {
    return *p;
  } else {
    return __ldg(p);
  }
}
template <int SMEM>
__device__ __forceinline__ float4 sg_load4(const float* p) {
  if constexpr (SMEM != 0) {
    return *reinterpret_cast<const float4*>(p);
  } else {
    return __ldg(reinterpret_cast<const float4*>(p));
  }
}

// y[r][o] = Σ_c x(r, o)[c] · w[o][c] for r < R, o < O, c < K (K % 4 == 0).
// wload(o, c4) and xload(r, o, c4) return float4 number c4 of weight row o and of the input
// row of (r, o); store(r, o, y). A group of KL lanes shares one (o, row group) unit: each lane
// reads one float4 in KL of the row (128 contiguous bytes per group, coalesced from global,
// conflict-free from padded shared rows), keeps RT rows' partial sums, and the group reduces
// with shuffles. A thread takes UB units per pass, so that the weight loads of all of them
// are in flight together (one memory round trip per pass when the weights come from L2).
// The pass loop runs the same count in every warp, so the shuffles are full-warp.
template <int R, int O, int K, int BLOCK, class WLoad, class XLoad, class Store>
__device__ __forceinline__ void sg_rows_dot(const WLoad& wload, const XLoad& xload, const Store& store) {
  static_assert(K % 4 == 0, "K must be a multiple of 4");
  constexpr int K4 = K / 4;
  constexpr int KL = sg_k_lanes(K4);
  constexpr int TW = K4 / KL;  // float4s of one weight row per lane
  constexpr int NG = BLOCK / KL;
  constexpr int RT = sg_rows_per_thread(R, O, NG);
  constexpr int UNITS = O * cdiv(R, RT);
  constexpr int UB = sg_units_per_pass(TW, RT, cdiv(UNITS, NG), BLOCK);
  const int group = static_cast<int>(threadIdx.x) / KL, kl = static_cast<int>(threadIdx.x) % KL;
  for (int base = 0; base < UNITS; base += NG * UB) {
    float acc[UB][RT];
#pragma unroll
    for (int ub = 0; ub < UB; ++ub) {
      const int raw = base + ub * NG + group;
      const int u = raw < UNITS ? raw : UNITS - 1;
      const int o = u % O, r0 = (u / O) * RT;
#pragma unroll
      for (int rr = 0; rr < RT; ++rr) acc[ub][rr] = 0.0f;
#pragma unroll
      for (int t = 0; t < TW; ++t) {
        const int c4 = kl + t * KL;
        const float4 w = wload(o, c4);
#pragma unroll
        for (int rr = 0; rr < RT; ++rr) {
          const int r = r0 + rr < R ? r0 + rr : R - 1;
          acc[ub][rr] = sg_dot4(w, xload(r, o, c4), acc[ub][rr]);
        }
      }
    }
#pragma unroll
    for (int ub = 0; ub < UB; ++ub) {
#pragma unroll
      for (int rr = 0; rr < RT; ++rr) {
#pragma unroll
        for (int off = KL / 2; off > 0; off /= 2) acc[ub][rr] += __shfl_xor_sync(0xffffffffu, acc[ub][rr], off);
      }
    }
#pragma unroll
    for (int ub = 0; ub < UB; ++ub) {
      const int raw = base + ub * NG + group;
      const int o = raw % O, r0 = (raw / O) * RT;
      if (raw < UNITS) {
#pragma unroll
        for (int rr = 0; rr < RT; ++rr) {
          if (rr % KL == kl && r0 + rr < R) store(r0 + rr, o, acc[ub][rr]);
        }
      }
    }
  }
}

// y[r][h][c4] = Σ_t x(r, h, t) · m(h, t)[c4] over float4 columns c4 < C4, t < T.
// Lanes take consecutive c4 (coalesced / conflict-free m rows, broadcast x); a thread keeps
// RT rows of float4 accumulators. No block-wide synchronisation inside.
template <int R, int NH, int C4, int T, int BLOCK, class MLoad, class XVal, class Store>
__device__ __forceinline__ void sg_cols_accum(const MLoad& mload, const XVal& xval, const Store& store) {
  constexpr int RT = sg_rows_per_thread(R, NH * C4, BLOCK);
  constexpr int UNITS = cdiv(R, RT) * NH * C4;
  for (int u = static_cast<int>(threadIdx.x); u < UNITS; u += BLOCK) {
    const int c4 = u % C4, h = (u / C4) % NH, r0 = (u / (C4 * NH)) * RT;
    float4 acc[RT];
#pragma unroll
    for (int rr = 0; rr < RT; ++rr) acc[rr] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll 8
    for (int t = 0; t < T; ++t) {
      const float4 m = mload(h, t, c4);
#pragma unroll
      for (int rr = 0; rr < RT; ++rr) {
        const int r = r0 + rr < R ? r0 + rr : R - 1;
        sg_axpy4(xval(r, h, t), m, acc[rr]);
      }
    }
#pragma unroll
    for (int rr = 0; rr < RT; ++rr) {
      if (r0 + rr < R) store(r0 + rr, h, c4, acc[rr]);
    }
  }
}

// sg_cols_accum when the units are fewer than the block. The pass loop is uniform.
template <int R, int NH, int C4, int T, int BLOCK, class MLoad, class XVal, class Store>
__device__ __forceinline__ void sg_cols_accum_split(const MLoad& mload, const XVal& xval, const Store& store) {
  constexpr int RT = sg_rows_per_thread(R, NH * C4, BLOCK);
  constexpr int UNITS = cdiv(R, RT) * NH * C4;
  constexpr int TL = sg_t_lanes(UNITS, T, BLOCK);
  constexpr int TK = cdiv(T, TL);
  for (int base = 0; base < UNITS * TL; base += BLOCK) {
    const int raw = base + static_cast<int>(threadIdx.x);
    const int lu = raw < UNITS * TL ? raw : UNITS * TL - 1;
    const int u = lu / TL, tl = lu % TL;
    const int c4 = u % C4, h = (u / C4) % NH, r0 = (u / (C4 * NH)) * RT;
    float4 acc[RT];
#pragma unroll
    for (int rr = 0; rr < RT; ++rr) acc[rr] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll 6
    for (int k = 0; k < TK; ++k) {
      const int t = tl + TL * k;
      if (T % TL == 0 || t < T) {
        const float4 m = mload(h, t, c4);
#pragma unroll
        for (int rr = 0; rr < RT; ++rr) {
          const int r = r0 + rr < R ? r0 + rr : R - 1;
          sg_axpy4(xval(r, h, t), m, acc[rr]);
        }
      }
    }
#pragma unroll
    for (int rr = 0; rr < RT; ++rr) {
#pragma unroll
      for (int off = TL / 2; off > 0; off /= 2) {
        acc[rr].x += __shfl_xor_sync(0xffffffffu, acc[rr].x, off);
        acc[rr].y += __shfl_xor_sync(0xffffffffu, acc[rr].y, off);
        acc[rr].z += __shfl_xor_sync(0xffffffffu, acc[rr].z, off);
        acc[rr].w += __shfl_xor_sync(0xffffffffu, acc[rr].w, off);
      }
    }
    if (raw < UNITS * TL && tl == 0) {
#pragma unroll
      for (int rr = 0; rr < RT; ++rr) {
        if (r0 + rr < R) store(r0 + rr, h, c4, acc[rr]);
      }
    }
  }
}

}  // namespace tune_kernels

#pragma once
// STAGE_T: a tile of pair rows and its transposed tile copied into shared memory, and the
// shared-memory size of one staged pair of tiles (StagedTiles::kElems).
// Part of the contact template (contact.cuh).

#include "pairs.cuh"
#include "tune_common.cuh"

namespace tune_kernels {
namespace contact {

// One staged tile A and its transposed tile T, elements of E (the tensors' type), rows of stride
// row_stride_of<E>(C).
template <class E, int C, int TILE_I, int TILE_J>
struct StagedTiles {
  static constexpr int kElems = round_vec<E>(2 * TILE_I * TILE_J * row_stride_of<E>(C));
};

// (gi, gj) of staged row `row`: tile A rows (ii,jj) first, then tile T rows (jj,ii).
template <int TILE_I, int TILE_J>
__device__ __forceinline__ void staged_row_source(int row, int i0, int j0, int& gi, int& gj) {
  constexpr int kRows = TILE_I * TILE_J;
  if (row < kRows) {
    const int ii = row / TILE_J;
    gi = i0 + ii;
    gj = j0 + (row - ii * TILE_J);
  } else {
    const int r = row - kRows;
    const int jj = r / TILE_I;
    gi = j0 + jj;
    gj = i0 + (r - jj * TILE_I);
  }
}

// Loads tile A (rows x[b, i0+ii, j0+jj, :] at row ii*TILE_J+jj) and tile T (rows
// x[b, j0+jj, i0+ii, :] at row TILE_I*TILE_J + jj*TILE_I+ii) into consecutive shared rows of
// stride row_stride_of<E>(C), as they are (elements of E). Consecutive threads read consecutive vectors of one contiguous run;
// rows outside the N x N range are zero (their results are never stored).
// skip_t (ASYNC only): tile A alone; a diagonal tile of a square SYM tiling is its own transpose,
// so its tile T rows are tile A rows (row (jj,ii) of T is row jj*TILE_J+ii of A).
template <int N, int C, int TILE_I, int TILE_J, int BLOCK, bool ASYNC, class E>
__device__ __forceinline__ void stage_tiles(const E* __restrict__ x, int b, int i0, int j0, E* tiles,
                                            int tid = static_cast<int>(threadIdx.x), bool skip_t = false) {
  constexpr int V = vec_width_of<E>(C), RS = row_stride_of<E>(C), kPerRow = C / V;
  constexpr int kRows = TILE_I * TILE_J;
  constexpr int kElems = 2 * kRows * kPerRow;
  constexpr int kIters = cdiv(kElems, BLOCK);
  if constexpr (ASYNC) {
    block_for<2 * kRows, kPerRow, BLOCK>(
        [&](int row, int q) {
          if (skip_t && row >= kRows) return;
          const int c = q * V;
          int gi, gj;
          staged_row_source<TILE_I, TILE_J>(row, i0, j0, gi, gj);
          const bool inside = (N % TILE_I == 0 && N % TILE_J == 0) || (gi < N && gj < N);
          copy_elems<static_cast<int>(sizeof(E)) * V>(tiles + row * RS + c,
                                                      x + (inside ? row_offset(N, C, b, gi, gj) + c : 0), inside);
        },
        tid);
    return;
  }
  constexpr int kBatch = kIters < 8 ? kIters : 8;  // loads in flight per thread before stores
#pragma unroll 1
  for (int k0 = 0; k0 < kIters; k0 += kBatch) {
    float v[kBatch][V];
    int dst[kBatch];
#pragma unroll
    for (int k = 0; k < kBatch; ++k) {
      const int f = tid + (k0 + k) * BLOCK;
      dst[k] = -1;
#pragma unroll
      for (int q = 0; q < V; ++q) v[k][q] = 0.0f;
      if (k0 + k < kIters && f < kElems) {
        const int row = f / kPerRow;
        const int c = (f - row * kPerRow) * V;
        int gi, gj;
        staged_row_source<TILE_I, TILE_J>(row, i0, j0, gi, gj);
        if (gi < N && gj < N) loadv<V, false>(x + row_offset(N, C, b, gi, gj) + c, v[k]);
        dst[k] = row * RS + c;
      }
    }
#pragma unroll
    for (int k = 0; k < kBatch; ++k)
      if (dst[k] >= 0) storev<V>(tiles + dst[k], v[k]);
  }
}

}  // namespace contact
}  // namespace tune_kernels

#pragma once
// MAPPING 2, warp_tile (the mma strategy, staged, cp.async, SYM, NSPLIT 1): a warp owns PAIRS
// consecutive tiles, or (PERSIST) every (grid warps)-th tile with PAIRS in flight in a ring of
// buffers; it stages, normalises and computes them alone, with no block barrier but the one
// after the weight copy (SMEM_W). Shared memory: SmemLayout (per warp, PAIRS staged tiles).
// Part of the contact template (contact.cuh).

#include "../layernorm/group.cuh"
#include "../layernorm/row.cuh"
#include "../pairs.cuh"
#include "../phase_marks.cuh"
#include "../smem_layout.cuh"
#include "../staging.cuh"
#include "../strategies/mma.cuh"
#include "../strategies/mma_bf16.cuh"
#include "../strategies/mma_weights.cuh"
#include "../tensors.cuh"
#include "../weights.cuh"
#include "tune_common.cuh"

namespace tune_kernels {
namespace contact {

template <int B, int N, int C, int H, int BLOCK, int TILE_I, int TILE_J, int SMEM_W, int PAIRS, int SYM, int PREC, int LNROW,
          int PERSIST, class Layout, class T>
__device__ __forceinline__ void warp_tile_mapping(const Tensors<T>& tensors) {
  T* smem = reinterpret_cast<T*>(tune_contact_smem);  // the kernel's dynamic shared memory (SmemLayout)
  constexpr int kWarps = BLOCK / 32, kTilesI = cdiv(N, TILE_I), kUnits = B * kTilesI * (kTilesI + 1) / 2;
  constexpr bool kSmemW = SMEM_W != 0;
  using MmaLayout = MmaWeightLayout<T, C, H>;
  using Weights = MmaWeights<T, C, H, kSmemW>;
  T* smem_weights = smem + Layout::kWeights;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  // The warp's tiles: PAIRS consecutive ones, or (PERSIST) every (grid warps)-th from its index.
  const int grid_warp = static_cast<int>(blockIdx.x) * kWarps + warp;
  const int first = PERSIST ? grid_warp : grid_warp * PAIRS;
  const int stride = PERSIST ? static_cast<int>(gridDim.x) * kWarps : 1;
  const int last = PERSIST ? kUnits : (first + PAIRS < kUnits ? first + PAIRS : kUnits);  // exclusive
  T* tiles = smem + Layout::kTileA + warp * PAIRS * Layout::kTileElems;                   // a ring of PAIRS buffers
  // LNROW: a diagonal tile (not mirrored) is staged once, its tile T rows being its tile A rows
  // (the rows are normalised in place before any is read as a T row; the group LayerNorm
  // overwrites A rows with s while others still read them, so it keeps both copies).
  const auto stage = [&](int unit, int slot) {
    const TileOrigin origin = tile_origin<N, TILE_I, TILE_J, SYM>(unit);
    stage_tiles<N, C, TILE_I, TILE_J, 32, true>(tensors.pair_repr, origin.b, origin.i0, origin.j0,
                                                tiles + slot * Layout::kTileElems, lane, LNROW != 0 && !origin.mirror);
  };
  if constexpr (kSmemW) {  // the block's weights first: one group, waited for before the tiles
    copy_mma_weights<C, H, BLOCK, true>(tensors.ln_w, tensors.ln_b, tensors.w0, tensors.b0, tensors.w2, tensors.b2,
                                        tensors.w4, tensors.b4, smem_weights);
    copy_commit();
  }
  // Every tile's copies are one cp.async group; PAIRS groups are always in flight (empty ones
  // past the warp's last tile), so a wait for all but the PAIRS - 1 newest is a wait for the
  // oldest tile.
#pragma unroll
  for (int p = 0; p < PAIRS; ++p) {
    if (first + p * stride < last) stage(first + p * stride, p);
    copy_commit();
  }
  if constexpr (kSmemW) {
    copy_wait<PAIRS>();
    __syncthreads();
    if constexpr (LNROW != 0) fold_layernorm<C, H, BLOCK>(smem_weights);
  }
  const Weights weights =
      kSmemW ? Weights{smem_weights + MmaLayout::kW0, smem_weights + MmaLayout::kB0, smem_weights + MmaLayout::kW2,
                       smem_weights + MmaLayout::kB2, smem_weights + MmaLayout::kW4, smem_weights + MmaLayout::kB4}
             : Weights{tensors.w0, tensors.b0, tensors.w2, tensors.b2, tensors.w4, tensors.b4};
  int slot = 0;
#pragma unroll 1
  for (int unit = first; unit < last; unit += stride) {
    copy_wait<PAIRS - 1>();
    __syncwarp();
    if (unit == first) TUNE_CONTACT_MARK(1);
    T* tile_rows = tiles + slot * Layout::kTileElems;
    const TileOrigin tile = tile_origin<N, TILE_I, TILE_J, SYM>(unit);
    const int t_row0 = LNROW == 0 || tile.mirror ? TILE_I * TILE_J : 0;
    if constexpr (LNROW != 0) {
      normalize_rows<C, 2 * TILE_I * TILE_J, 32>(tile_rows, lane, TILE_I * TILE_J + t_row0);
    } else {
      layernorm_tile<C, TILE_I, TILE_J, 32, kSmemW>(tile_rows, kSmemW ? smem_weights + MmaLayout::kGamma : tensors.ln_w,
                                                    kSmemW ? smem_weights + MmaLayout::kBeta : tensors.ln_b, 0, t_row0);
    }
    __syncwarp();
    if (unit == first) TUNE_CONTACT_MARK(2);
    if constexpr (PREC == 2) {
      mma_pairs_bf16<N, C, H, 32, TILE_I, TILE_J, 1, SYM, kSmemW, LNROW>(tensors.out, tile, tile_rows, weights, 0, t_row0);
    } else {
      mma_pairs<N, C, H, 32, TILE_I, TILE_J, 1, SYM, kSmemW, PREC, LNROW>(tensors.out, tile, tile_rows, weights, 0, t_row0);
    }
    __syncwarp();  // every lane is done with the buffer before it is refilled
    const int next = unit + PAIRS * stride;
    if (next < last) stage(next, slot);
    copy_commit();
    slot = slot + 1 == PAIRS ? 0 : slot + 1;
  }
  TUNE_CONTACT_MARK(3);
}

}  // namespace contact
}  // namespace tune_kernels

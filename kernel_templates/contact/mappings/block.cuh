#pragma once
// MAPPING 0, linear (consecutive pairs of the row-major (b,i,j) order), and 1, tile (a block owns
// a TILE_I x TILE_J tile of (i,j) of one b): the block copies its tiles and weights together,
// normalises the staged rows, then runs the strategy. Shared memory: SmemLayout.
// Part of the contact template (contact.cuh).

#include "../layernorm/group.cuh"
#include "../layernorm/row.cuh"
#include "../pairs.cuh"
#include "../phase_marks.cuh"
#include "../smem_layout.cuh"
#include "../staging.cuh"
#include "../strategies/mma.cuh"
#include "../strategies/mma_bf16.cuh"
#include "../strategies/mma_split.cuh"
#include "../strategies/mma_weights.cuh"
#include "../strategies/thread.cuh"
#include "../strategies/warp.cuh"
#include "../tensors.cuh"
#include "../weights.cuh"
#include "tune_common.cuh"

namespace tune_kernels {
namespace contact {

// The block's cooperative copies into shared memory (SmemLayout at smem): the tile first, its rows
// from DRAM, with the weights (shared by all blocks, mostly from L2), so their loads are in flight
// together; with LNROW the weights first, in their own group, so the fold runs while the tiles land.
template <int N, int C, int H, int STRATEGY, int BLOCK, int TILE_I, int TILE_J, int SMEM_W, int ASYNC, int LNROW,
          class Layout, class T>
__device__ __forceinline__ void stage_block(const Tensors<T>& tensors, const TileOrigin& tile, T* smem) {
  constexpr bool kStaged = Layout::kStaged;
  T* smem_weights = smem + Layout::kWeights;
  constexpr bool kAsync = ASYNC != 0;
  if constexpr (LNROW != 0) {
    copy_mma_weights<C, H, BLOCK, true>(tensors.ln_w, tensors.ln_b, tensors.w0, tensors.b0, tensors.w2, tensors.b2,
                                        tensors.w4, tensors.b4, smem_weights);
    copy_commit();
    stage_tiles<N, C, TILE_I, TILE_J, BLOCK, true>(tensors.pair_repr, tile.b, tile.i0, tile.j0, smem + Layout::kTileA);
    copy_commit();
    copy_wait<1>();
    __syncthreads();
    fold_layernorm<C, H, BLOCK>(smem_weights);
    copy_wait<0>();
  } else if constexpr (kStaged) {
    stage_tiles<N, C, TILE_I, TILE_J, BLOCK, kAsync>(tensors.pair_repr, tile.b, tile.i0, tile.j0, smem + Layout::kTileA);
  }
  if constexpr (LNROW != 0) {
  } else if constexpr (STRATEGY == 2 && SMEM_W != 0) {
    copy_mma_weights<C, H, BLOCK, kAsync>(tensors.ln_w, tensors.ln_b, tensors.w0, tensors.b0, tensors.w2, tensors.b2,
                                          tensors.w4, tensors.b4, smem_weights);
  } else if constexpr (SMEM_W != 0) {
    copy_weights<C, H, BLOCK, kAsync>(tensors.ln_w, tensors.ln_b, tensors.w0, tensors.b0, tensors.w2, tensors.b2, tensors.w4,
                                      tensors.b4, smem_weights);
  }
  if constexpr (kAsync && LNROW == 0) copy_wait_all();
  if constexpr (SMEM_W != 0 || kStaged) __syncthreads();
}

// STRATEGY 2 on the staged tiles: the LayerNorm of the rows, then the MLP on tensor cores.
template <int N, int C, int H, int BLOCK, int TILE_I, int TILE_J, int SMEM_W, int PAIRS, int SYM, int NSPLIT, int PREC,
          int LNROW, class Layout, class T>
__device__ __forceinline__ void mma_block(const Tensors<T>& tensors, const TileOrigin& tile, T* smem) {
  constexpr bool kSmemW = SMEM_W != 0;
  T* smem_weights = smem + Layout::kWeights;
  using MmaLayout = MmaWeightLayout<T, C, H>;
  using Weights = MmaWeights<T, C, H, kSmemW>;
  const Weights weights =
      kSmemW ? Weights{smem_weights + MmaLayout::kW0, smem_weights + MmaLayout::kB0, smem_weights + MmaLayout::kW2,
                       smem_weights + MmaLayout::kB2, smem_weights + MmaLayout::kW4, smem_weights + MmaLayout::kB4}
             : Weights{tensors.w0, tensors.b0, tensors.w2, tensors.b2, tensors.w4, tensors.b4};
  if constexpr (LNROW != 0) {
    normalize_rows<C, 2 * TILE_I * TILE_J, BLOCK>(smem + Layout::kTileA, static_cast<int>(threadIdx.x));
  } else {
    layernorm_tile<C, TILE_I, TILE_J, BLOCK, kSmemW>(smem + Layout::kTileA,
                                                     kSmemW ? smem_weights + MmaLayout::kGamma : tensors.ln_w,
                                                     kSmemW ? smem_weights + MmaLayout::kBeta : tensors.ln_b);
  }
  __syncthreads();
  TUNE_CONTACT_MARK(2);
  if constexpr (PREC == 2) {
    static_assert(NSPLIT == 1, "bfloat16 MMAs: NSPLIT 1");
    mma_pairs_bf16<N, C, H, BLOCK, TILE_I, TILE_J, PAIRS, SYM, kSmemW, LNROW>(tensors.out, tile, smem + Layout::kTileA,
                                                                              weights);
  } else if constexpr (NSPLIT > 1) {
    static_assert(PAIRS == 1 && kSmemW, "NSPLIT > 1 takes one 16-pair tile per warp group, weights in shared memory");
    mma_pairs_split<N, C, H, BLOCK, TILE_I, TILE_J, NSPLIT, SYM, PREC>(tensors.out, tile, smem + Layout::kTileA, weights);
  } else {
    mma_pairs<N, C, H, BLOCK, TILE_I, TILE_J, PAIRS, SYM, kSmemW, PREC, LNROW>(tensors.out, tile, smem + Layout::kTileA,
                                                                               weights);
  }
  TUNE_CONTACT_MARK(3);
}

// STRATEGY 0 (thread) and 1 (warp): the LayerNorm of the staged rows, if staged, then the MLP.
template <int B, int N, int C, int H, int STRATEGY, int MAPPING, int BLOCK, int TILE_I, int TILE_J, int SMEM_W, int PAIRS,
          int SYM, class Layout, class T>
__device__ __forceinline__ void plain_block(const Tensors<T>& tensors, const TileOrigin& tile, T* smem) {
  constexpr bool kStaged = Layout::kStaged, kSmemW = SMEM_W != 0;
  T* smem_weights = smem + Layout::kWeights;
  using Plain = WeightLayout<T, C, H>;
  const T* gamma = kSmemW ? smem_weights + Plain::kGamma : tensors.ln_w;
  const T* beta = kSmemW ? smem_weights + Plain::kBeta : tensors.ln_b;
  const T* w0 = kSmemW ? smem_weights + Plain::kW0 : tensors.w0;
  const T* b0 = kSmemW ? smem_weights + Plain::kB0 : tensors.b0;
  const T* w2 = kSmemW ? smem_weights + Plain::kW2 : tensors.w2;
  const T* b2 = kSmemW ? smem_weights + Plain::kB2 : tensors.b2;
  const T* w4 = kSmemW ? smem_weights + Plain::kW4 : tensors.w4;
  const T* b4 = kSmemW ? smem_weights + Plain::kB4 : tensors.b4;
  if constexpr (kStaged) {
    layernorm_tile<C, TILE_I, TILE_J, BLOCK, kSmemW>(smem + Layout::kTileA, gamma, beta);
    __syncthreads();
  }
  if constexpr (STRATEGY == 0) {
    thread_pairs<B, N, C, H, MAPPING, BLOCK, TILE_I, TILE_J, kStaged, kSmemW, PAIRS, SYM>(tensors.pair_repr, gamma, beta, w0,
                                                                                          b0, w2, b2, w4, b4, tensors.out,
                                                                                          tile, smem + Layout::kTileA);
  } else {
    warp_pairs<B, N, C, H, MAPPING, BLOCK, TILE_I, TILE_J, kStaged, kSmemW, PAIRS, SYM>(tensors.pair_repr, gamma, beta, w0,
                                                                                        b0, w2, b2, w4, b4, tensors.out,
                                                                                        tile, smem + Layout::kTileA,
                                                                                        reinterpret_cast<float*>(
                                                                                            smem + Layout::kScratch));
  }
}

// The block's work: its tile (MAPPING 1) or pairs (0), staged (stage_block), then the strategy.
template <int B, int N, int C, int H, int STRATEGY, int MAPPING, int BLOCK, int TILE_I, int TILE_J, int SMEM_W, int PAIRS,
          int SYM, int ASYNC, int NSPLIT, int PREC, int LNROW, class Layout, class T>
__device__ __forceinline__ void block_mapping(const Tensors<T>& tensors) {
  T* smem = reinterpret_cast<T*>(tune_contact_smem);  // the kernel's dynamic shared memory (SmemLayout)
  TileOrigin tile{0, 0, 0, false};
  if constexpr (MAPPING == 1) {
    tile = tile_origin<N, TILE_I, TILE_J, SYM>();
    if (tile.b >= B) return;  // whole block, before any barrier
  }
  stage_block<N, C, H, STRATEGY, BLOCK, TILE_I, TILE_J, SMEM_W, ASYNC, LNROW, Layout>(tensors, tile, smem);
  TUNE_CONTACT_MARK(1);
  if constexpr (STRATEGY == 2) {
    mma_block<N, C, H, BLOCK, TILE_I, TILE_J, SMEM_W, PAIRS, SYM, NSPLIT, PREC, LNROW, Layout>(tensors, tile, smem);
  } else {
    plain_block<B, N, C, H, STRATEGY, MAPPING, BLOCK, TILE_I, TILE_J, SMEM_W, PAIRS, SYM, Layout>(tensors, tile, smem);
  }
}

}  // namespace contact
}  // namespace tune_kernels

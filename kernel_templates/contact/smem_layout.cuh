#pragma once
// The kernel's whole dynamic shared memory, from the sizes each piece states beside its code, and
// its one declaration.
// Part of the contact template (contact.cuh).

#include "staging.cuh"
#include "strategies/mma_weights.cuh"
#include "strategies/warp.cuh"
#include "weights.cuh"

namespace tune_kernels {
namespace contact {

// The whole dynamic shared memory: [weights][tile A: rows (ii,jj)][tile T: rows (jj,ii)][per-warp scratch];
// warp_tile: [weights][per warp, PAIRS x (tile A, tile T)]. Weights and tiles are elements of E (the
// tensors' type: offsets kWeights, kTileA, kScratch count them), the warp strategy's scratch floats
// (from byte sizeof(E) * kScratch, 16-byte aligned: every region before it is).
template <class E, int C, int H, int STRATEGY, int MAPPING, int BLOCK, int TILE_I, int TILE_J, int STAGE_T, int SMEM_W,
          int PAIRS>
struct SmemLayout {
  static constexpr bool kStaged = (MAPPING == 1 || MAPPING == 2) && STAGE_T != 0;
  static constexpr int kWeights = 0;
  static constexpr int kTileA =
      SMEM_W ? (STRATEGY == 2 ? MmaWeightLayout<E, C, H>::kElems : WeightLayout<E, C, H>::kElems) : 0;
  // One staged tile and its transposed tile; the warp_tile mapping gives each warp PAIRS of them.
  static constexpr int kTileElems = kStaged ? StagedTiles<E, C, TILE_I, TILE_J>::kElems : 0;
  static constexpr int kScratch = kTileA + (MAPPING == 2 ? (BLOCK / 32) * PAIRS : 1) * kTileElems;
  static constexpr int kScratchPair = WarpScratch<C, H, kStaged>::kPairFloats;
  static constexpr int kScratchFloats = STRATEGY == 1 ? (BLOCK / 32) * PAIRS * kScratchPair : 0;
  static constexpr int kBytes = static_cast<int>(sizeof(E)) * kScratch + 4 * kScratchFloats;
};

// The kernel's dynamic shared memory (16-byte aligned), declared once: the mappings find their
// regions in it at SmemLayout's offsets. The array itself, not a pointer to it: a pointer returned
// by an inlined function changed the machine code (34 of 48 kernels, tools/cubin_identity.py).
extern __shared__ float4 tune_contact_smem[];

}  // namespace contact
}  // namespace tune_kernels

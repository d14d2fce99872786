#pragma once
// Problem `contact` (PROBLEMS.md, models.py ContactMapHead):
//   x = LayerNorm_C(pair_repr[b,i,j,:]);  s = (x[b,i,j,:] + x[b,j,i,:]) / 2
//   out[b,i,j] = sigmoid(W4 relu(W2 relu(W0 s + b0) + b2) + b4)
// No system headers but cuda_bf16.h (tune_common.cuh; NVRTC has it built in): NVRTC compiles this
// file with the headers beside it and tune_common.cuh (problem.json "include_dirs"), and nvcc
// compiles it ahead of time when a .cu file includes it.
// Each strategy, LayerNorm, staging and mapping is a header of its own, its shared-memory size
// beside its code; contact_kernel below only composes them, every template parameter a tunable
// of configs/contact/problem.json.
//
// Template parameters (enum values are indices into configs/contact/problem.json's lists):
//   T           the tensors' element type (problem.json's dtype variable T): float, or
//               __nv_bfloat16 (the module after .to(torch.bfloat16)): rows and weights are
//               loaded as they are (half the bytes; staged tiles and the shared copy of the
//               weights stay bfloat16), LayerNorm, MLP and sigmoid run in float (s and the
//               output rounded to bfloat16 where they are stored), the mma strategy on
//               bfloat16 tensor cores (PREC 2).
//   B, N, C, H  shape; C and H are compile-time so every loop over them unrolls.
//   STRATEGY    0 thread: one thread computes PAIRS pairs (weights read as broadcasts);
//               1 warp: one warp per pair, lanes split C for the LayerNorm and H for the MLP,
//                 each lane keeping its rows of W0 and W2 in registers;
//               2 mma: tensor cores, a warp runs the MLP of 16 pairs per mma.sync m16n8k8 tile
//                 in 3xTF32 (hi/lo split of both operands: FP32-level error). Needs the tile
//                 mapping, STAGE_T and C % 8 == 0; without SMEM_W (weights read through the
//                 read-only cache: no per-block copy), H % 8 == 0.
//   MAPPING     0 linear: consecutive pairs of the row-major (b,i,j) order, BLOCK*PAIRS pairs
//                 (thread) or BLOCK/32*PAIRS pairs (warp) per block;
//               1 tile: a block owns a TILE_I x TILE_J tile of (i,j) of one b;
//               2 warp_tile (mma, SYM, ASYNC): a warp owns PAIRS consecutive tiles; it stages,
//                 normalises and computes them alone, with no block barrier (one after the weight
//                 copy when SMEM_W), each tile's copies their own cp.async group, so the warp works
//                 on its first tile while the next are still landing.
//   PERSIST     warp_tile only: a grid of as many blocks as stay resident on the device; a warp
//               takes every (grid warps)-th tile, PAIRS of them in flight in a ring of buffers
//               (the next copy is issued as soon as a buffer is free).
//   STAGE_T     tile only. 1: the block loads the tile and its transposed tile into shared memory
//               (coalesced, float4 when C % 4 == 0), LayerNorms every staged row once and stores
//               s there; 0: each thread or warp reads its own two rows from global memory.
//   SMEM_W      1: LayerNorm and MLP weights copied into shared memory first; 0: read from
//               global memory through the read-only cache.
//   PAIRS       pairs a thread (thread) or a warp (warp) computes together, or 16-pair tiles a
//               warp computes together (mma): more independent work per weight read; warp_tile:
//               the tiles a warp owns, in sequence (PERSIST: the tiles in flight).
//   SYM         tile only, square tiles: s is symmetric, so only tiles with ti <= tj run; an
//               off-diagonal tile writes out[b,i,j] and out[b,j,i] from one computation.
//   ASYNC       1: the weight and tile copies into shared memory are cp.async (sm_80+), all of a
//               block's in flight at once, one wait; 0: loads through registers, copy by copy.
//   NSPLIT      mma only: warps that share a 16-pair tile, each taking 1/NSPLIT of the hidden units
//               of both layers (relu(D1) and the partial logits meet in shared memory).
//   PREC        mma only: 0 3xTF32; 1 plain TF32 (one MMA per product, operands rounded to
//               TF32): a third of the tensor-core work, parity decides per shape (both: T float);
//               2 bfloat16 m16n8k16 MMAs, f32 accumulation (T bfloat16 only; C % 16 == 0,
//               NSPLIT 1; without SMEM_W H % 16 == 0).
//   LNROW       mma, SMEM_W, ASYNC, NSPLIT 1 only. 0: groups of lanes normalise a pair's two rows
//               and store s (with gamma, beta); 1: every staged row is normalised on its own by
//               one thread (a few when the block has threads to spare), u = (x - mean) * rstd, no
//               shuffles; gamma and beta are folded into the block's copy of layer 1
//               (W0' = W0 diag(gamma) / 2, b0' = b0 + W0 beta), and the MMA's A operand is
//               u(i,j) + u(j,i), read from both rows.
// The dynamic shared memory the kernel expects is SmemLayout<...>::kBytes (smem_layout.cuh);
// configs/contact/problem.json computes the same number as `smem_bytes`. Every buffer must be
// 16-byte aligned (rows and weights are read as 16-byte vectors), as separate device allocations are.

// Each piece includes what it uses (by its path relative to the including file, or
// "tune_common.cuh" by its name in problem.json's "include_dirs"), so every header compiles alone.
#include "mappings/block.cuh"
#include "mappings/warp_tile.cuh"
#include "phase_marks.cuh"
#include "smem_layout.cuh"
#include "tensors.cuh"

template <typename T, int B, int N, int C, int H, int STRATEGY, int MAPPING, int BLOCK, int TILE_I, int TILE_J, int STAGE_T,
          int SMEM_W, int PAIRS = 1, int SYM = 0, int ASYNC = 0, int NSPLIT = 1, int PREC = 0, int LNROW = 0,
          int PERSIST = 0>
__global__ void __launch_bounds__(BLOCK)
    contact_kernel(const T* __restrict__ pair_repr, const T* __restrict__ ln_w, const T* __restrict__ ln_b,
                   const T* __restrict__ w0, const T* __restrict__ b0, const T* __restrict__ w2, const T* __restrict__ b2,
                   const T* __restrict__ w4, const T* __restrict__ b4, T* __restrict__ out) {
  namespace k = tune_kernels::contact;
  static_assert(B >= 1 && N >= 1 && C >= 1 && H >= 1, "empty shape");
  static_assert(STRATEGY >= 0 && STRATEGY <= 2, "STRATEGY: 0 thread, 1 warp, 2 mma");
  static_assert(MAPPING >= 0 && MAPPING <= 2, "MAPPING: 0 linear, 1 tile, 2 warp_tile");
  static_assert(BLOCK % 32 == 0 && BLOCK >= 32 && BLOCK <= 1024, "BLOCK must be a multiple of 32");
  static_assert(TILE_I >= 1 && TILE_J >= 1 && PAIRS >= 1, "bad tile or PAIRS");
  static_assert(!SYM || (MAPPING != 0 && TILE_I == TILE_J), "SYM needs a tile mapping with square tiles");
  constexpr bool kBf16 = sizeof(T) == 2;
  static_assert(sizeof(T) == 4 || kBf16, "T: float or __nv_bfloat16");
  static_assert(PREC == 0 || STRATEGY == 2, "PREC: the mma strategy only");
  static_assert(STRATEGY != 2 || (kBf16 ? PREC == 2 : PREC <= 1),
                "PREC: 0 3xTF32 or 1 TF32 for float, 2 bfloat16 MMAs for __nv_bfloat16");
  static_assert(PREC != 2 || (C % 16 == 0 && NSPLIT == 1), "bfloat16 MMAs: C % 16 == 0, NSPLIT 1");
  static_assert(LNROW == 0 || (STRATEGY == 2 && SMEM_W != 0 && ASYNC != 0 && NSPLIT == 1),
                "LNROW: the mma strategy with SMEM_W, ASYNC and NSPLIT 1");
  static_assert(PERSIST == 0 || MAPPING == 2, "PERSIST: the warp_tile mapping");
  static_assert(STRATEGY != 2 || (MAPPING != 0 && STAGE_T != 0 && C % 8 == 0 && (SMEM_W != 0 || H % 8 == 0)),
                "the mma strategy needs a tile mapping, STAGE_T, C % 8 == 0, and SMEM_W or H % 8 == 0");
  using Layout = k::SmemLayout<T, C, H, STRATEGY, MAPPING, BLOCK, TILE_I, TILE_J, STAGE_T, SMEM_W, PAIRS>;
  static_assert(MAPPING != 2 || (STRATEGY == 2 && Layout::kStaged && ASYNC != 0 && SYM != 0 && NSPLIT == 1),
                "warp_tile: the mma strategy, staged, cp.async, SYM, NSPLIT 1");

  const k::Tensors<T> tensors{pair_repr, ln_w, ln_b, w0, b0, w2, b2, w4, b4, out};

  TUNE_CONTACT_MARK(0);
  if constexpr (MAPPING == 2) {
    k::warp_tile_mapping<B, N, C, H, BLOCK, TILE_I, TILE_J, SMEM_W, PAIRS, SYM, PREC, LNROW, PERSIST, Layout>(tensors);
  } else {
    k::block_mapping<B, N, C, H, STRATEGY, MAPPING, BLOCK, TILE_I, TILE_J, SMEM_W, PAIRS, SYM, ASYNC, NSPLIT, PREC, LNROW,
                     Layout>(tensors);
  }
}

#pragma once
// SMEM_W for the thread and warp strategies: the layout of the block's copy of the LayerNorm and
// MLP weights (its shared-memory size, WeightLayout::kElems) and the copy.
// Part of the contact template (contact.cuh).

#include "tune_common.cuh"

namespace tune_kernels {
namespace contact {

// Weights in shared memory (SMEM_W), elements of E (the tensors' type): row-major W0 and W2 with
// padded rows; every region starts 16-byte aligned.
template <class E, int C, int H>
struct WeightLayout {
  static constexpr int kW0Stride = row_stride_of<E>(C);
  static constexpr int kW2Stride = row_stride_of<E>(H);
  static constexpr int kGamma = 0;
  static constexpr int kBeta = kGamma + round_vec<E>(C);
  static constexpr int kW0 = kBeta + round_vec<E>(C);
  static constexpr int kB0 = kW0 + round_vec<E>(H * kW0Stride);
  static constexpr int kW2 = kB0 + round_vec<E>(H);
  static constexpr int kB2 = kW2 + round_vec<E>(H * kW2Stride);
  static constexpr int kW4 = kB2 + round_vec<E>(H);
  static constexpr int kB4 = kW4 + round_vec<E>(H);
  static constexpr int kElems = kB4 + kVec16<E>;
};

template <int C, int H, int BLOCK, bool ASYNC, class E>
__device__ __forceinline__ void copy_weights(const E* __restrict__ ln_w, const E* __restrict__ ln_b,
                                             const E* __restrict__ w0, const E* __restrict__ b0, const E* __restrict__ w2,
                                             const E* __restrict__ b2, const E* __restrict__ w4, const E* __restrict__ b4,
                                             E* sw) {
  using L = WeightLayout<E, C, H>;
  copy_rows<H, C, L::kW0Stride, BLOCK, ASYNC>(w0, sw + L::kW0);
  copy_rows<H, H, L::kW2Stride, BLOCK, ASYNC>(w2, sw + L::kW2);
  copy_rows<1, C, C, BLOCK, ASYNC>(ln_w, sw + L::kGamma);
  copy_rows<1, C, C, BLOCK, ASYNC>(ln_b, sw + L::kBeta);
  copy_rows<1, H, H, BLOCK, ASYNC>(b0, sw + L::kB0);
  copy_rows<1, H, H, BLOCK, ASYNC>(b2, sw + L::kB2);
  copy_rows<1, H, H, BLOCK, ASYNC>(w4, sw + L::kW4);
  copy_rows<1, 1, 1, BLOCK, ASYNC>(b4, sw + L::kB4);
}

}  // namespace contact
}  // namespace tune_kernels

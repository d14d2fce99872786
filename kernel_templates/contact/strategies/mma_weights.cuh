#pragma once
// The mma strategy's weights: the layout of the block's padded copy (its shared-memory size,
// MmaWeightLayout::kFloats), where the MMAs read them from, and the copy.
// Part of the contact template: contact.cuh includes it after tune_common.cuh.
// (NVRTC finds a header only by the name the including file gives, so the pieces include
// nothing themselves; contact.cuh includes them in order.)

namespace tune_kernels {
namespace contact {

// Weights of the mma strategy, H padded with zeros to HP = round8(H). W0's row stride is 4 mod 8
// words, so a fragment load (lane g,t reads row g, column t) hits 32 distinct banks; W2's is
// 8 mod 32, so the 64-bit load of columns (2t, 2t+1) of row g is conflict-free per half-warp.
template <int C, int H>
struct MmaWeightLayout {
  static constexpr int HP = round8(H);
  static constexpr int kW0Stride = C + 4;
  static constexpr int kW2Stride = HP + 8;
  static constexpr int kGamma = 0;
  static constexpr int kBeta = kGamma + round4(C);
  static constexpr int kW0 = kBeta + round4(C);
  static constexpr int kW2 = kW0 + HP * kW0Stride;
  static constexpr int kB0 = kW2 + HP * kW2Stride;
  static constexpr int kB2 = kB0 + HP;
  static constexpr int kW4 = kB2 + HP;
  static constexpr int kB4 = kW4 + HP;
  static constexpr int kFloats = kB4 + 4;
};

// Where the mma strategy reads its MLP weights: the padded copy in shared memory
// (MmaWeightLayout), or global memory through the read-only cache (H % 8 == 0: no padding).
template <int C, int H, bool SHARED>
struct MmaWeights {
  using L = MmaWeightLayout<C, H>;
  static constexpr int kW0Stride = SHARED ? L::kW0Stride : C;
  static constexpr int kW2Stride = SHARED ? L::kW2Stride : H;
  static_assert(SHARED || H % 8 == 0, "global mma weights need H % 8 == 0");
  const float *w0, *b0, *w2, *b2, *w4, *b4;
};

// Block-cooperative copy of R x L floats (source stride L) into an RP x LP array of stride DS,
// zero outside R x L (the padding must be finite: it meets the MMA as 0 * padding).
template <int R, int L, int RP, int LP, int DS, int BLOCK, bool ASYNC>
__device__ __forceinline__ void copy_padded(const float* __restrict__ src, float* dst) {
  constexpr int V = vec_width(L) == 4 && LP % 4 == 0 ? 4 : 1;
  constexpr int kPerRow = LP / V;
  if constexpr (ASYNC) {
    block_for<RP, kPerRow, BLOCK>([&](int r, int q) {
      const int c = q * V;
      const bool inside = r < R && c < L;
      copy_async<4 * V>(dst + r * DS + c, src + (inside ? r * L + c : 0), inside);
    });
  } else {
#pragma unroll 4
    for (int f = threadIdx.x; f < RP * kPerRow; f += BLOCK) {
      const int r = f / kPerRow, c = (f - r * kPerRow) * V;
      float v[V];
#pragma unroll
      for (int e = 0; e < V; ++e) v[e] = 0.0f;
      if (r < R && c < L) loadv<V, false>(src + r * L + c, v);  // V == 4: L % 4 == 0, all four inside
      storev<V>(dst + r * DS + c, v);
    }
  }
}

template <int C, int H, int BLOCK, bool ASYNC>
__device__ __forceinline__ void copy_mma_weights(const float* __restrict__ ln_w, const float* __restrict__ ln_b,
                                                 const float* __restrict__ w0, const float* __restrict__ b0,
                                                 const float* __restrict__ w2, const float* __restrict__ b2,
                                                 const float* __restrict__ w4, const float* __restrict__ b4,
                                                 float* sw) {
  using L = MmaWeightLayout<C, H>;
  constexpr int HP = L::HP;
  copy_padded<H, C, HP, C, L::kW0Stride, BLOCK, ASYNC>(w0, sw + L::kW0);
  copy_padded<H, H, HP, HP, L::kW2Stride, BLOCK, ASYNC>(w2, sw + L::kW2);
  copy_padded<1, C, 1, C, C, BLOCK, ASYNC>(ln_w, sw + L::kGamma);
  copy_padded<1, C, 1, C, C, BLOCK, ASYNC>(ln_b, sw + L::kBeta);
  copy_padded<1, H, 1, HP, HP, BLOCK, ASYNC>(b0, sw + L::kB0);
  copy_padded<1, H, 1, HP, HP, BLOCK, ASYNC>(b2, sw + L::kB2);
  copy_padded<1, H, 1, HP, HP, BLOCK, ASYNC>(w4, sw + L::kW4);
  copy_padded<1, 1, 1, 1, 1, BLOCK, ASYNC>(b4, sw + L::kB4);
}

}  // namespace contact
}  // namespace tune_kernels

#pragma once
// The mma strategy's weights: the layout of the block's padded copy (its shared-memory size,
// MmaWeightLayout::kElems), where the MMAs read them from, and the copy.
// Part of the contact template (contact.cuh).

#include "tune_common.cuh"

namespace tune_kernels {
namespace contact {

// Weights of the mma strategy, elements of E (the tensors' type), H padded with zeros to HP =
// round8(H) (the k-step of bfloat16's m16n8k16 MMA: round16). float: W0's row stride is 4 mod 8
// words, so a fragment load (lane g,t reads row g, column t) hits 32 distinct banks; W2's is
// 8 mod 32, so the 64-bit load of columns (2t, 2t+1) of row g is conflict-free per half-warp.
// bfloat16: both strides are 4 mod 8 words (C % 16 == 0), lane g,t reading word t of row g.
template <class E, int C, int H>
struct MmaWeightLayout {
  static constexpr bool kBf16 = sizeof(E) == 2;
  static constexpr int HP = kBf16 ? cdiv(H, 16) * 16 : round8(H);
  static constexpr int kW0Stride = C + kVec16<E>;
  static constexpr int kW2Stride = HP + 8;
  static constexpr int kGamma = 0;
  static constexpr int kBeta = kGamma + round_vec<E>(C);
  static constexpr int kW0 = kBeta + round_vec<E>(C);
  static constexpr int kW2 = kW0 + HP * kW0Stride;
  static constexpr int kB0 = kW2 + HP * kW2Stride;
  static constexpr int kB2 = kB0 + HP;
  static constexpr int kW4 = kB2 + HP;
  static constexpr int kB4 = kW4 + HP;
  static constexpr int kElems = kB4 + kVec16<E>;
};

// Where the mma strategy reads its MLP weights: the padded copy in shared memory
// (MmaWeightLayout), or global memory through the read-only cache (H % HP == 0: no padding).
template <class E, int C, int H, bool SHARED>
struct MmaWeights {
  using L = MmaWeightLayout<E, C, H>;
  static constexpr int kW0Stride = SHARED ? L::kW0Stride : C;
  static constexpr int kW2Stride = SHARED ? L::kW2Stride : H;
  static_assert(SHARED || H == L::HP, "global mma weights need H % 8 == 0 (bfloat16: H % 16 == 0)");
  const E *w0, *b0, *w2, *b2, *w4, *b4;
};

// The lane's (g, t) epilogue constants of the tensor-core strategies: columns 2t, 2t+1 of each
// 8-column tile nt of b0, b2 and w4 (the columns of its accumulator fragments).
template <class E, int C, int H, bool SHARED, int NT>
__device__ __forceinline__ void load_lane_biases(const MmaWeights<E, C, H, SHARED>& W, int t, float (&bias0)[NT][2],
                                                 float (&bias2)[NT][2], float (&w4v)[NT][2]) {
#pragma unroll
  for (int nt = 0; nt < NT; ++nt)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      bias0[nt][e] = load1<SHARED>(W.b0 + nt * 8 + 2 * t + e);
      bias2[nt][e] = load1<SHARED>(W.b2 + nt * 8 + 2 * t + e);
      w4v[nt][e] = load1<SHARED>(W.w4 + nt * 8 + 2 * t + e);
    }
}

// Block-cooperative copy of R x L elements (source stride L) into an RP x LP array of stride DS,
// zero outside R x L (the padding must be finite: it meets the MMA as 0 * padding).
template <int R, int L, int RP, int LP, int DS, int BLOCK, bool ASYNC, class E>
__device__ __forceinline__ void copy_padded(const E* __restrict__ src, E* dst) {
  constexpr int kV = kVec16<E>;
  constexpr int V = vec_width_of<E>(L) == kV && LP % kV == 0 ? kV : 1;
  constexpr int kPerRow = LP / V;
  if constexpr (ASYNC) {
    block_for<RP, kPerRow, BLOCK>([&](int r, int q) {
      const int c = q * V;
      const bool inside = r < R && c < L;
      copy_elems<static_cast<int>(sizeof(E)) * V>(dst + r * DS + c, src + (inside ? r * L + c : 0), inside);
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

template <int C, int H, int BLOCK, bool ASYNC, class E>
__device__ __forceinline__ void copy_mma_weights(const E* __restrict__ ln_w, const E* __restrict__ ln_b,
                                                 const E* __restrict__ w0, const E* __restrict__ b0,
                                                 const E* __restrict__ w2, const E* __restrict__ b2,
                                                 const E* __restrict__ w4, const E* __restrict__ b4, E* sw) {
  using L = MmaWeightLayout<E, C, H>;
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

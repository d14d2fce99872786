#pragma once
// STRATEGY 0, thread: one thread computes PAIRS pairs, reading the weights as warp-wide
// broadcasts. Shared memory: none of its own (weights.cuh, staging.cuh).
// Part of the contact template (contact.cuh).

#include "../pairs.cuh"
#include "tune_common.cuh"

namespace tune_kernels {
namespace contact {

// Mean and 1/std of a row held by one thread (two passes, four partial sums for latency).
template <int C>
__device__ __forceinline__ void thread_row_stats(const float (&x)[C], float& mean, float& rstd) {
  float s[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
  for (int c = 0; c < C; ++c) s[c & 3] += x[c];
  mean = ((s[0] + s[1]) + (s[2] + s[3])) / static_cast<float>(C);
  float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
  for (int c = 0; c < C; ++c) {
    const float u = x[c] - mean;
    d[c & 3] = fmaf(u, u, d[c & 3]);
  }
  rstd = rsqrtf(((d[0] + d[1]) + (d[2] + d[3])) / static_cast<float>(C) + kLnEps);
}

template <int C, class E>
__device__ __forceinline__ void thread_load_row(const E* __restrict__ row, float (&x)[C]) {
  constexpr int V = vec_width_of<E>(C);
#pragma unroll
  for (int c = 0; c < C; c += V) {
    float v[V];
    loadv<V, false>(row + c, v);
#pragma unroll
    for (int q = 0; q < V; ++q) x[c + q] = v[q];
  }
}

// s = (LN(row_a) + LN(row_t)) / 2 in registers (the seed design's per-thread LayerNorm).
template <int C, bool SMEM_W, class E>
__device__ __forceinline__ void thread_symmetrised_row(const E* __restrict__ row_a, const E* __restrict__ row_t,
                                                       const E* gamma, const E* beta, float (&s)[C]) {
  float x[C], mean, rstd;
  thread_load_row<C>(row_a, x);
  thread_row_stats<C>(x, mean, rstd);
#pragma unroll
  for (int c = 0; c < C; ++c) s[c] = fmaf((x[c] - mean) * rstd, load1<SMEM_W>(gamma + c), load1<SMEM_W>(beta + c));
  thread_load_row<C>(row_t, x);
  thread_row_stats<C>(x, mean, rstd);
#pragma unroll
  for (int c = 0; c < C; ++c)
    s[c] = (s[c] + fmaf((x[c] - mean) * rstd, load1<SMEM_W>(gamma + c), load1<SMEM_W>(beta + c))) * 0.5f;
}

// MLP for P pairs of one thread. load_s(c, v) gives s[p][c .. c+VC) of every pair. Weights are
// read as warp-wide broadcasts (every lane the same address). UNROLL_ALL: every loop fully
// unrolled, needed when s lives in registers (the seed design); otherwise the loops over C and
// over layer 2's outputs are unrolled 2 and 4 times only, which costs little (an iteration is
// H weight vectors and H*VC*P FMAs, or H*P) and cuts NVRTC time about tenfold.
// E: the weights' element type (float or __nv_bfloat16).
template <int C, int H, int P, bool SMEM_W, bool UNROLL_ALL, class LoadS, class E>
__device__ __forceinline__ void thread_mlp(const LoadS& load_s, const E* w0, const E* b0, const E* w2, const E* b2,
                                           const E* w4, const E* b4, float (&o)[P]) {
  constexpr int VC = vec_width_of<E>(C), VH = vec_width_of<E>(H);
  constexpr int W0S = SMEM_W ? row_stride_of<E>(C) : C, W2S = SMEM_W ? row_stride_of<E>(H) : H;
  constexpr int kUnrollC = UNROLL_ALL ? C / VC : 2;
  constexpr int kUnrollH = UNROLL_ALL ? H : 4;
  float h1[P][H];
#pragma unroll
  for (int h = 0; h < H; ++h) {
    const float bias = load1<SMEM_W>(b0 + h);
#pragma unroll
    for (int p = 0; p < P; ++p) h1[p][h] = bias;
  }
#pragma unroll kUnrollC
  for (int c = 0; c < C; c += VC) {
    float s[P][VC];
    load_s(c, s);
#pragma unroll
    for (int h = 0; h < H; ++h) {
      float w[VC];
      loadv<VC, SMEM_W>(w0 + h * W0S + c, w);
#pragma unroll
      for (int p = 0; p < P; ++p)
#pragma unroll
        for (int q = 0; q < VC; ++q) h1[p][h] = fmaf(w[q], s[p][q], h1[p][h]);
    }
  }
#pragma unroll
  for (int h = 0; h < H; ++h)
#pragma unroll
    for (int p = 0; p < P; ++p) h1[p][h] = fmaxf(h1[p][h], 0.0f);
  float logit[P];
#pragma unroll
  for (int p = 0; p < P; ++p) logit[p] = 0.0f;
#pragma unroll kUnrollH
  for (int h = 0; h < H; ++h) {
    float a[P];
    const float bias = load1<SMEM_W>(b2 + h);
#pragma unroll
    for (int p = 0; p < P; ++p) a[p] = bias;
#pragma unroll
    for (int k = 0; k < H; k += VH) {
      float w[VH];
      loadv<VH, SMEM_W>(w2 + h * W2S + k, w);
#pragma unroll
      for (int p = 0; p < P; ++p)
#pragma unroll
        for (int q = 0; q < VH; ++q) a[p] = fmaf(w[q], h1[p][k + q], a[p]);
    }
    const float w4h = load1<SMEM_W>(w4 + h);
#pragma unroll
    for (int p = 0; p < P; ++p) logit[p] = fmaf(w4h, fmaxf(a[p], 0.0f), logit[p]);
  }
  const float bias4 = load1<SMEM_W>(b4);
#pragma unroll
  for (int p = 0; p < P; ++p) o[p] = sigmoid(logit[p] + bias4);
}

template <int B, int N, int C, int H, int MAPPING, int BLOCK, int TILE_I, int TILE_J, bool STAGED, bool SMEM_W, int P,
          int SYM, class E>
__device__ __forceinline__ void thread_pairs(const E* __restrict__ x, const E* gamma, const E* beta, const E* w0,
                                             const E* b0, const E* w2, const E* b2, const E* w4, const E* b4,
                                             E* __restrict__ out, const TileOrigin& tile, const E* tiles) {
  constexpr int VC = vec_width_of<E>(C), RS = row_stride_of<E>(C);
  constexpr int kIters = MAPPING == 0 ? 1 : cdiv(TILE_I * TILE_J, BLOCK * P);
#pragma unroll 1
  for (int it = 0; it < kIters; ++it) {
    // The weight reads are loop-invariant; hoisting all C*H + H*H of them out of this loop would spill.
    const int opaque = opaque_zero(it);
    const E* w0_it = w0 + opaque;
    const E* w2_it = w2 + opaque;
    PairSlot slot[P];
#pragma unroll
    for (int p = 0; p < P; ++p) {
      if constexpr (MAPPING == 0) {
        slot[p] = linear_slot<B, N>(static_cast<long long>(blockIdx.x) * (BLOCK * P) + p * BLOCK + threadIdx.x);
      } else {
        slot[p] = tile_slot<N, TILE_I, TILE_J>(tile, (it * P + p) * BLOCK + threadIdx.x);
      }
    }
    float o[P];
    if constexpr (STAGED) {
      const E* rows[P];
#pragma unroll
      for (int p = 0; p < P; ++p) rows[p] = tiles + slot[p].tile_row * RS;
      auto load_s = [&](int c, float(&s)[P][VC]) {
#pragma unroll
        for (int p = 0; p < P; ++p) loadv<VC, true>(rows[p] + c, s[p]);
      };
      thread_mlp<C, H, P, SMEM_W, false>(load_s, w0_it, b0, w2_it, b2, w4, b4, o);
    } else {
      float s[P][C];
#pragma unroll
      for (int p = 0; p < P; ++p)
        thread_symmetrised_row<C, SMEM_W>(x + row_offset(N, C, slot[p].b, slot[p].i, slot[p].j),
                                          x + row_offset(N, C, slot[p].b, slot[p].j, slot[p].i), gamma, beta, s[p]);
      auto load_s = [&](int c, float(&v)[P][VC]) {
#pragma unroll
        for (int p = 0; p < P; ++p)
#pragma unroll
          for (int q = 0; q < VC; ++q) v[p][q] = s[p][c + q];
      };
      thread_mlp<C, H, P, SMEM_W, true>(load_s, w0_it, b0, w2_it, b2, w4, b4, o);
    }
#pragma unroll
    for (int p = 0; p < P; ++p) store_result<N>(out, slot[p], SYM && tile.mirror, o[p]);
  }
}

}  // namespace contact
}  // namespace tune_kernels

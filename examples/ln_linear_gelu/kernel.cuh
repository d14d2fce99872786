#pragma once
// Problem ln_linear_gelu (examples/ln_linear_gelu, reference.py):
//   h = LayerNorm_K(x[m, :])  (eps 1e-5, biased variance, gamma = norm.weight, beta = norm.bias)
//   out[m, n] = GELU(sum_k h[k] fc.weight[n, k] + fc.bias[n])  (exact erf GELU)
// x is (M, K), fc.weight (N, K), out (M, N), all float32 row-major. K % 4 == 0 (problem.json's
// shape constraint): rows of x and of fc.weight are 16-byte aligned, so they are read as float4.
//
// A block computes a BM x BN tile of out with (BM / TM) * (BN / TN) threads:
//   phase 1  its BM rows of x are LayerNormed into shared memory (a warp per row, shuffle
//            reductions, two passes in float), the whole of K;
//   phase 2  each thread accumulates a TM x TN micro-tile over K in registers: rows
//            ty + i * (BM / TM) and columns tx + j * (BN / TN) of the tile (strided, so the
//            shared reads of a warp spread over the banks and its stores are coalesced);
//   epilogue + fc.bias, GELU, guarded stores (ragged M and N).
//
// Template parameters (problem.json's template_args, in order):
//   M, K, N   the shape, compile-time so every loop bound and guard folds.
//   BM, BN    the block's tile of out.
//   TM, TN    a thread's micro-tile.
//   VEC       4: the multiply-accumulate reads float4 along k (shared rows padded to stride / 4
//             odd); 1: scalar reads (shared rows of odd stride).
//   WSTAGE    0 (ldg): each thread reads its TN rows of fc.weight straight from global memory
//             through the read-only cache; 1 (smem): the block stages BK-column chunks of its BN
//             rows of fc.weight in shared memory (coalesced float4 copies, two barriers a chunk).
//   BK        WSTAGE 1: columns per staged chunk (the last chunk takes K % BK). Unused when 0.
// The dynamic shared memory is tune_kernels::ln_linear_gelu::SmemLayout<...>::kBytes, which
// problem.json computes as smem_bytes. Launch: grid (cdiv(M, BM), cdiv(N, BN)), block
// ((BM / TM) * (BN / TN)).
#include "common.cuh"

// The register cap is what launching the block needs (64K registers per block), not
// __launch_bounds__: given launch bounds, ptxas spills a few loop invariants to reach an occupancy
// target in about a tenth of the variants, and tune skips variants that spill.
template <int M, int K, int N, int BM, int BN, int TM, int TN, int VEC, int WSTAGE, int BK>
__global__ void __maxnreg__((BM / TM) * (BN / TN) > 256 ? 128 : 255)
    ln_linear_gelu_kernel(const float* __restrict__ x, const float* __restrict__ norm_w,
                          const float* __restrict__ norm_b, const float* __restrict__ fc_w,
                          const float* __restrict__ fc_b, float* __restrict__ out) {
  namespace k = tune_kernels::ln_linear_gelu;
  constexpr int kTX = BN / TN;  // threads along n
  constexpr int kTY = BM / TM;  // threads along m
  constexpr int kThreads = kTX * kTY;
  static_assert(M >= 1 && K >= 4 && N >= 1, "empty shape");
  static_assert(K % 4 == 0, "K must be a multiple of 4");
  static_assert(BM % TM == 0 && BN % TN == 0, "the micro-tile must divide the tile");
  static_assert(kThreads % 32 == 0 && kThreads <= 1024, "whole warps, at most 1024 threads");
  static_assert(VEC == 1 || VEC == 4, "VEC is 1 or 4");
  static_assert(WSTAGE == 0 || (BK % 8 == 0 && BK >= 8), "BK must be a multiple of 8");
  using L = k::SmemLayout<K, BM, BN, VEC, WSTAGE, BK>;
  extern __shared__ __align__(16) float smem[];
  float* xs = smem + L::kA;

  const int m0 = blockIdx.x * BM;
  const int n0 = blockIdx.y * BN;
  const int tx = threadIdx.x % kTX;
  const int ty = threadIdx.x / kTX;

  k::layernorm_rows<M, K, BM, kThreads, VEC, L::kAStride>(x, norm_w, norm_b, xs, m0);

  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.f;

  const float* a = xs + ty * L::kAStride;  // row i of the micro-tile at a + i * kTY * kAStride
  constexpr int kARow = kTY * L::kAStride;
  if constexpr (WSTAGE == 0) {
    const float* b[TN];
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const int n = n0 + tx + j * kTX;
      b[j] = fc_w + static_cast<long long>(N % BN == 0 ? n : k::imin(n, N - 1)) * K;  // past N: discarded
    }
    __syncthreads();  // phase 1 done
    k::mac<K, VEC, TM, TN, kARow, 0, true>(acc, a, b);
  } else {
    float* ws = smem + L::kW;
    constexpr int kWRow = kTX * L::kWStride;
    const float* b[TN];
#pragma unroll
    for (int j = 0; j < TN; ++j) b[j] = ws + tx * L::kWStride + j * kWRow;
    constexpr int kFull = K / BK;
    constexpr int kTail = K % BK;
    for (int c = 0; c < kFull; ++c) {
      k::stage_w<K, N, BN, kThreads, VEC, L::kWStride, BK>(fc_w, ws, n0, c * BK);
      __syncthreads();  // the chunk (and, the first time, phase 1) is in shared memory
      k::mac<BK, VEC, TM, TN, kARow, kWRow, false>(acc, a + c * BK, b);
      __syncthreads();  // every thread is done with the chunk
    }
    if constexpr (kTail != 0) {
      k::stage_w<K, N, BN, kThreads, VEC, L::kWStride, kTail>(fc_w, ws, n0, kFull * BK);
      __syncthreads();
      k::mac<kTail, VEC, TM, TN, kARow, kWRow, false>(acc, a + kFull * BK, b);
    }
  }

  float bias[TN];
#pragma unroll
  for (int j = 0; j < TN; ++j) bias[j] = __ldg(fc_b + k::imin(n0 + tx + j * kTX, N - 1));
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int m = m0 + ty + i * kTY;
    if (M % BM == 0 || m < M) {
      float* orow = out + static_cast<long long>(m) * N;
#pragma unroll
      for (int j = 0; j < TN; ++j) {
        const int n = n0 + tx + j * kTX;
        if (N % BN == 0 || n < N) orow[n] = k::gelu_erf(acc[i][j] + bias[j]);
      }
    }
  }
}

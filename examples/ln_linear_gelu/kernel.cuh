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
    ln_linear_gelu_kernel(const float* __restrict__ x, const float* __restrict__ norm_w, const float* __restrict__ norm_b,
                          const float* __restrict__ fc_w, const float* __restrict__ fc_b, float* __restrict__ out) {
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

// ---------------------------------------------------------------------------------------------
// algo mma: two launches, a LayerNorm then a tensor-core GEMM (gemm.cuh).
#include "gemm.cuh"

// Launch 1: xn = LayerNorm_K(x) into the scratch buffer xn (M x K). A warp per row, the row in
// registers (float4, K / 128 per lane), two passes in float (mean, then the biased variance of the
// deviations) as the SIMT path does. Grid cdiv(M, 8), block 256.
template <int M, int K>
__global__ void __launch_bounds__(256) ln_rows_kernel(const float* __restrict__ x, const float* __restrict__ norm_w,
                                                      const float* __restrict__ norm_b, float* __restrict__ xn) {
  namespace k = tune_kernels::ln_linear_gelu;
  constexpr int kUnits = K / 4;
  constexpr int kPerLane = k::cdiv(kUnits, 32);
  constexpr bool kExact = kUnits % 32 == 0;
  const int lane = threadIdx.x & 31;
  const int m = blockIdx.x * 8 + (threadIdx.x >> 5);
  if (M % 8 != 0 && m >= M) return;  // warp-uniform; no barrier follows
  const float* row = x + static_cast<long long>(m) * K;
  float4 v[kPerLane];
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) {
    const int u = lane + 32 * i;
    v[i] = (kExact || u < kUnits) ? __ldg(reinterpret_cast<const float4*>(row) + u) : make_float4(0.f, 0.f, 0.f, 0.f);
    s += (v[i].x + v[i].y) + (v[i].z + v[i].w);
  }
  const float mean = k::warp_sum(s) * (1.0f / K);
  float q = 0.f;
#pragma unroll
  for (int i = 0; i < kPerLane; ++i)
    if (kExact || lane + 32 * i < kUnits) q += k::Vec<4>::sqdev(v[i], mean);
  const float rstd = rsqrtf(k::warp_sum(q) * (1.0f / K) + k::kLnEps);
  float* orow = xn + static_cast<long long>(m) * K;
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) {
    const int u = lane + 32 * i;
    if (kExact || u < kUnits) {
      const float4 gw = __ldg(reinterpret_cast<const float4*>(norm_w) + u);
      const float4 gb = __ldg(reinterpret_cast<const float4*>(norm_b) + u);
      reinterpret_cast<float4*>(orow)[u] = k::Vec<4>::norm(v[i], mean, rstd, gw, gb);
    }
  }
}

// Launch 2: out = GELU(xn fc.weight^T + fc.bias), a "TN" GEMM (both operands K-contiguous, which
// is mma's row.col layout) on tensor cores in 3xTF32.
//   LN_FUSED     0: a is xn, launch 1's output. 1 (ln fused, one launch): a is x itself; the block
//                first takes its rows' mean and rstd (a warp per row, two passes over the row in
//                float, as launch 1) and stages gamma and beta in shared memory, and the A
//                fragments are normalised as they are read: (x - mean) rstd gamma + beta.
//   BM, BN, BK   the block tile of out and the k-depth of a pipeline stage;
//   WM, WN       a warp's tile (WM / 16 x WN / 8 MMA tiles); (BM / WM) * (BN / WN) warps;
//   STAGES       shared-memory stages (2-4) filled by cp.async.cg (16 B, zero-filled past the
//                edges) STAGES - 1 tiles ahead of the MMAs;
//   GROUP_M      rasterisation: block indices walk GROUP_M tile rows column by column.
// Epilogue: + fc.bias, exact GELU, guarded stores (ragged M and N; K ragged to BK is zero-filled).
// Launch: grid (cdiv(M, BM) * cdiv(N, BN)), block (BM / WM) * (BN / WN) * 32, dynamic shared
// memory MmaSmem<BM, BN, BK, STAGES>::kBytes (problem.json's smem_bytes).
// __maxnreg__ rather than __launch_bounds__, as for the SIMT kernel: given launch bounds, ptxas
// spills a few values of the wider tiles at 96 registers to reach an occupancy target.
// The pipeline: a prologue puts STAGES - 1 tiles in flight, one commit group per tile (empty ones
// past the end), so that wait_group<STAGES - 2> always means "tile kt has landed"; with ln fused the
// rows' statistics are computed while the first stages are in flight.
template <int M, int K, int N, int BM, int BN, int BK, int WM, int WN, int STAGES, int GROUP_M, int LN_FUSED, int CORR>
__device__ __forceinline__ void mma_gemm_block(const float* __restrict__ a_src, const float* __restrict__ norm_w,
                                               const float* __restrict__ norm_b, const float* __restrict__ fc_w,
                                               const float* __restrict__ fc_b, float* __restrict__ out) {
  namespace k = tune_kernels::ln_linear_gelu;
  constexpr int kWarpsN = BN / WN;
  constexpr int kThreads = (BM / WM) * kWarpsN * 32;
  constexpr int MT = WM / 16, NT = WN / 8;
  constexpr int kTilesM = k::cdiv(M, BM), kTilesN = k::cdiv(N, BN);
  constexpr int kKT = k::cdiv(K, BK);
  static_assert(K % 4 == 0, "K must be a multiple of 4");
  static_assert(BK % 8 == 0 && WM % 16 == 0 && WN % 8 == 0, "BK % 8, WM % 16 and WN % 8 must be 0");
  static_assert(BM % WM == 0 && BN % WN == 0, "the warp tile must divide the block tile");
  static_assert(STAGES >= 2, "at least two stages");
  using L = k::MmaSmem<BM, BN, BK, STAGES>;
  extern __shared__ __align__(16) float smem[];
  using F = k::FusedLn<BM, K, BK>;
  float* ln = smem + STAGES * L::kStage;  // LN_FUSED: FusedLn's layout

  int tm, tn;
  k::raster<kTilesM, kTilesN, GROUP_M>(blockIdx.x, tm, tn);
  const int m0 = tm * BM, n0 = tn * BN;
  const int warp = threadIdx.x >> 5;
  const int wm0 = (warp / kWarpsN) * WM, wn0 = (warp % kWarpsN) * WN;

  float acc[MT][NT][4];
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int c = 0; c < 4; ++c) acc[i][j][c] = 0.f;

#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < kKT) k::copy_stage<BM, BN, BK, STAGES, M, K, N, kThreads>(smem, a_src, fc_w, m0, n0, s);
    k::cp_async_commit();
  }
  if constexpr (LN_FUSED) k::fused_ln_prologue<M, K, BM, BK, kThreads>(a_src, norm_w, norm_b, ln, m0);
#pragma unroll 1
  for (int kt = 0; kt < kKT; ++kt) {
    k::cp_async_wait<STAGES - 2>();
    __syncthreads();            // tile kt is visible to all; every warp is done with tile kt - 1's slot
    if (kt + STAGES - 1 < kKT)  // into the slot of tile kt - 1
      k::copy_stage<BM, BN, BK, STAGES, M, K, N, kThreads>(smem, a_src, fc_w, m0, n0, kt + STAGES - 1);
    k::cp_async_commit();
    const float* st = smem + (kt % STAGES) * L::kStage;
    if constexpr (LN_FUSED) {
      k::warp_mma_stage<BK, MT, NT, true, CORR>(acc, st, st + L::kA, wm0, wn0, ln + kt * BK, ln + F::kPadK + kt * BK,
                                                ln + F::kMean, ln + F::kRstd);
    } else {
      k::warp_mma_stage<BK, MT, NT, false, CORR>(acc, st, st + L::kA, wm0, wn0, nullptr, nullptr, nullptr, nullptr);
    }
  }
  k::cp_async_wait<0>();
  (void)norm_w, (void)norm_b;

  const int lane = threadIdx.x & 31;
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int j = 0; j < NT; ++j) {
    const int n = n0 + wn0 + 8 * j + 2 * t;
    const float b0 = __ldg(fc_b + k::imin(n, N - 1)), b1 = __ldg(fc_b + k::imin(n + 1, N - 1));
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int m = m0 + wm0 + 16 * i + g + 8 * h;
        if (M % BM != 0 && m >= M) continue;
        float* o = out + static_cast<long long>(m) * N + n;
        const float v0 = k::gelu_erf(acc[i][j][2 * h] + b0), v1 = k::gelu_erf(acc[i][j][2 * h + 1] + b1);
        if (N % 2 == 0 && (N % BN == 0 || n < N)) {
          *reinterpret_cast<float2*>(o) = make_float2(v0, v1);  // n and N even: 8-byte aligned
        } else if (N % 2 != 0) {
          if (n < N) o[0] = v0;
          if (n + 1 < N) o[1] = v1;
        }
      }
  }
}

template <int M, int K, int N, int BM, int BN, int BK, int WM, int WN, int STAGES, int GROUP_M, int LN_FUSED>
__global__ void __maxnreg__(255) ln_linear_gelu_mma_kernel(const float* __restrict__ a_src, const float* __restrict__ norm_w,
                                                           const float* __restrict__ norm_b, const float* __restrict__ fc_w,
                                                           const float* __restrict__ fc_b, float* __restrict__ out) {
  mma_gemm_block<M, K, N, BM, BN, BK, WM, WN, STAGES, GROUP_M, LN_FUSED, 0>(a_src, norm_w, norm_b, fc_w, fc_b, out);
}

// corr bf16: launch 2 with each product's two small terms in one bf16 MMA (gemm.cuh's
// correct_bf16): two MMAs a product instead of 3xTF32's three; the same template parameters,
// launch and shared memory as ln_linear_gelu_mma_kernel.
template <int M, int K, int N, int BM, int BN, int BK, int WM, int WN, int STAGES, int GROUP_M, int LN_FUSED>
__global__ void __maxnreg__(255)
    ln_linear_gelu_mma_bf16c_kernel(const float* __restrict__ a_src, const float* __restrict__ norm_w,
                                    const float* __restrict__ norm_b, const float* __restrict__ fc_w,
                                    const float* __restrict__ fc_b, float* __restrict__ out) {
  mma_gemm_block<M, K, N, BM, BN, BK, WM, WN, STAGES, GROUP_M, LN_FUSED, 1>(a_src, norm_w, norm_b, fc_w, fc_b, out);
}

// algo mma, split_k > 1: the GEMM of launch 2 cut along K into SPLIT contiguous ranges of whole
// BK tiles (cdiv(cdiv(K, BK), SPLIT) tiles each, the last range shorter), so that a shape with few
// output tiles still puts enough warps on every SM. Block (tile, split = blockIdx.y) accumulates
// its tile over its range, as ln_linear_gelu_mma_kernel does over all of K (same template
// parameters, same pipeline), and stores the raw sum, no bias or GELU, into slice `split` of the
// scratch `partial` (SPLIT x M x N floats): every element of the tile inside M and N, so
// the epilogue below never reads an unwritten element (a range that were empty would store zeros).
// ln fused: the prologue takes the statistics of whole rows, and the A fragments of tile kt are
// normalised with gamma and beta of its own columns, as in the one-pass kernel.
// Launch: grid (cdiv(M, BM) * cdiv(N, BN), SPLIT), block and dynamic shared memory as launch 2;
// then ln_linear_gelu_splitk_epilogue.
template <int M, int K, int N, int BM, int BN, int BK, int WM, int WN, int STAGES, int GROUP_M, int LN_FUSED, int SPLIT>
__global__ void __maxnreg__(255)
    ln_linear_gelu_mma_splitk_kernel(const float* __restrict__ a_src, const float* __restrict__ norm_w,
                                     const float* __restrict__ norm_b, const float* __restrict__ fc_w,
                                     float* __restrict__ partial) {
  namespace k = tune_kernels::ln_linear_gelu;
  constexpr int kWarpsN = BN / WN;
  constexpr int kThreads = (BM / WM) * kWarpsN * 32;
  constexpr int MT = WM / 16, NT = WN / 8;
  constexpr int kTilesM = k::cdiv(M, BM), kTilesN = k::cdiv(N, BN);
  constexpr int kKT = k::cdiv(K, BK);
  constexpr int kPerSplit = k::cdiv(kKT, SPLIT);
  static_assert(K % 4 == 0, "K must be a multiple of 4");
  static_assert(BK % 8 == 0 && WM % 16 == 0 && WN % 8 == 0, "BK % 8, WM % 16 and WN % 8 must be 0");
  static_assert(BM % WM == 0 && BN % WN == 0, "the warp tile must divide the block tile");
  static_assert(STAGES >= 2 && SPLIT >= 1, "at least two stages and one split");
  using L = k::MmaSmem<BM, BN, BK, STAGES>;
  extern __shared__ __align__(16) float smem[];
  using F = k::FusedLn<BM, K, BK>;
  float* ln = smem + STAGES * L::kStage;  // LN_FUSED: FusedLn's layout

  int tm, tn;
  k::raster<kTilesM, kTilesN, GROUP_M>(blockIdx.x, tm, tn);
  const int m0 = tm * BM, n0 = tn * BN;
  const int warp = threadIdx.x >> 5;
  const int wm0 = (warp / kWarpsN) * WM, wn0 = (warp % kWarpsN) * WN;
  const int kt0 = blockIdx.y * kPerSplit;                         // the range's first k-tile
  const int nkt = kKT - kt0 < kPerSplit ? kKT - kt0 : kPerSplit;  // its k-tiles (<= 0: none)

  float acc[MT][NT][4];
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int c = 0; c < 4; ++c) acc[i][j][c] = 0.f;

#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < nkt) k::copy_stage_to<BM, BN, BK, STAGES, M, K, N, kThreads>(smem, s, a_src, fc_w, m0, n0, kt0 + s);
    k::cp_async_commit();
  }
  if constexpr (LN_FUSED) k::fused_ln_prologue<M, K, BM, BK, kThreads>(a_src, norm_w, norm_b, ln, m0);
#pragma unroll 1
  for (int i = 0; i < nkt; ++i) {  // i: the range's tile, in slot i % STAGES; kt0 + i: its columns
    k::cp_async_wait<STAGES - 2>();
    __syncthreads();  // tile i is visible to all; every warp is done with tile i - 1's slot
    if (i + STAGES - 1 < nkt)
      k::copy_stage_to<BM, BN, BK, STAGES, M, K, N, kThreads>(smem, (i + STAGES - 1) % STAGES, a_src, fc_w, m0, n0,
                                                              kt0 + i + STAGES - 1);
    k::cp_async_commit();
    const float* st = smem + (i % STAGES) * L::kStage;
    const int kc = (kt0 + i) * BK;
    if constexpr (LN_FUSED) {
      k::warp_mma_stage<BK, MT, NT, true>(acc, st, st + L::kA, wm0, wn0, ln + kc, ln + F::kPadK + kc, ln + F::kMean,
                                          ln + F::kRstd);
    } else {
      k::warp_mma_stage<BK, MT, NT, false>(acc, st, st + L::kA, wm0, wn0, nullptr, nullptr, nullptr, nullptr);
    }
  }
  k::cp_async_wait<0>();
  (void)norm_w, (void)norm_b;
  k::store_partial<M, N, BM, BN, MT, NT>(acc, partial + static_cast<long long>(blockIdx.y) * M * N, m0, n0, wm0, wn0);
}

// algo mma, split_k > 1, the last launch: out = GELU(sum over s = 0 .. SPLIT-1 of partial[s] +
// fc.bias), the slices summed in that order (deterministic: the same bits every run). One thread
// per 4 elements (float4: N % 4 == 0 keeps every slice and row 16-byte aligned), else per element.
// Launch: grid cdiv(M * N, N % 4 == 0 ? 1024 : 256) (problem.json's epi_grid), block 256.
template <int M, int N, int SPLIT>
__global__ void __launch_bounds__(256)
    ln_linear_gelu_splitk_epilogue(const float* __restrict__ partial, const float* __restrict__ fc_b,
                                   float* __restrict__ out) {
  namespace k = tune_kernels::ln_linear_gelu;
  constexpr long long kSlice = static_cast<long long>(M) * N;
  const long long u = static_cast<long long>(blockIdx.x) * 256 + threadIdx.x;
  if constexpr (N % 4 == 0) {
    if (u >= kSlice / 4) return;
    const float4* p = reinterpret_cast<const float4*>(partial) + u;
    float4 v = __ldg(p);
#pragma unroll
    for (int s = 1; s < SPLIT; ++s) {
      const float4 w = __ldg(p + s * (kSlice / 4));
      v = make_float4(v.x + w.x, v.y + w.y, v.z + w.z, v.w + w.w);
    }
    const float4 b = __ldg(reinterpret_cast<const float4*>(fc_b) + static_cast<int>((4 * u) % N) / 4);
    reinterpret_cast<float4*>(out)[u] =
        make_float4(k::gelu_erf(v.x + b.x), k::gelu_erf(v.y + b.y), k::gelu_erf(v.z + b.z), k::gelu_erf(v.w + b.w));
  } else {
    if (u >= kSlice) return;
    float v = __ldg(partial + u);
#pragma unroll
    for (int s = 1; s < SPLIT; ++s) v += __ldg(partial + s * kSlice + u);
    out[u] = k::gelu_erf(v + __ldg(fc_b + static_cast<int>(u % N)));
  }
}

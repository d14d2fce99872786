#pragma once
// The tensor-core path of ln_linear_gelu (algo mma): the PTX wrappers (cp.async, the TF32 split,
// mma.sync m16n8k8), the multistage tile copy and a warp's 3xTF32 multiply-accumulate of one
// shared-memory stage. kernel.cuh holds the two kernels that use them.
//
// 3xTF32 (CUTLASS's "fast accurate" float32 on tensor cores): every float32 operand x is split into
// hi = x with its low 13 mantissa bits cleared (a TF32 value) and lo = x - hi (exact, at most
// 2^-10 |x|; the MMA reads its top 19 bits, so lo is kept to about 2^-20 |x|), and a product is
// accumulated in float32 as lo_a hi_b + hi_a lo_b + hi_a hi_b (the small terms first; lo_a lo_b,
// about 2^-20 of the product, is left out). That keeps float32 parity (1e-4) where one TF32 MMA
// (10-bit mantissa, about 1e-3 relative) would not, at three MMAs per product. The split is two
// integer/float ops a value (no cvt: the conversion unit runs at a fraction of the ALU rate).
#include "common.cuh"

namespace tune_kernels {
namespace ln_linear_gelu {

__device__ __forceinline__ unsigned smem_u32(const void* p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }

// 16 bytes global -> shared through L2 only (.cg); !valid writes 16 zero bytes (the source size 0),
// so tiles past an edge of M, N or K read zeros and need no guard in the inner loop.
__device__ __forceinline__ void cp_async16(float* dst, const float* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_u32(dst)), "l"(src), "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int PENDING>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(PENDING));
}

__device__ __forceinline__ void split_tf32(float x, unsigned& hi, unsigned& lo) {
  hi = __float_as_uint(x) & 0xffffe000u;
  lo = __float_as_uint(x - __uint_as_float(hi));
}

// d += a b, one m16n8k8 TF32 MMA. Fragments (PTX ISA, "Matrix fragments for mma.m16n8k8", .tf32),
// g = lane / 4, t = lane % 4: a = A[g][t], A[g+8][t], A[g][t+4], A[g+8][t+4]; b = B[t][g], B[t+4][g];
// d = C[g][2t], C[g][2t+1], C[g+8][2t], C[g+8][2t+1].
__device__ __forceinline__ void mma_tf32(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// d += a b, one m16n8k16 bf16 MMA with float32 accumulation (PTX ISA, "Matrix fragments for
// mma.m16n8k16", .bf16), g = lane / 4, t = lane % 4; each register holds two bf16, the lower k in
// its low half: a = A[g][2t..2t+1], A[g+8][2t..2t+1], A[g][2t+8..2t+9], A[g+8][2t+8..2t+9];
// b = B[2t..2t+1][g], B[2t+8..2t+9][g]; d as mma_tf32's.
__device__ __forceinline__ void mma_bf16(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// Two float32 bit patterns as one bf16x2 register, each cut to its top 16 bits (bf16 by
// truncation: sign, exponent and 7 mantissa bits): x in the low half, y in the high half. One
// byte permute, no conversion unit.
__device__ __forceinline__ unsigned pack_bf16x2(unsigned x, unsigned y) { return __byte_perm(x, y, 0x7632); }

// Row stride (floats) of a shared tile of BK columns: BK + 8. A fragment is read as float2 (see
// warp_mma_stage): lane (g, t) at g * stride + 2 t; a 64-bit load is served in two halves of 16
// lanes (g = 0..3, then 4..7), and with stride = 8 (mod 16) their 16 float2 fall in 32 different
// banks for every BK that is a multiple of 8. The 16-byte cp.async destinations stay aligned.
__host__ __device__ constexpr int mma_stride(int bk) { return bk + 8; }

// The dynamic shared memory of the GEMM: STAGES x [A: BM rows][B: BN rows], each of BK columns at
// row stride mma_stride(BK). problem.json's smem_bytes is kBytes.
template <int BM, int BN, int BK, int STAGES>
struct MmaSmem {
  static constexpr int kStride = mma_stride(BK);
  static constexpr int kA = BM * kStride;
  static constexpr int kStage = (BM + BN) * kStride;
  static constexpr int kBytes = 4 * STAGES * kStage;
};

// Issue the cp.async copies of rows r0 .. r0+ROWS-1 (those below LIMIT) and columns k0 .. k0+BK-1
// (those below K) of a row-major LIMIT x K matrix into a ROWS x BK shared tile; the rest is zeros.
// K % 4 == 0, so a 16-byte chunk is wholly inside or wholly outside.
template <int ROWS, int BK, int K, int LIMIT, int THREADS>
__device__ __forceinline__ void copy_tile(float* dst, const float* __restrict__ src, int r0, int k0) {
  constexpr int kRowChunks = BK / 4;
  constexpr int kChunks = ROWS * kRowChunks;
  constexpr int kIters = cdiv(kChunks, THREADS);
#pragma unroll
  for (int it = 0; it < kIters; ++it) {
    const int c = threadIdx.x + it * THREADS;
    if (kChunks % THREADS == 0 || c < kChunks) {
      const int r = c / kRowChunks, q = c % kRowChunks;
      const int gr = r0 + r, gk = k0 + 4 * q;
      const bool valid = (LIMIT % ROWS == 0 || gr < LIMIT) && (K % BK == 0 || gk < K);
      const float* g = src + (valid ? static_cast<long long>(gr) * K + gk : 0);
      cp_async16(dst + r * mma_stride(BK) + 4 * q, g, valid);
    }
  }
}

// Issue the copies of k-tile kt (columns kt * BK ..) of the block's A rows (xn) and B rows
// (fc.weight) into its stage slot, kt % STAGES.
template <int BM, int BN, int BK, int STAGES, int M, int K, int N, int THREADS>
__device__ __forceinline__ void copy_stage(float* smem, const float* __restrict__ xn, const float* __restrict__ w, int m0,
                                           int n0, int kt) {
  using L = MmaSmem<BM, BN, BK, STAGES>;
  float* st = smem + (kt % STAGES) * L::kStage;
  copy_tile<BM, BK, K, M, THREADS>(st, xn, m0, kt * BK);
  copy_tile<BN, BK, K, N, THREADS>(st + L::kA, w, n0, kt * BK);
}

// Split-K: the copies of k-tile kt (columns kt * BK ..) into stage slot `slot`, which counts the
// block's own tiles (its K range starts at a tile other than 0), not the tile index.
template <int BM, int BN, int BK, int STAGES, int M, int K, int N, int THREADS>
__device__ __forceinline__ void copy_stage_to(float* smem, int slot, const float* __restrict__ xn,
                                              const float* __restrict__ w, int m0, int n0, int kt) {
  using L = MmaSmem<BM, BN, BK, STAGES>;
  float* st = smem + slot * L::kStage;
  copy_tile<BM, BK, K, M, THREADS>(st, xn, m0, kt * BK);
  copy_tile<BN, BK, K, N, THREADS>(st + L::kA, w, n0, kt * BK);
}

// corr bf16: one k-step's products in two MMAs instead of three, acc += hi_a hi_b (TF32) and then
// lo_a hi_b + hi_a lo_b as ONE m16n8k16 bf16 MMA whose 16-deep k holds the step's 8 columns twice:
// k 0..7 pair lo_a with hi_b, k 8..15 hi_a with lo_b. A lane holds the same columns (2t, 2t+1 of
// the step, rows g and g + 8) in both fragment layouts, so the registers of the TF32 split are
// only repacked. The bf16 operands are truncated to 8 significant bits: each correction term is
// below 2^-10 of its product and is then off by under 2^-6 of itself (both operands cut), so a
// product's error stays under 2^-15 of it (3xTF32's about 2^-20), about 2^-19 on average, with
// signs that vary from product to product: inside float32 parity (1e-4), which the tune checks.
// A bf16 m16n8k16 costs the tensor cores what one TF32 m16n8k8 does: two MMAs a product, not three.
template <int MT, int NT>
__device__ __forceinline__ void correct_bf16(float (&acc)[MT][NT][4], const unsigned (&ahi)[MT][4],
                                             const unsigned (&alo)[MT][4], const unsigned (&bhi)[NT][2],
                                             const unsigned (&blo)[NT][2]) {
  unsigned ac[MT][4], bc[NT][2];
#pragma unroll
  for (int i = 0; i < MT; ++i) {  // TF32 fragment: [0] row g col 2t, [1] row g+8, [2] row g col 2t+1, [3] row g+8
    ac[i][0] = pack_bf16x2(alo[i][0], alo[i][2]);  // row g, k 2t, 2t+1: lo_a
    ac[i][1] = pack_bf16x2(alo[i][1], alo[i][3]);  // row g + 8
    ac[i][2] = pack_bf16x2(ahi[i][0], ahi[i][2]);  // row g, k 2t+8, 2t+9: hi_a
    ac[i][3] = pack_bf16x2(ahi[i][1], ahi[i][3]);  // row g + 8
  }
#pragma unroll
  for (int j = 0; j < NT; ++j) {
    bc[j][0] = pack_bf16x2(bhi[j][0], bhi[j][1]);  // k 2t, 2t+1: hi_b
    bc[j][1] = pack_bf16x2(blo[j][0], blo[j][1]);  // k 2t+8, 2t+9: lo_b
  }
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j) mma_bf16(acc[i][j], ac[i], bc[j]);
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j) mma_tf32(acc[i][j], ahi[i], bhi[j]);
}

// acc += A B^T over one stage: the warp's WM x WN tile (rows wm0.., columns wn0.. of the block
// tile), MT x NT MMA tiles of 16 x 8, k-steps of 8, every product in 3xTF32.
// The k order inside a step is free as long as A and B agree: the fragment's k = t is taken from
// column kk + 2t and k = t + 4 from column kk + 2t + 1, so each lane reads float2 (half the shared
// loads of the PTX layout's scalar ones). The three passes (lo hi, hi lo, hi hi) run over all
// MT x NT tiles in turn, so consecutive MMAs are independent.
// NORM (ln fused): A holds raw x; each value is normalised as it is read, with gamma[k] and beta[k]
// of this stage's columns (gam, bet) and its row's mean and rstd (row_mean, row_rstd).
// CORR 1 (corr bf16): the two small terms in one bf16 MMA (correct_bf16), two MMAs a product.
template <int BK, int MT, int NT, bool NORM, int CORR = 0>
__device__ __forceinline__ void warp_mma_stage(float (&acc)[MT][NT][4], const float* as, const float* bs, int wm0, int wn0,
                                               const float* gam, const float* bet, const float* row_mean,
                                               const float* row_rstd) {
  constexpr int S = mma_stride(BK);
  const int lane = threadIdx.x & 31;
  const int g = lane >> 2, t = lane & 3;
  const float* pa = as + (wm0 + g) * S + 2 * t;
  const float* pb = bs + (wn0 + g) * S + 2 * t;
  float mean[MT][2], rstd[MT][2];
  if constexpr (NORM) {
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = wm0 + 16 * i + 8 * h + g;
        mean[i][h] = row_mean[r];
        rstd[i][h] = row_rstd[r];
      }
  }
#pragma unroll
  for (int kk = 0; kk < BK; kk += 8) {
    unsigned ahi[MT][4], alo[MT][4], bhi[NT][2], blo[NT][2];
    float2 gk = make_float2(1.f, 1.f), bk = make_float2(0.f, 0.f);
    if constexpr (NORM) {
      gk = *reinterpret_cast<const float2*>(gam + kk + 2 * t);
      bk = *reinterpret_cast<const float2*>(bet + kk + 2 * t);
    }
#pragma unroll
    for (int i = 0; i < MT; ++i) {
      float2 r0 = *reinterpret_cast<const float2*>(pa + 16 * i * S + kk);        // row g
      float2 r1 = *reinterpret_cast<const float2*>(pa + (16 * i + 8) * S + kk);  // row g + 8
      if constexpr (NORM) {
        r0 = make_float2((r0.x - mean[i][0]) * rstd[i][0] * gk.x + bk.x, (r0.y - mean[i][0]) * rstd[i][0] * gk.y + bk.y);
        r1 = make_float2((r1.x - mean[i][1]) * rstd[i][1] * gk.x + bk.x, (r1.y - mean[i][1]) * rstd[i][1] * gk.y + bk.y);
      }
      split_tf32(r0.x, ahi[i][0], alo[i][0]);
      split_tf32(r1.x, ahi[i][1], alo[i][1]);
      split_tf32(r0.y, ahi[i][2], alo[i][2]);
      split_tf32(r1.y, ahi[i][3], alo[i][3]);
    }
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      const float2 c = *reinterpret_cast<const float2*>(pb + 8 * j * S + kk);
      split_tf32(c.x, bhi[j][0], blo[j][0]);
      split_tf32(c.y, bhi[j][1], blo[j][1]);
    }
    if constexpr (CORR == 1) {
      correct_bf16<MT, NT>(acc, ahi, alo, bhi, blo);
    } else {
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j) mma_tf32(acc[i][j], alo[i], bhi[j]);
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j) mma_tf32(acc[i][j], ahi[i], blo[j]);
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j) mma_tf32(acc[i][j], ahi[i], bhi[j]);
    }
  }
}

// Split-K: the warp's accumulators (a partial sum over the block's K range) into dst, the slice of
// this split (M x N, row-major), every element of the block tile inside M and N written (the
// scratch is not zero-initialised), float2 where N is even, guarded at ragged M and N.
template <int M, int N, int BM, int BN, int MT, int NT>
__device__ __forceinline__ void store_partial(const float (&acc)[MT][NT][4], float* __restrict__ dst, int m0, int n0,
                                              int wm0, int wn0) {
  const int lane = threadIdx.x & 31;
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int j = 0; j < NT; ++j) {
    const int n = n0 + wn0 + 8 * j + 2 * t;
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int m = m0 + wm0 + 16 * i + g + 8 * h;
        if (M % BM != 0 && m >= M) continue;
        float* o = dst + static_cast<long long>(m) * N + n;
        if (N % 2 == 0 && (N % BN == 0 || n < N)) {
          *reinterpret_cast<float2*>(o) = make_float2(acc[i][j][2 * h], acc[i][j][2 * h + 1]);  // 8-byte aligned
        } else if (N % 2 != 0) {
          if (n < N) o[0] = acc[i][j][2 * h];
          if (n + 1 < N) o[1] = acc[i][j][2 * h + 1];
        }
      }
  }
}

// ln fused: the shared memory after the stages: gamma and beta over kPadK = cdiv(K, BK) * BK
// columns (zeros past K, so the zero-filled columns of x normalise to 0 and stay finite), then each
// of the block's rows' mean and rstd. problem.json's smem_bytes adds 4 * kFloats.
template <int BM, int K, int BK>
struct FusedLn {
  static constexpr int kPadK = cdiv(K, BK) * BK;
  static constexpr int kMean = 2 * kPadK;
  static constexpr int kRstd = kMean + BM;
  static constexpr int kFloats = kRstd + BM;
};

// ln fused, before the main loop: gamma and beta into shared memory, and each row's mean and rstd
// (a warp per row, two passes over the row in float as ln_rows_kernel; rows past M get 0 and 0).
// The main loop's first barrier makes them visible.
template <int M, int K, int BM, int BK, int THREADS>
__device__ __forceinline__ void fused_ln_prologue(const float* __restrict__ x, const float* __restrict__ gamma,
                                                  const float* __restrict__ beta, float* ln, int m0) {
  using F = FusedLn<BM, K, BK>;
  for (int c = threadIdx.x; c < F::kPadK; c += THREADS) {
    ln[c] = c < K ? __ldg(gamma + c) : 0.f;
    ln[F::kPadK + c] = c < K ? __ldg(beta + c) : 0.f;
  }
  constexpr int kUnits = K / 4;
  const int lane = threadIdx.x & 31;
#pragma unroll 1
  for (int r = threadIdx.x >> 5; r < BM; r += THREADS / 32) {
    const int m = m0 + r;
    float mu = 0.f, rs = 0.f;
    if (M % BM == 0 || m < M) {  // warp-uniform
      const float4* row = reinterpret_cast<const float4*>(x + static_cast<long long>(m) * K);
      float s = 0.f;
      for (int u = lane; u < kUnits; u += 32) {
        const float4 v = __ldg(row + u);
        s += (v.x + v.y) + (v.z + v.w);
      }
      mu = warp_sum(s) * (1.0f / K);
      float q = 0.f;
      for (int u = lane; u < kUnits; u += 32) q += Vec<4>::sqdev(__ldg(row + u), mu);
      rs = rsqrtf(warp_sum(q) * (1.0f / K) + kLnEps);
    }
    if (lane == 0) {
      ln[F::kMean + r] = mu;
      ln[F::kRstd + r] = rs;
    }
  }
}

// The block's tile (bm, bn) from its linear index: GROUP_M tile rows at a time, column by column
// within the group (Triton's "grouped ordering"), so blocks resident together share rows of A and
// columns of B in L2. GROUP_M 1 is row-major order.
template <int TILES_M, int TILES_N, int GROUP_M>
__device__ __forceinline__ void raster(int pid, int& bm, int& bn) {
  constexpr int kInGroup = GROUP_M * TILES_N;
  const int group = pid / kInGroup;
  const int first = group * GROUP_M;
  const int size = imin(TILES_M - first, GROUP_M);
  const int r = pid - group * kInGroup;
  bm = first + r % size;
  bn = r / size;
}

}  // namespace ln_linear_gelu
}  // namespace tune_kernels

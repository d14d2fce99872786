#pragma once
// The tensor-core path of ln_linear_gelu (algo mma): the PTX wrappers (cp.async, the TF32 split,
// mma.sync m16n8k8), the multistage tile copy and a warp's 3xTF32 multiply-accumulate of one
// shared-memory stage. kernel.cuh holds the two kernels that use them.
//
// 3xTF32 (CUTLASS's "fast accurate" float32 on tensor cores): every float32 operand x is split into
// hi = tf32(x) and lo = tf32(x - hi), so x = hi + lo up to about 2^-22 |x|, and a product is
// accumulated in float32 as lo_a hi_b + hi_a lo_b + hi_a hi_b (the small terms first; lo_a lo_b,
// about 2^-22 of the product, is left out). That keeps float32 parity (1e-4) where one TF32 MMA
// (10-bit mantissa, about 1e-3 relative) would not, at three MMAs per product.
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

__device__ __forceinline__ unsigned tf32_rna(float x) {
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return r;
}
__device__ __forceinline__ void split_tf32(float x, unsigned& hi, unsigned& lo) {
  hi = tf32_rna(x);
  lo = tf32_rna(x - __uint_as_float(hi));
}

// d += a b, one m16n8k8 TF32 MMA. Fragments (PTX ISA, "Matrix fragments for mma.m16n8k8", .tf32),
// g = lane / 4, t = lane % 4: a = A[g][t], A[g+8][t], A[g][t+4], A[g+8][t+4]; b = B[t][g], B[t+4][g];
// d = C[g][2t], C[g][2t+1], C[g+8][2t], C[g+8][2t+1].
__device__ __forceinline__ void mma_tf32(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// Row stride (floats) of a shared tile of BK columns: BK + 4. A fragment read has lane (g, t) at
// g * stride + t (+ 4): with stride = 4 (mod 8) the 8 rows g start 4 * odd banks apart, so the
// 32 lanes hit 32 different banks for every BK that is a multiple of 8. The 16-byte cp.async
// destinations stay aligned (stride % 4 == 0).
__host__ __device__ constexpr int mma_stride(int bk) { return bk + 4; }

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

// acc += A B^T over one stage: the warp's WM x WN tile (rows wm0.., columns wn0.. of the block
// tile), MT x NT MMA tiles of 16 x 8, k-steps of 8, every product in 3xTF32.
template <int BK, int MT, int NT>
__device__ __forceinline__ void warp_mma_stage(float (&acc)[MT][NT][4], const float* as, const float* bs, int wm0, int wn0) {
  constexpr int S = mma_stride(BK);
  const int lane = threadIdx.x & 31;
  const int g = lane >> 2, t = lane & 3;
  const float* pa = as + (wm0 + g) * S + t;
  const float* pb = bs + (wn0 + g) * S + t;
#pragma unroll
  for (int kk = 0; kk < BK; kk += 8) {
    unsigned ahi[MT][4], alo[MT][4], bhi[NT][2], blo[NT][2];
#pragma unroll
    for (int i = 0; i < MT; ++i) {
      const float* p = pa + 16 * i * S + kk;
      split_tf32(p[0], ahi[i][0], alo[i][0]);
      split_tf32(p[8 * S], ahi[i][1], alo[i][1]);
      split_tf32(p[4], ahi[i][2], alo[i][2]);
      split_tf32(p[8 * S + 4], ahi[i][3], alo[i][3]);
    }
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      const float* p = pb + 8 * j * S + kk;
      split_tf32(p[0], bhi[j][0], blo[j][0]);
      split_tf32(p[4], bhi[j][1], blo[j][1]);
    }
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
      for (int j = 0; j < NT; ++j) {
        mma_tf32(acc[i][j], alo[i], bhi[j]);
        mma_tf32(acc[i][j], ahi[i], blo[j]);
        mma_tf32(acc[i][j], ahi[i], bhi[j]);
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

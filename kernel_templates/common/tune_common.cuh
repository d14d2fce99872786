#pragma once
// Device helpers the kernel templates share (contact, scene_graph): integer arithmetic for tile
// and stride sizes, vector loads and stores, the inline PTX (cp.async, TF32 MMA, named barriers)
// and warp reductions. Self-contained (no system headers): NVRTC compiles it as a header of every
// template whose problem lists kernel_templates/common in "include_dirs"; nvcc finds it through
// tune::kernels' include directories.

namespace tune_kernels {

__host__ __device__ constexpr int cdiv(int a, int b) { return (a + b - 1) / b; }
__host__ __device__ constexpr int round4(int x) { return cdiv(x, 4) * 4; }
__host__ __device__ constexpr int round8(int x) { return cdiv(x, 8) * 8; }
// Floats per vector access of a row of x floats: float4 needs 16-byte aligned rows.
__host__ __device__ constexpr int vec_width(int x) { return x % 4 == 0 ? 4 : 1; }
// Stride (floats) of shared rows that lanes read one row per lane: an odd number of 16-byte
// units for float4 rows, an odd number of words for scalar rows, so those reads are free of
// bank conflicts (and float4 rows stay 16-byte aligned).
__host__ __device__ constexpr int row_stride(int x) {
  return x % 4 == 0 ? (x % 8 == 0 ? x + 4 : x) : (x % 2 == 0 ? x + 1 : x);
}

constexpr float kLnEps = 1e-5f;
constexpr unsigned kFullMask = 0xffffffffu;

template <bool SHARED>
__device__ __forceinline__ float load1(const float* p) {
  if constexpr (SHARED) {
    return *p;
  } else {
    return __ldg(p);
  }
}

// V (1, 2 or 4) consecutive floats; p aligned to 4V bytes.
template <int V, bool SHARED>
__device__ __forceinline__ void loadv(const float* p, float (&v)[V]) {
  if constexpr (V == 4) {
    float4 t;
    if constexpr (SHARED) {
      t = *reinterpret_cast<const float4*>(p);
    } else {
      t = __ldg(reinterpret_cast<const float4*>(p));
    }
    v[0] = t.x;
    v[1] = t.y;
    v[2] = t.z;
    v[3] = t.w;
  } else if constexpr (V == 2) {
    float2 t;
    if constexpr (SHARED) {
      t = *reinterpret_cast<const float2*>(p);
    } else {
      t = __ldg(reinterpret_cast<const float2*>(p));
    }
    v[0] = t.x;
    v[1] = t.y;
  } else {
#pragma unroll
    for (int q = 0; q < V; ++q) v[q] = load1<SHARED>(p + q);
  }
}

template <int V>
__device__ __forceinline__ void storev(float* p, const float (&v)[V]) {
  if constexpr (V == 4) {
    *reinterpret_cast<float4*>(p) = make_float4(v[0], v[1], v[2], v[3]);
  } else {
#pragma unroll
    for (int q = 0; q < V; ++q) p[q] = v[q];
  }
}

// The inline PTX the templates use, in one place; declared only when the file is not compiled for a
// GPU, so it also parses as host C++ (for a CPU emulation that defines these).
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
// 0, through an instruction the compiler cannot see into; `dep` ties it to a loop iteration so
// loads addressed with it are not hoisted out of that loop.
__device__ __forceinline__ int opaque_zero(int dep) {
  int r;
  asm("mov.u32 %0, 0;" : "=r"(r) : "r"(dep));
  return r;
}
// x with its low 13 mantissa bits cleared: a TF32 value, and x - tf32_trunc(x) is exact.
__device__ __forceinline__ float tf32_trunc(float x) { return __uint_as_float(__float_as_uint(x) & 0xffffe000u); }
// x rounded to the nearest TF32 value (ties away from zero): half the error of truncation.
__device__ __forceinline__ float tf32_round(float x) {
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return __uint_as_float(r);
}
// d += A(16x8, row) * B(8x8, col); lane (g = lane/4, t = lane%4) holds a = {A[g][t], A[g+8][t],
// A[g][t+4], A[g+8][t+4]}, b = {B[t][g], B[t+4][g]}, d = {D[g][2t], D[g][2t+1], D[g+8][2t], D[g+8][2t+1]}.
__device__ __forceinline__ void mma_tf32(float (&d)[4], const float (&a)[4], float b0, float b1) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(__float_as_uint(a[0])), "r"(__float_as_uint(a[1])), "r"(__float_as_uint(a[2])), "r"(__float_as_uint(a[3])),
        "r"(__float_as_uint(b0)), "r"(__float_as_uint(b1)));
}
// Asynchronous global -> shared copy of BYTES (4 or 16) bytes (sm_80+), or zeros when !valid
// (src-size 0: nothing is read). Every copy a thread issues is in flight until copy_wait_all().
template <int BYTES>
__device__ __forceinline__ void copy_async(float* dst, const float* src, bool valid) {
  static_assert(BYTES == 4 || BYTES == 16, "cp.async copies 4 or 16 bytes here");
  const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  const int n = valid ? BYTES : 0;
  if constexpr (BYTES == 16) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(d), "l"(src), "r"(n) : "memory");
  } else {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(d), "l"(src), "r"(n) : "memory");
  }
}
// Barrier `id` (1..15; 0 is __syncthreads) over `threads` threads of the block (whole warps).
__device__ __forceinline__ void named_barrier(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
// Tells the compiler that c holds (for index arithmetic it cannot bound by itself).
__device__ __forceinline__ void assume(bool c) { __builtin_assume(c); }
__device__ __forceinline__ void copy_wait_all() {
  asm volatile("cp.async.commit_group;\ncp.async.wait_group 0;" ::: "memory");
}
// The cp.async copies this thread issued since the last commit form one group.
__device__ __forceinline__ void copy_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
// Waits until at most PENDING of this thread's committed groups are still in flight.
template <int PENDING>
__device__ __forceinline__ void copy_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(PENDING) : "memory");
}
#else
int opaque_zero(int dep);
float tf32_trunc(float x);
float tf32_round(float x);
void mma_tf32(float (&d)[4], const float (&a)[4], float b0, float b1);
template <int BYTES>
void copy_async(float* dst, const float* src, bool valid);
void copy_wait_all();
void copy_commit();
template <int PENDING>
void copy_wait();
void assume(bool c);
void named_barrier(int id, int threads);
#endif

__device__ __forceinline__ float sigmoid(float z) { return 1.0f / (1.0f + expf(-z)); }

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(kFullMask, v, off);
  return v;
}

// Sum over aligned groups of G lanes.
template <int G>
__device__ __forceinline__ float group_sum(float v) {
#pragma unroll
  for (int off = G / 2; off > 0; off >>= 1) v += __shfl_xor_sync(kFullMask, v, off);
  return v;
}

// f(r, q) for every row r < ROWS and vector q < PER_ROW of a ROWS x PER_ROW array, spread over the
// BLOCK threads (tid in [0, BLOCK): the block's, or a warp's lanes) with a compile-time trip count,
// fully unrolled. When PER_ROW divides BLOCK a thread keeps one q and steps r by BLOCK / PER_ROW,
// so the index arithmetic is a few adds per element.
template <int ROWS, int PER_ROW, int BLOCK, class F>
__device__ __forceinline__ void block_for(const F& f, int tid = static_cast<int>(threadIdx.x)) {
  constexpr int kTotal = ROWS * PER_ROW;
  if constexpr (BLOCK % PER_ROW == 0) {
    constexpr int kStep = BLOCK / PER_ROW;
    const int q = tid % PER_ROW, r0 = tid / PER_ROW;
    assume(r0 >= 0 && r0 < kStep);
#pragma unroll
    for (int k = 0; k < cdiv(ROWS, kStep); ++k) {
      if (ROWS % kStep == 0 || r0 + k * kStep < ROWS) f(r0 + k * kStep, q);
    }
  } else {
#pragma unroll
    for (int k = 0; k < cdiv(kTotal, BLOCK); ++k) {
      const int i = tid + k * BLOCK;
      if (kTotal % BLOCK == 0 || i < kTotal) f(i / PER_ROW, i % PER_ROW);
    }
  }
}

// Block-cooperative copy of R rows of L floats (source stride L) into rows of stride DS.
// ASYNC: cp.async, so every copy of the block is in flight at once (the caller waits with
// copy_wait_all); otherwise each load goes through registers, one round trip per call.
template <int R, int L, int DS, int BLOCK, bool ASYNC>
__device__ __forceinline__ void copy_rows(const float* __restrict__ src, float* dst) {
  constexpr int V = vec_width(L);
  constexpr int kPerRow = L / V;
  if constexpr (ASYNC) {
    block_for<R, kPerRow, BLOCK>([&](int r, int q) { copy_async<4 * V>(dst + r * DS + q * V, src + r * L + q * V, true); });
  } else {
#pragma unroll 4
    for (int f = threadIdx.x; f < R * kPerRow; f += BLOCK) {
      const int r = f / kPerRow;
      const int c = (f - r * kPerRow) * V;
      float v[V];
      loadv<V, false>(src + r * L + c, v);
      storev<V>(dst + r * DS + c, v);
    }
  }
}

}  // namespace tune_kernels

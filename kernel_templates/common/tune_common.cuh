#pragma once
// Device helpers the kernel templates share (contact, scene_graph): integer arithmetic for tile
// and stride sizes, vector loads and stores, the inline PTX (cp.async, TF32 MMA, named barriers)
// and warp reductions. Self-contained (no system headers): NVRTC compiles it as a header of every
// template whose problem lists kernel_templates/common in "include_dirs"; nvcc finds it through
// tune::kernels' include directories. The one header it includes is cuda_bf16.h (the bfloat16 type
// of templates instantiated with T = __nv_bfloat16), where the compiler finds it (nvcc; NVRTC given
// the toolkit's include directory); otherwise the few pieces of it the templates use are defined
// here, with the same names and results. A host build (the CPU emulation) defines them itself.
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#if __has_include(<cuda_bf16.h>)
#include <cuda_bf16.h>
#else
__device__ __forceinline__ unsigned short tune_bf16_bits(float f) {  // round to nearest even
  const unsigned u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<unsigned short>((u >> 16) | 0x40u);  // quiet NaN
  return static_cast<unsigned short>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
struct __nv_bfloat16 {
  unsigned short __x;
  __nv_bfloat16() = default;
  __device__ explicit __nv_bfloat16(float f) : __x(tune_bf16_bits(f)) {}
};
__device__ __forceinline__ float __bfloat162float(__nv_bfloat16 h) {
  return __uint_as_float(static_cast<unsigned>(h.__x) << 16);
}
__device__ __forceinline__ __nv_bfloat16 __float2bfloat16_rn(float f) { return __nv_bfloat16(f); }
__device__ __forceinline__ unsigned short __bfloat16_as_ushort(__nv_bfloat16 h) { return h.__x; }
__device__ __forceinline__ __nv_bfloat16 __ldg(const __nv_bfloat16* p) {
  __nv_bfloat16 h;
  h.__x = __ldg(reinterpret_cast<const unsigned short*>(p));
  return h;
}
#endif
#endif

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

// The same for rows of elements of type E (float or __nv_bfloat16): elements per vector access
// (a 16-byte vector where the row allows, 8 bytes for bfloat16 rows of 4k elements), the
// elements of 16 bytes, x rounded up to them (every shared region starts 16-byte aligned), and
// the row stride: an odd number of 16-byte units for rows of whole units, so lanes reading one
// row each (or bfloat16 pairs of row g, word t: MMA fragments) hit distinct banks.
template <class E>
__host__ __device__ constexpr int vec_width_of(int x) {
  return sizeof(E) == 4 ? vec_width(x) : (x % 8 == 0 ? 8 : (x % 4 == 0 ? 4 : 1));
}
template <class E>
inline constexpr int kVec16 = static_cast<int>(16 / sizeof(E));
template <class E>
__host__ __device__ constexpr int round_vec(int x) {
  return cdiv(x, kVec16<E>) * kVec16<E>;
}
template <class E>
__host__ __device__ constexpr int row_stride_of(int x) {
  return sizeof(E) == 4 ? row_stride(x) : (x % 16 == 0 ? x + 8 : x);
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

// bfloat16 rows: loaded as float (exact), stored rounded to nearest even; arithmetic stays float.
// A word holds two bfloat16, the lower index in the low half (as the MMA fragments take them).
__device__ __forceinline__ float bf16_lo(unsigned w) { return __uint_as_float(w << 16); }
__device__ __forceinline__ float bf16_hi(unsigned w) { return __uint_as_float(w & 0xffff0000u); }
__device__ __forceinline__ float to_f32(float x) { return x; }
__device__ __forceinline__ float to_f32(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ void store1(float* p, float v) { *p = v; }
__device__ __forceinline__ void store1(__nv_bfloat16* p, float v) { *p = __float2bfloat16_rn(v); }
__device__ __forceinline__ void assign(float& x, float v) { x = v; }
__device__ __forceinline__ void assign(__nv_bfloat16& x, float v) { x = __float2bfloat16_rn(v); }
__device__ __forceinline__ void scale_by(float& x, float s) { x *= s; }
__device__ __forceinline__ void scale_by(__nv_bfloat16& x, float s) { x = __float2bfloat16_rn(__bfloat162float(x) * s); }

template <bool SHARED>
__device__ __forceinline__ float load1(const __nv_bfloat16* p) {
  if constexpr (SHARED) {
    return __bfloat162float(*p);
  } else {
    return __bfloat162float(__ldg(p));
  }
}

// Two consecutive bfloat16 as one word; p aligned to 4 bytes.
template <bool SHARED>
__device__ __forceinline__ unsigned load_word(const __nv_bfloat16* p) {
  if constexpr (SHARED) {
    return *reinterpret_cast<const unsigned*>(p);
  } else {
    return __ldg(reinterpret_cast<const unsigned*>(p));
  }
}

// V (1, 2, 4 or 8) consecutive bfloat16 as floats; p aligned to 2V bytes (8: one 16-byte load).
template <int V, bool SHARED>
__device__ __forceinline__ void loadv(const __nv_bfloat16* p, float (&v)[V]) {
  if constexpr (V == 8 || V == 4) {
    unsigned w[V / 2];
    if constexpr (V == 8) {
      uint4 t;
      if constexpr (SHARED) {
        t = *reinterpret_cast<const uint4*>(p);
      } else {
        t = __ldg(reinterpret_cast<const uint4*>(p));
      }
      w[0] = t.x;
      w[1] = t.y;
      w[2] = t.z;
      w[3] = t.w;
    } else {
      uint2 t;
      if constexpr (SHARED) {
        t = *reinterpret_cast<const uint2*>(p);
      } else {
        t = __ldg(reinterpret_cast<const uint2*>(p));
      }
      w[0] = t.x;
      w[1] = t.y;
    }
#pragma unroll
    for (int q = 0; q < V / 2; ++q) {
      v[2 * q] = bf16_lo(w[q]);
      v[2 * q + 1] = bf16_hi(w[q]);
    }
  } else if constexpr (V == 2) {
    const unsigned w = load_word<SHARED>(p);
    v[0] = bf16_lo(w);
    v[1] = bf16_hi(w);
  } else {
#pragma unroll
    for (int q = 0; q < V; ++q) v[q] = load1<SHARED>(p + q);
  }
}

template <int V>
__device__ __forceinline__ void storev(__nv_bfloat16* p, const float (&v)[V]) {
  if constexpr (V == 8 || V == 4) {
    unsigned w[V / 2];
#pragma unroll
    for (int q = 0; q < V / 2; ++q) {
      const unsigned lo = __bfloat16_as_ushort(__float2bfloat16_rn(v[2 * q]));
      const unsigned hi = __bfloat16_as_ushort(__float2bfloat16_rn(v[2 * q + 1]));
      w[q] = lo | (hi << 16);
    }
    if constexpr (V == 8) {
      *reinterpret_cast<uint4*>(p) = make_uint4(w[0], w[1], w[2], w[3]);
    } else {
      *reinterpret_cast<uint2*>(p) = make_uint2(w[0], w[1]);
    }
  } else {
#pragma unroll
    for (int q = 0; q < V; ++q) store1(p + q, v[q]);
  }
}

// Four consecutive elements as a float4, and back (p aligned to 4 elements).
__device__ __forceinline__ float4 load4(const float* p) { return *reinterpret_cast<const float4*>(p); }
__device__ __forceinline__ float4 load4(const __nv_bfloat16* p) {
  float v[4];
  loadv<4, true>(p, v);
  return make_float4(v[0], v[1], v[2], v[3]);
}
__device__ __forceinline__ void store4(float* p, float4 v) { *reinterpret_cast<float4*>(p) = v; }
__device__ __forceinline__ void store4(__nv_bfloat16* p, float4 v) {
  const float a[4] = {v.x, v.y, v.z, v.w};
  storev<4>(p, a);
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
// d += A(16x16, row) * B(16x8, col) in bfloat16, f32 accumulate (sm_80+). PTX ISA, "Matrix
// Fragments for mma.m16n8k16 with floating point type": lane (g = lane/4, t = lane%4) holds A in
// four .b32 registers of two bfloat16 each (lower column in the low half): a[0] = A[g][2t..2t+1],
// a[1] = A[g+8][2t..2t+1], a[2] = A[g][2t+8..2t+9], a[3] = A[g+8][2t+8..2t+9]; B in two:
// b0 = B[2t..2t+1][g], b1 = B[2t+8..2t+9][g]; d = {D[g][2t], D[g][2t+1], D[g+8][2t], D[g+8][2t+1]}
// (the layout of m16n8k8's D, so bias and epilogue code serve both).
__device__ __forceinline__ void mma_bf16(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
// Two floats rounded to bfloat16 (nearest even) in one word, lo in the low half.
__device__ __forceinline__ unsigned pack_bf16x2(float lo, float hi) {
  unsigned r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
// Asynchronous global -> shared copy of BYTES (4, 8 or 16) bytes of elements E (sm_80+), or zeros
// when !valid (src-size 0: nothing is read). Every copy a thread issues is in flight until copy_wait_all().
template <int BYTES, class E>
__device__ __forceinline__ void copy_async(E* dst, const E* src, bool valid) {
  static_assert(BYTES == 4 || BYTES == 8 || BYTES == 16, "cp.async copies 4, 8 or 16 bytes");
  const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  const int n = valid ? BYTES : 0;
  if constexpr (BYTES == 16) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(d), "l"(src), "r"(n) : "memory");
  } else if constexpr (BYTES == 8) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;" ::"r"(d), "l"(src), "r"(n) : "memory");
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
void mma_bf16(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1);
unsigned pack_bf16x2(float lo, float hi);
template <int BYTES, class E>
void copy_async(E* dst, const E* src, bool valid);
void copy_wait_all();
void copy_commit();
template <int PENDING>
void copy_wait();
void assume(bool c);
void named_barrier(int id, int threads);
#endif

// A copy of BYTES bytes of elements E into shared memory: cp.async where PTX has one (4, 8 or 16
// bytes), else (a single bfloat16) a plain load and store, visible after the barrier that follows
// the caller's wait like the asynchronous ones.
template <int BYTES, class E>
__device__ __forceinline__ void copy_elems(E* dst, const E* src, bool valid) {
  if constexpr (BYTES >= 4) {
    copy_async<BYTES>(dst, src, valid);
  } else {
    *dst = valid ? src[0] : E{};  // zero without a float conversion (PyTorch's nvcc flags disable them)
  }
}

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

// Block-cooperative copy of R rows of L elements E (source stride L) into rows of stride DS.
// ASYNC: cp.async, so every copy of the block is in flight at once (the caller waits with
// copy_wait_all); otherwise each load goes through registers, one round trip per call.
template <int R, int L, int DS, int BLOCK, bool ASYNC, class E>
__device__ __forceinline__ void copy_rows(const E* __restrict__ src, E* dst) {
  constexpr int V = vec_width_of<E>(L);
  constexpr int kPerRow = L / V;
  if constexpr (ASYNC) {
    block_for<R, kPerRow, BLOCK>(
        [&](int r, int q) { copy_elems<static_cast<int>(sizeof(E)) * V>(dst + r * DS + q * V, src + r * L + q * V, true); });
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

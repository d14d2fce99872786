#pragma once
// Problem `contact` (PROBLEMS.md, models.py ContactMapHead):
//   x = LayerNorm_C(pair_repr[b,i,j,:]);  s = (x[b,i,j,:] + x[b,j,i,:]) / 2
//   out[b,i,j] = sigmoid(W4 relu(W2 relu(W0 s + b0) + b2) + b4)
// Self-contained on purpose: NVRTC compiles this file alone (it has no system headers), and
// nvcc compiles it ahead of time when a .cu file includes it.
//
// Template parameters (enum values are indices into configs/contact.json's lists):
//   B, N, C, H  shape; C and H are compile-time so every loop over them unrolls.
//   STRATEGY    0 thread: one thread computes PAIRS pairs (weights read as broadcasts);
//               1 warp: one warp per pair, lanes split C for the LayerNorm and H for the MLP,
//                 each lane keeping its rows of W0 and W2 in registers;
//               2 mma: tensor cores, a warp runs the MLP of 16 pairs per mma.sync m16n8k8 tile
//                 in 3xTF32 (hi/lo split of both operands: FP32-level error). Needs the tile
//                 mapping, STAGE_T and C % 8 == 0; without SMEM_W (weights read through the
//                 read-only cache: no per-block copy), H % 8 == 0.
//   MAPPING     0 linear: consecutive pairs of the row-major (b,i,j) order, BLOCK*PAIRS pairs
//                 (thread) or BLOCK/32*PAIRS pairs (warp) per block;
//               1 tile: a block owns a TILE_I x TILE_J tile of (i,j) of one b;
//               2 warp_tile (mma, SYM, ASYNC): a warp owns PAIRS consecutive tiles; it stages,
//                 normalises and computes them alone, with no block barrier (one after the weight
//                 copy when SMEM_W), each tile's copies their own cp.async group, so the warp works
//                 on its first tile while the next are still landing.
//   PERSIST     warp_tile only: a grid of as many blocks as stay resident on the device; a warp
//               takes every (grid warps)-th tile, PAIRS of them in flight in a ring of buffers
//               (the next copy is issued as soon as a buffer is free).
//   STAGE_T     tile only. 1: the block loads the tile and its transposed tile into shared memory
//               (coalesced, float4 when C % 4 == 0), LayerNorms every staged row once and stores
//               s there; 0: each thread or warp reads its own two rows from global memory.
//   SMEM_W      1: LayerNorm and MLP weights copied into shared memory first; 0: read from
//               global memory through the read-only cache.
//   PAIRS       pairs a thread (thread) or a warp (warp) computes together, or 16-pair tiles a
//               warp computes together (mma): more independent work per weight read; warp_tile:
//               the tiles a warp owns, in sequence (PERSIST: the tiles in flight).
//   SYM         tile only, square tiles: s is symmetric, so only tiles with ti <= tj run; an
//               off-diagonal tile writes out[b,i,j] and out[b,j,i] from one computation.
//   ASYNC       1: the weight and tile copies into shared memory are cp.async (sm_80+), all of a
//               block's in flight at once, one wait; 0: loads through registers, copy by copy.
//   NSPLIT      mma only: warps that share a 16-pair tile, each taking 1/NSPLIT of the hidden units
//               of both layers (relu(D1) and the partial logits meet in shared memory).
//   PREC        mma only: 0 3xTF32; 1 plain TF32 (one MMA per product, operands rounded to
//               TF32): a third of the tensor-core work, parity decides per shape.
//   LNROW       mma, SMEM_W, ASYNC, NSPLIT 1 only. 0: groups of lanes normalise a pair's two rows
//               and store s (with gamma, beta); 1: every staged row is normalised on its own by
//               one thread (a few when the block has threads to spare), u = (x - mean) * rstd, no
//               shuffles; gamma and beta are folded into the block's copy of layer 1
//               (W0' = W0 diag(gamma) / 2, b0' = b0 + W0 beta), and the MMA's A operand is
//               u(i,j) + u(j,i), read from both rows.
// The dynamic shared memory the kernel expects is SmemLayout<...>::kBytes; configs/contact.json
// computes the same number as `smem_bytes`. Every buffer must be 16-byte aligned (rows and weights
// are read as float4), as separate device allocations are.

// Phase marks for timeline experiments: TUNE_CONTACT_MARK(k) at the end of phase k (0 start,
// 1 loads landed, 2 LayerNorm done, 3 MLP done); no code unless the includer defines it.
#ifndef TUNE_CONTACT_MARK
#define TUNE_CONTACT_MARK(phase)
#endif

namespace tune_kernels {
namespace contact {

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

// Weights in shared memory (SMEM_W): row-major W0 and W2 with padded rows; every region
// starts 16-byte aligned.
template <int C, int H>
struct WeightLayout {
  static constexpr int kW0Stride = row_stride(C);
  static constexpr int kW2Stride = row_stride(H);
  static constexpr int kGamma = 0;
  static constexpr int kBeta = kGamma + round4(C);
  static constexpr int kW0 = kBeta + round4(C);
  static constexpr int kB0 = kW0 + round4(H * kW0Stride);
  static constexpr int kW2 = kB0 + round4(H);
  static constexpr int kB2 = kW2 + round4(H * kW2Stride);
  static constexpr int kW4 = kB2 + round4(H);
  static constexpr int kB4 = kW4 + round4(H);
  static constexpr int kFloats = kB4 + 4;
};

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

// The whole dynamic shared memory: [weights][tile A: rows (ii,jj)][tile T: rows (jj,ii)][per-warp scratch];
// warp_tile: [weights][per warp, PAIRS x (tile A, tile T)].
template <int C, int H, int STRATEGY, int MAPPING, int BLOCK, int TILE_I, int TILE_J, int STAGE_T, int SMEM_W,
          int PAIRS>
struct SmemLayout {
  static constexpr bool kStaged = (MAPPING == 1 || MAPPING == 2) && STAGE_T != 0;
  static constexpr int kRowStride = row_stride(C);
  static constexpr int kWeights = 0;
  static constexpr int kTileA =
      SMEM_W ? (STRATEGY == 2 ? MmaWeightLayout<C, H>::kFloats : WeightLayout<C, H>::kFloats) : 0;
  // One staged tile and its transposed tile; the warp_tile mapping gives each warp PAIRS of them.
  static constexpr int kTileFloats = kStaged ? round4(2 * TILE_I * TILE_J * kRowStride) : 0;
  static constexpr int kScratch = kTileA + (MAPPING == 2 ? (BLOCK / 32) * PAIRS : 1) * kTileFloats;
  // Warp strategy, per warp and pair: s (only when not staged, s then lives in tile A) and h1.
  static constexpr int kScratchS = kStaged ? 0 : round4(C);
  static constexpr int kScratchPair = kScratchS + round4(H);
  static constexpr int kFloats = kScratch + (STRATEGY == 1 ? (BLOCK / 32) * PAIRS * kScratchPair : 0);
  static constexpr int kBytes = 4 * kFloats;
};

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

// The inline PTX this file uses, in one place; declared only when the file is not compiled for a
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

__device__ __forceinline__ long long row_offset(int N, int C, int b, int i, int j) {
  return (static_cast<long long>(b * N + i) * N + j) * C;
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

template <int C, int H, int BLOCK, bool ASYNC>
__device__ __forceinline__ void copy_weights(const float* __restrict__ ln_w, const float* __restrict__ ln_b,
                                             const float* __restrict__ w0, const float* __restrict__ b0,
                                             const float* __restrict__ w2, const float* __restrict__ b2,
                                             const float* __restrict__ w4, const float* __restrict__ b4, float* sw) {
  using L = WeightLayout<C, H>;
  copy_rows<H, C, L::kW0Stride, BLOCK, ASYNC>(w0, sw + L::kW0);
  copy_rows<H, H, L::kW2Stride, BLOCK, ASYNC>(w2, sw + L::kW2);
  copy_rows<1, C, C, BLOCK, ASYNC>(ln_w, sw + L::kGamma);
  copy_rows<1, C, C, BLOCK, ASYNC>(ln_b, sw + L::kBeta);
  copy_rows<1, H, H, BLOCK, ASYNC>(b0, sw + L::kB0);
  copy_rows<1, H, H, BLOCK, ASYNC>(b2, sw + L::kB2);
  copy_rows<1, H, H, BLOCK, ASYNC>(w4, sw + L::kW4);
  copy_rows<1, 1, 1, BLOCK, ASYNC>(b4, sw + L::kB4);
}

// The tile of (i,j) a block owns (tile mapping).
struct TileOrigin {
  int b, i0, j0;
  bool mirror;  // SYM off-diagonal tile: also write out[b,j,i]
};

// The tile of index bid: the block's (tile mapping) or the warp's (warp_tile mapping).
template <int N, int TILE_I, int TILE_J, int SYM>
__device__ __forceinline__ TileOrigin tile_origin(int bid = static_cast<int>(blockIdx.x)) {
  constexpr int kTilesI = cdiv(N, TILE_I), kTilesJ = cdiv(N, TILE_J);
  if constexpr (SYM) {
    // Upper triangle ti <= tj, row-major; counted from its end, row r (from the bottom) holds
    // r + 1 tiles, so u = r(r+1)/2 + q with 0 <= q <= r.
    constexpr int T = kTilesI;
    constexpr int M = T * (T + 1) / 2;
    const int b = bid / M;
    const int u = M - 1 - (bid - b * M);
    // sqrtf gives r to within one or two; the integer steps make it exact.
    int r = static_cast<int>((sqrtf(8.0f * static_cast<float>(u) + 1.0f) - 1.0f) * 0.5f);
    while (r > 0 && static_cast<long long>(r) * (r + 1) / 2 > u) --r;
    while (static_cast<long long>(r + 1) * (r + 2) / 2 <= u) ++r;
    const int ti = T - 1 - r;
    const int tj = T - 1 - (u - r * (r + 1) / 2);
    return {b, ti * TILE_I, tj * TILE_J, ti != tj};
  } else {
    const int b = bid / (kTilesI * kTilesJ);
    const int t = bid - b * (kTilesI * kTilesJ);
    const int ti = t / kTilesJ;
    return {b, ti * TILE_I, (t - ti * kTilesJ) * TILE_J, false};
  }
}

// (gi, gj) of staged row `row`: tile A rows (ii,jj) first, then tile T rows (jj,ii).
template <int TILE_I, int TILE_J>
__device__ __forceinline__ void staged_row_source(int row, int i0, int j0, int& gi, int& gj) {
  constexpr int kRows = TILE_I * TILE_J;
  if (row < kRows) {
    const int ii = row / TILE_J;
    gi = i0 + ii;
    gj = j0 + (row - ii * TILE_J);
  } else {
    const int r = row - kRows;
    const int jj = r / TILE_I;
    gi = j0 + jj;
    gj = i0 + (r - jj * TILE_I);
  }
}

// Loads tile A (rows x[b, i0+ii, j0+jj, :] at row ii*TILE_J+jj) and tile T (rows
// x[b, j0+jj, i0+ii, :] at row TILE_I*TILE_J + jj*TILE_I+ii) into consecutive shared rows of
// stride row_stride(C). Consecutive threads read consecutive vectors of one contiguous run;
// rows outside the N x N range are zero (their results are never stored).
// skip_t (ASYNC only): tile A alone; a diagonal tile of a square SYM tiling is its own transpose,
// so its tile T rows are tile A rows (row (jj,ii) of T is row jj*TILE_J+ii of A).
template <int N, int C, int TILE_I, int TILE_J, int BLOCK, bool ASYNC>
__device__ __forceinline__ void stage_tiles(const float* __restrict__ x, int b, int i0, int j0, float* tiles,
                                            int tid = static_cast<int>(threadIdx.x), bool skip_t = false) {
  constexpr int V = vec_width(C), RS = row_stride(C), kPerRow = C / V;
  constexpr int kRows = TILE_I * TILE_J;
  constexpr int kElems = 2 * kRows * kPerRow;
  constexpr int kIters = cdiv(kElems, BLOCK);
  if constexpr (ASYNC) {
    block_for<2 * kRows, kPerRow, BLOCK>([&](int row, int q) {
      if (skip_t && row >= kRows) return;
      const int c = q * V;
      int gi, gj;
      staged_row_source<TILE_I, TILE_J>(row, i0, j0, gi, gj);
      const bool inside = (N % TILE_I == 0 && N % TILE_J == 0) || (gi < N && gj < N);
      copy_async<4 * V>(tiles + row * RS + c, x + (inside ? row_offset(N, C, b, gi, gj) + c : 0), inside);
    }, tid);
    return;
  }
  constexpr int kBatch = kIters < 8 ? kIters : 8;  // loads in flight per thread before stores
#pragma unroll 1
  for (int k0 = 0; k0 < kIters; k0 += kBatch) {
    float v[kBatch][V];
    int dst[kBatch];
#pragma unroll
    for (int k = 0; k < kBatch; ++k) {
      const int f = tid + (k0 + k) * BLOCK;
      dst[k] = -1;
#pragma unroll
      for (int q = 0; q < V; ++q) v[k][q] = 0.0f;
      if (k0 + k < kIters && f < kElems) {
        const int row = f / kPerRow;
        const int c = (f - row * kPerRow) * V;
        int gi, gj;
        staged_row_source<TILE_I, TILE_J>(row, i0, j0, gi, gj);
        if (gi < N && gj < N) loadv<V, false>(x + row_offset(N, C, b, gi, gj) + c, v[k]);
        dst[k] = row * RS + c;
      }
    }
#pragma unroll
    for (int k = 0; k < kBatch; ++k)
      if (dst[k] >= 0) storev<V>(tiles + dst[k], v[k]);
  }
}

// One warp normalises two rows held as lane values c = lane + 32k (zero where c >= C).
// Both rows run the same code, so LN(row) does not depend on whether it is the (i,j) or the
// (j,i) operand: s and the output stay exactly symmetric.
template <int C>
__device__ __forceinline__ void warp_layernorm2(float (&a)[cdiv(C, 32)], float (&t)[cdiv(C, 32)],
                                                const float (&g)[cdiv(C, 32)], const float (&be)[cdiv(C, 32)]) {
  constexpr int CR = cdiv(C, 32);
  const int lane = threadIdx.x & 31;
  float sa = 0.0f, st = 0.0f;
#pragma unroll
  for (int k = 0; k < CR; ++k) {
    sa += a[k];
    st += t[k];
  }
  sa = warp_sum(sa);
  st = warp_sum(st);
  const float ma = sa / static_cast<float>(C), mt = st / static_cast<float>(C);
  float da = 0.0f, dt = 0.0f;
#pragma unroll
  for (int k = 0; k < CR; ++k) {
    if (lane + 32 * k < C) {
      const float ua = a[k] - ma, ut = t[k] - mt;
      da = fmaf(ua, ua, da);
      dt = fmaf(ut, ut, dt);
    }
  }
  da = warp_sum(da);
  dt = warp_sum(dt);
  const float ra = rsqrtf(da / static_cast<float>(C) + kLnEps);
  const float rt = rsqrtf(dt / static_cast<float>(C) + kLnEps);
#pragma unroll
  for (int k = 0; k < CR; ++k) {
    a[k] = fmaf((a[k] - ma) * ra, g[k], be[k]);
    t[k] = fmaf((t[k] - mt) * rt, g[k], be[k]);
  }
}

template <int C, bool SHARED>
__device__ __forceinline__ void load_lane_vec(const float* v, float (&out)[cdiv(C, 32)]) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int k = 0; k < cdiv(C, 32); ++k) {
    const int c = lane + 32 * k;
    out[k] = c < C ? load1<SHARED>(v + c) : 0.0f;
  }
}

// Lanes per pair in the staged LayerNorm: groups of G lanes read float4 chunks of a row (G = 8
// makes a quarter-warp read 128 contiguous bytes), so a pair costs a few segmented shuffles
// instead of a whole warp's. 0 when C % 4 != 0: a whole warp per pair then.
__host__ __device__ constexpr int ln_group(int C) {
  if (C % 4 != 0) return 0;
  int g = 8;
  while (g > C / 4) g /= 2;
  return g;
}

// Sum over aligned groups of G lanes.
template <int G>
__device__ __forceinline__ float group_sum(float v) {
#pragma unroll
  for (int off = G / 2; off > 0; off >>= 1) v += __shfl_xor_sync(kFullMask, v, off);
  return v;
}

// LNROW: rows[r] = (rows[r] - mean) * rstd for ROWS staged rows (stride row_stride(C)) by NTHREADS
// threads (tid in [0, NTHREADS)): G = 1, 2 or 4 adjacent threads per row, as many as the threads
// allow, each summing every G-th float4 of the row; two passes over shared memory for the mean
// and the variance (as the reference computes it), a third to store. ROWS % 32 == 0 keeps every
// warp's lanes together in the shuffles.
// rows_used (<= ROWS, a multiple of 32 / G): the rows to normalise (ROWS / 2 for a diagonal tile
// staged with skip_t).
template <int C, int ROWS, int NTHREADS>
__device__ __forceinline__ void normalize_rows(float* rows, int tid, int rows_used = ROWS) {
  constexpr int RS = row_stride(C), kChunks = C / 4;
  constexpr int G = NTHREADS >= 4 * ROWS ? 4 : (NTHREADS >= 2 * ROWS ? 2 : 1);
  constexpr int kStep = NTHREADS / G;
  static_assert(C % 4 == 0 && ROWS % 32 == 0 && NTHREADS % 32 == 0, "normalize_rows: float4 rows, whole warps");
  const int sub = tid % G;
#pragma unroll 1
  for (int r = tid / G; r < rows_used; r += kStep) {
    float* row = rows + r * RS;
    float s[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
    for (int ch = sub; ch < kChunks; ch += G) {
      const float4 v = *reinterpret_cast<const float4*>(row + 4 * ch);
      s[0] += v.x;
      s[1] += v.y;
      s[2] += v.z;
      s[3] += v.w;
    }
    const float mean = group_sum<G>((s[0] + s[1]) + (s[2] + s[3])) / static_cast<float>(C);
    float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
    for (int ch = sub; ch < kChunks; ch += G) {
      const float4 v = *reinterpret_cast<const float4*>(row + 4 * ch);
      d[0] = fmaf(v.x - mean, v.x - mean, d[0]);
      d[1] = fmaf(v.y - mean, v.y - mean, d[1]);
      d[2] = fmaf(v.z - mean, v.z - mean, d[2]);
      d[3] = fmaf(v.w - mean, v.w - mean, d[3]);
    }
    const float var = group_sum<G>((d[0] + d[1]) + (d[2] + d[3])) / static_cast<float>(C);
    const float rstd = rsqrtf(var + kLnEps);
#pragma unroll
    for (int ch = sub; ch < kChunks; ch += G) {
      float4 v = *reinterpret_cast<const float4*>(row + 4 * ch);
      v.x = (v.x - mean) * rstd;
      v.y = (v.y - mean) * rstd;
      v.z = (v.z - mean) * rstd;
      v.w = (v.w - mean) * rstd;
      *reinterpret_cast<float4*>(row + 4 * ch) = v;
    }
  }
}

// Staged tiles: each pair (ii,jj) of the tile normalises row A(ii,jj) and row T(jj,ii) once and
// overwrites row A(ii,jj) with s. Both rows run the same code (same reduction order), so LN(row)
// does not depend on whether it is the (i,j) or the (j,i) operand: s stays exactly symmetric.
// The BLOCK / 32 warps share the rows (warp in [0, BLOCK / 32); BLOCK = 32: one warp does all).
// t_row0: the first tile T row (kRows; 0 for a diagonal tile staged with skip_t).
template <int C, int TILE_I, int TILE_J, int BLOCK, bool SMEM_W>
__device__ __forceinline__ void layernorm_tile(float* tiles, const float* gamma, const float* beta,
                                               int warp = static_cast<int>(threadIdx.x >> 5),
                                               int t_row0 = TILE_I * TILE_J) {
  constexpr int RS = row_stride(C), kRows = TILE_I * TILE_J, G = ln_group(C);
  const int lane = threadIdx.x & 31;
  if constexpr (G == 0) {
    constexpr int CR = cdiv(C, 32);
    float g[CR], be[CR];
    load_lane_vec<C, SMEM_W>(gamma, g);
    load_lane_vec<C, SMEM_W>(beta, be);
#pragma unroll 1
    for (int q = warp; q < kRows; q += BLOCK / 32) {
      const int ii = q / TILE_J, jj = q - ii * TILE_J;
      float* ra = tiles + q * RS;
      const float* rt = tiles + (t_row0 + jj * TILE_I + ii) * RS;
      float a[CR], t[CR];
#pragma unroll
      for (int k = 0; k < CR; ++k) {
        const int c = lane + 32 * k;
        a[k] = c < C ? ra[c] : 0.0f;
        t[k] = c < C ? rt[c] : 0.0f;
      }
      warp_layernorm2<C>(a, t, g, be);
#pragma unroll
      for (int k = 0; k < CR; ++k) {
        const int c = lane + 32 * k;
        if (c < C) ra[c] = (a[k] + t[k]) * 0.5f;
      }
    }
  } else {
    constexpr int kChunks = C / 4;              // float4 chunks per row
    constexpr int kPerLane = cdiv(kChunks, G);  // chunks of one row per lane
    constexpr int kPairsPerWarp = 32 / G;
    const int k0 = lane % G;
    float g[kPerLane][4], be[kPerLane][4];
#pragma unroll
    for (int m = 0; m < kPerLane; ++m) {
      const int ch = k0 + m * G;
      if (ch < kChunks) {
        loadv<4, SMEM_W>(gamma + 4 * ch, g[m]);
        loadv<4, SMEM_W>(beta + 4 * ch, be[m]);
      } else {
#pragma unroll
        for (int e = 0; e < 4; ++e) g[m][e] = be[m][e] = 0.0f;
      }
    }
#pragma unroll 1
    for (int base = warp * kPairsPerWarp; base < kRows; base += (BLOCK / 32) * kPairsPerWarp) {
      // Every lane takes part in the shuffles; lanes past the tile work on its last pair and store nothing.
      const int q_raw = base + lane / G;
      const bool owner = q_raw < kRows;
      const int q = owner ? q_raw : kRows - 1;
      const int ii = q / TILE_J, jj = q - ii * TILE_J;
      float* ra = tiles + q * RS;
      const float* rt = tiles + (t_row0 + jj * TILE_I + ii) * RS;
      float a[kPerLane][4], t[kPerLane][4];
      float sa = 0.0f, st = 0.0f;
#pragma unroll
      for (int m = 0; m < kPerLane; ++m) {
        const int ch = k0 + m * G;
        if (ch < kChunks) {
          loadv<4, true>(ra + 4 * ch, a[m]);
          loadv<4, true>(rt + 4 * ch, t[m]);
        } else {
#pragma unroll
          for (int e = 0; e < 4; ++e) a[m][e] = t[m][e] = 0.0f;
        }
        sa += (a[m][0] + a[m][1]) + (a[m][2] + a[m][3]);
        st += (t[m][0] + t[m][1]) + (t[m][2] + t[m][3]);
      }
      sa = group_sum<G>(sa);
      st = group_sum<G>(st);
      const float ma = sa / static_cast<float>(C), mt = st / static_cast<float>(C);
      float da = 0.0f, dt = 0.0f;
#pragma unroll
      for (int m = 0; m < kPerLane; ++m) {
        if (k0 + m * G < kChunks) {
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const float ua = a[m][e] - ma, ut = t[m][e] - mt;
            da = fmaf(ua, ua, da);
            dt = fmaf(ut, ut, dt);
          }
        }
      }
      da = group_sum<G>(da);
      dt = group_sum<G>(dt);
      const float ra_std = rsqrtf(da / static_cast<float>(C) + kLnEps);
      const float rt_std = rsqrtf(dt / static_cast<float>(C) + kLnEps);
#pragma unroll
      for (int m = 0; m < kPerLane; ++m) {
        const int ch = k0 + m * G;
        float s[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const float la = fmaf((a[m][e] - ma) * ra_std, g[m][e], be[m][e]);
          const float lt = fmaf((t[m][e] - mt) * rt_std, g[m][e], be[m][e]);
          s[e] = (la + lt) * 0.5f;
        }
        if (owner && ch < kChunks) storev<4>(ra + 4 * ch, s);
      }
    }
  }
}

// ---- thread strategy -------------------------------------------------------------------------

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

template <int C>
__device__ __forceinline__ void thread_load_row(const float* __restrict__ row, float (&x)[C]) {
  constexpr int V = vec_width(C);
#pragma unroll
  for (int c = 0; c < C; c += V) {
    float v[V];
    loadv<V, false>(row + c, v);
#pragma unroll
    for (int q = 0; q < V; ++q) x[c + q] = v[q];
  }
}

// s = (LN(row_a) + LN(row_t)) / 2 in registers (the seed design's per-thread LayerNorm).
template <int C, bool SMEM_W>
__device__ __forceinline__ void thread_symmetrised_row(const float* __restrict__ row_a, const float* __restrict__ row_t,
                                                       const float* gamma, const float* beta, float (&s)[C]) {
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
template <int C, int H, int P, bool SMEM_W, bool UNROLL_ALL, class LoadS>
__device__ __forceinline__ void thread_mlp(const LoadS& load_s, const float* w0, const float* b0, const float* w2,
                                           const float* b2, const float* w4, const float* b4, float (&o)[P]) {
  constexpr int VC = vec_width(C), VH = vec_width(H);
  constexpr int W0S = SMEM_W ? row_stride(C) : C, W2S = SMEM_W ? row_stride(H) : H;
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

// Where pair p of a thread or warp lives and whether (and where) its result is stored.
struct PairSlot {
  int b, i, j;   // clamped into range, so loads stay in bounds even for unused slots
  int tile_row;  // row of tile A (staged)
  bool store;    // inside the problem
};

template <int B, int N>
__device__ __forceinline__ PairSlot linear_slot(long long id) {
  constexpr long long kPairs = static_cast<long long>(B) * N * N;
  const bool store = id < kPairs;
  const int c = static_cast<int>(store ? id : kPairs - 1);
  const int b = c / (N * N), rem = c - b * (N * N);
  const int i = rem / N;
  return {b, i, rem - i * N, 0, store};
}

template <int N, int TILE_I, int TILE_J>
__device__ __forceinline__ PairSlot tile_slot(const TileOrigin& t, int q) {
  constexpr int kRows = TILE_I * TILE_J;
  const bool in_tile = q < kRows;
  const int qc = in_tile ? q : kRows - 1;
  const int ii = qc / TILE_J;
  const int i = t.i0 + ii, j = t.j0 + (qc - ii * TILE_J);
  const bool store = in_tile && i < N && j < N;
  return {t.b, i < N ? i : N - 1, j < N ? j : N - 1, qc, store};
}

template <int N>
__device__ __forceinline__ void store_result(float* __restrict__ out, const PairSlot& s, bool mirror, float v) {
  if (s.store) {
    out[(static_cast<long long>(s.b) * N + s.i) * N + s.j] = v;
    if (mirror) out[(static_cast<long long>(s.b) * N + s.j) * N + s.i] = v;
  }
}

template <int B, int N, int C, int H, int MAPPING, int BLOCK, int TILE_I, int TILE_J, bool STAGED, bool SMEM_W, int P,
          int SYM>
__device__ __forceinline__ void thread_pairs(const float* __restrict__ x, const float* gamma, const float* beta,
                                             const float* w0, const float* b0, const float* w2, const float* b2,
                                             const float* w4, const float* b4, float* __restrict__ out,
                                             const TileOrigin& tile, const float* tiles) {
  constexpr int VC = vec_width(C), RS = row_stride(C);
  constexpr int kIters = MAPPING == 0 ? 1 : cdiv(TILE_I * TILE_J, BLOCK * P);
#pragma unroll 1
  for (int it = 0; it < kIters; ++it) {
    // The weight reads are loop-invariant; hoisting all C*H + H*H of them out of this loop would spill.
    const int opaque = opaque_zero(it);
    const float* w0_it = w0 + opaque;
    const float* w2_it = w2 + opaque;
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
      const float* rows[P];
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

// ---- warp strategy ---------------------------------------------------------------------------

// Lane l owns hidden units h = l + 32r (r < HR); its rows of W0 and W2 stay in registers.
template <int C, int H>
struct LaneWeights {
  static constexpr int HR = cdiv(H, 32);
  float w0[HR][C];
  float w2[HR][H];
  float b0[HR], b2[HR], w4[HR];
  float b4;
};

template <int C, int H, bool SMEM_W>
__device__ __forceinline__ void load_lane_weights(LaneWeights<C, H>& lw, const float* w0, const float* b0,
                                                  const float* w2, const float* b2, const float* w4, const float* b4) {
  constexpr int HR = LaneWeights<C, H>::HR;
  constexpr int VC = vec_width(C), VH = vec_width(H);
  constexpr int W0S = SMEM_W ? row_stride(C) : C, W2S = SMEM_W ? row_stride(H) : H;
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int r = 0; r < HR; ++r) {
    const int h = lane + 32 * r;
    const bool ok = h < H;
    const int hc = ok ? h : H - 1;
#pragma unroll
    for (int c = 0; c < C; c += VC) {
      float v[VC];
      loadv<VC, SMEM_W>(w0 + hc * W0S + c, v);
#pragma unroll
      for (int q = 0; q < VC; ++q) lw.w0[r][c + q] = ok ? v[q] : 0.0f;
    }
#pragma unroll
    for (int k = 0; k < H; k += VH) {
      float v[VH];
      loadv<VH, SMEM_W>(w2 + hc * W2S + k, v);
#pragma unroll
      for (int q = 0; q < VH; ++q) lw.w2[r][k + q] = ok ? v[q] : 0.0f;
    }
    lw.b0[r] = ok ? load1<SMEM_W>(b0 + hc) : 0.0f;
    lw.b2[r] = ok ? load1<SMEM_W>(b2 + hc) : 0.0f;
    lw.w4[r] = ok ? load1<SMEM_W>(w4 + hc) : 0.0f;
  }
  lw.b4 = load1<SMEM_W>(b4);
}

// MLP of P pairs by one warp: s rows and h1 buffers in shared memory, read as broadcasts.
// Returns the logits' sigmoid in every lane.
template <int C, int H, int P>
__device__ __forceinline__ void warp_mlp(const LaneWeights<C, H>& lw, const float* const (&srow)[P],
                                         float* const (&hbuf)[P], float (&o)[P]) {
  constexpr int HR = LaneWeights<C, H>::HR;
  constexpr int VC = vec_width(C), VH = vec_width(H);
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int r = 0; r < HR; ++r) {
    float a[P][4];
#pragma unroll
    for (int p = 0; p < P; ++p)
#pragma unroll
      for (int q = 0; q < 4; ++q) a[p][q] = 0.0f;
#pragma unroll
    for (int c = 0; c < C; c += VC) {
      float s[P][VC];
#pragma unroll
      for (int p = 0; p < P; ++p) loadv<VC, true>(srow[p] + c, s[p]);
#pragma unroll
      for (int p = 0; p < P; ++p)
#pragma unroll
        for (int q = 0; q < VC; ++q) a[p][(c + q) & 3] = fmaf(lw.w0[r][c + q], s[p][q], a[p][(c + q) & 3]);
    }
    const int h = lane + 32 * r;
#pragma unroll
    for (int p = 0; p < P; ++p) {
      const float v = fmaxf(lw.b0[r] + ((a[p][0] + a[p][1]) + (a[p][2] + a[p][3])), 0.0f);
      if (h < H) hbuf[p][h] = v;
    }
  }
  __syncwarp();
  float logit[P];
#pragma unroll
  for (int p = 0; p < P; ++p) logit[p] = 0.0f;
#pragma unroll
  for (int r = 0; r < HR; ++r) {
    float a[P][4];
#pragma unroll
    for (int p = 0; p < P; ++p)
#pragma unroll
      for (int q = 0; q < 4; ++q) a[p][q] = 0.0f;
#pragma unroll
    for (int k = 0; k < H; k += VH) {
      float v[P][VH];
#pragma unroll
      for (int p = 0; p < P; ++p) loadv<VH, true>(hbuf[p] + k, v[p]);
#pragma unroll
      for (int p = 0; p < P; ++p)
#pragma unroll
        for (int q = 0; q < VH; ++q) a[p][(k + q) & 3] = fmaf(lw.w2[r][k + q], v[p][q], a[p][(k + q) & 3]);
    }
#pragma unroll
    for (int p = 0; p < P; ++p) {
      const float v = fmaxf(lw.b2[r] + ((a[p][0] + a[p][1]) + (a[p][2] + a[p][3])), 0.0f);
      logit[p] = fmaf(lw.w4[r], v, logit[p]);  // w4 is 0 for lanes past H
    }
  }
#pragma unroll
  for (int p = 0; p < P; ++p) o[p] = sigmoid(warp_sum(logit[p]) + lw.b4);
}

template <int B, int N, int C, int H, int MAPPING, int BLOCK, int TILE_I, int TILE_J, bool STAGED, bool SMEM_W, int P,
          int SYM>
__device__ __forceinline__ void warp_pairs(const float* __restrict__ x, const float* gamma, const float* beta,
                                           const float* w0, const float* b0, const float* w2, const float* b2,
                                           const float* w4, const float* b4, float* __restrict__ out,
                                           const TileOrigin& tile, float* tiles, float* scratch) {
  constexpr int CR = cdiv(C, 32), RS = row_stride(C), NW = BLOCK / 32;
  constexpr int kScratchS = STAGED ? 0 : round4(C);
  constexpr int kScratchPair = kScratchS + round4(H);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  float* my_scratch = scratch + warp * P * kScratchPair;
  float* hbuf[P];
#pragma unroll
  for (int p = 0; p < P; ++p) hbuf[p] = my_scratch + p * kScratchPair + kScratchS;

  LaneWeights<C, H> lw;
  load_lane_weights<C, H, SMEM_W>(lw, w0, b0, w2, b2, w4, b4);
  float g[CR], be[CR];
  if constexpr (!STAGED) {
    load_lane_vec<C, SMEM_W>(gamma, g);
    load_lane_vec<C, SMEM_W>(beta, be);
  }

  constexpr int kGroups = MAPPING == 0 ? 1 : cdiv(TILE_I * TILE_J, P);
  constexpr int kStep = MAPPING == 0 ? 1 : NW;
#pragma unroll 1
  for (int grp = MAPPING == 0 ? 0 : warp; grp < kGroups; grp += kStep) {
    PairSlot slot[P];
#pragma unroll
    for (int p = 0; p < P; ++p) {
      if constexpr (MAPPING == 0) {
        slot[p] = linear_slot<B, N>((static_cast<long long>(blockIdx.x) * NW + warp) * P + p);
      } else {
        slot[p] = tile_slot<N, TILE_I, TILE_J>(tile, grp * P + p);
      }
    }
    const float* srow[P];
    if constexpr (STAGED) {
#pragma unroll
      for (int p = 0; p < P; ++p) srow[p] = tiles + slot[p].tile_row * RS;
    } else {
#pragma unroll
      for (int p = 0; p < P; ++p) {
        const float* ra = x + row_offset(N, C, slot[p].b, slot[p].i, slot[p].j);
        const float* rt = x + row_offset(N, C, slot[p].b, slot[p].j, slot[p].i);
        float a[CR], t[CR];
#pragma unroll
        for (int k = 0; k < CR; ++k) {
          const int c = lane + 32 * k;
          a[k] = c < C ? __ldg(ra + c) : 0.0f;
          t[k] = c < C ? __ldg(rt + c) : 0.0f;
        }
        warp_layernorm2<C>(a, t, g, be);
        float* s = my_scratch + p * kScratchPair;
#pragma unroll
        for (int k = 0; k < CR; ++k) {
          const int c = lane + 32 * k;
          if (c < C) s[c] = (a[k] + t[k]) * 0.5f;
        }
        srow[p] = s;
      }
      __syncwarp();
    }
    float o[P];
    warp_mlp<C, H, P>(lw, srow, hbuf, o);
#pragma unroll
    for (int p = 0; p < P; ++p)
      if (lane == p) store_result<N>(out, slot[p], SYM && tile.mirror, o[p]);
    __syncwarp();  // the scratch rows are rewritten by the next group
  }
}

// ---- mma strategy ----------------------------------------------------------------------------

// x = hi + lo exactly, hi TF32 (truncated: two instructions, where cvt.rna.tf32 takes several on
// sm_90). lo goes to the MMA as it is: the tensor core reads the TF32 part of the register, i.e.
// lo truncated, an error of at most 2^-10 |lo| <= 2^-20 |x|; hi*hi + hi*lo + lo*hi then leaves an
// error near FP32's.
__device__ __forceinline__ void split_tf32(float x, float& hi, float& lo) {
  hi = tf32_trunc(x);
  lo = x - hi;
}

// The precision of the tensor-core products: 0 = 3xTF32 (three MMAs per product, near FP32),
// 1 = TF32 (one MMA, operands rounded to TF32: about 2^-11 relative error per operand).
// PREC 1 leaves lo unset; the products that would read it are not issued.
template <int PREC>
__device__ __forceinline__ void split_operand(float x, float& hi, float& lo) {
  if constexpr (PREC == 0) {
    split_tf32(x, hi, lo);
  } else {
    hi = tf32_round(x);
  }
}

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

// LNROW: folds the LayerNorm's affine into the block's copy of layer 1, W0 <- W0 diag(gamma) / 2
// (the A operand is u(i,j) + u(j,i)) and b0 <- b0 + W0 beta. The weights must be in shared memory
// and visible to the block; two block barriers.
template <int C, int H, int BLOCK>
__device__ __forceinline__ void fold_layernorm(float* sw) {
  using L = MmaWeightLayout<C, H>;
  constexpr int HP = L::HP, kPer = cdiv(HP, BLOCK);
  float bias[kPer];
#pragma unroll
  for (int k = 0; k < kPer; ++k) {
    const int h = static_cast<int>(threadIdx.x) + k * BLOCK;
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    if (h < HP) {
#pragma unroll
      for (int c = 0; c < C; ++c) acc[c % 4] = fmaf(sw[L::kW0 + h * L::kW0Stride + c], sw[L::kBeta + c], acc[c % 4]);
    }
    bias[k] = h < HP ? sw[L::kB0 + h] + ((acc[0] + acc[1]) + (acc[2] + acc[3])) : 0.0f;
  }
  __syncthreads();
#pragma unroll 4
  for (int f = threadIdx.x; f < HP * C; f += BLOCK) {
    const int h = f / C, c = f - h * C;
    sw[L::kW0 + h * L::kW0Stride + c] *= 0.5f * sw[L::kGamma + c];
  }
#pragma unroll
  for (int k = 0; k < kPer; ++k) {
    const int h = static_cast<int>(threadIdx.x) + k * BLOCK;
    if (h < HP) sw[L::kB0 + h] = bias[k];
  }
  __syncthreads();
}

// A[p] * B for P row tiles sharing one B fragment {b0, b1}, 3xTF32, into three accumulators:
// acc[0] += Ahi Bhi, acc[1] += Alo Bhi, acc[2] += Ahi Blo. Three independent chains, each one
// MMA per k-step, instead of one chain three MMAs long; the caller adds them (mma_3xtf32_sum).
// PREC 1 (plain TF32): acc[0] += Ahi Bhi only.
template <int P, int PREC = 0>
__device__ __forceinline__ void mma_3xtf32(float (&acc)[3][P][4], const float (&ahi)[P][4], const float (&alo)[P][4],
                                           float b0, float b1) {
  float bh0, bl0, bh1, bl1;
  split_operand<PREC>(b0, bh0, bl0);
  split_operand<PREC>(b1, bh1, bl1);
#pragma unroll
  for (int p = 0; p < P; ++p) {
    if constexpr (PREC == 0) {
      mma_tf32(acc[1][p], alo[p], bh0, bh1);
      mma_tf32(acc[2][p], ahi[p], bl0, bl1);
    }
    mma_tf32(acc[0][p], ahi[p], bh0, bh1);
  }
}

// acc[0] = bias (the columns 2t, 2t+1 of the lane's fragment), acc[1] = acc[2] = 0.
template <int P>
__device__ __forceinline__ void mma_3xtf32_init(float (&acc)[3][P][4], const float (&bias)[2]) {
#pragma unroll
  for (int p = 0; p < P; ++p) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      acc[0][p][e] = bias[e & 1];
      acc[1][p][e] = acc[2][p][e] = 0.0f;
    }
  }
}

template <int P, int PREC = 0>
__device__ __forceinline__ void mma_3xtf32_sum(float (&d)[P][4], const float (&acc)[3][P][4]) {
#pragma unroll
  for (int p = 0; p < P; ++p)
#pragma unroll
    for (int e = 0; e < 4; ++e) d[p][e] = PREC == 0 ? acc[0][p][e] + (acc[1][p][e] + acc[2][p][e]) : acc[0][p][e];
}

// MLP of the staged tile on tensor cores: warps take P tiles of 16 pairs (rows of tile A, which
// hold s) at a time. Layer 1: D1[16 x HP] = S[16 x C] W0^T. Layer 2: D2 = relu(D1) W2^T, with
// the lane's D1 values used as its A fragment where they stand: k-group ks's logical columns t
// and t+4 are h = 8ks + 2t and 8ks + 2t + 1, so B takes W2 columns (2t, 2t+1) in their place.
// warp in [0, BLOCK / 32): the warps share the 16-pair tiles (BLOCK = 32: one warp does all).
// LNROW: the rows hold u (normalize_rows), and the A operand of pair (ii,jj) is row A(ii,jj) plus
// row T(jj,ii).
template <int N, int C, int H, int BLOCK, int TILE_I, int TILE_J, int P, int SYM, bool SHARED, int PREC,
          int LNROW = 0>
__device__ __forceinline__ void mma_pairs(float* __restrict__ out, const TileOrigin& tile, const float* tiles,
                                          const MmaWeights<C, H, SHARED>& W,
                                          int warp = static_cast<int>(threadIdx.x >> 5),
                                          int t_row0 = TILE_I * TILE_J) {
  using L = MmaWeights<C, H, SHARED>;
  constexpr int HP = MmaWeightLayout<C, H>::HP, NT = HP / 8;
  constexpr int RS = row_stride(C), kRows = TILE_I * TILE_J, kMTiles = cdiv(kRows, 16), NW = BLOCK / 32;
  static_assert(C % 8 == 0 && RS % 8 == 4, "mma fragments need C % 8 == 0");
  const int lane = threadIdx.x & 31;
  const int g = lane >> 2, t = lane & 3;
  float bias0[NT][2], bias2[NT][2], w4v[NT][2];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      bias0[nt][e] = load1<SHARED>(W.b0 + nt * 8 + 2 * t + e);
      bias2[nt][e] = load1<SHARED>(W.b2 + nt * 8 + 2 * t + e);
      w4v[nt][e] = load1<SHARED>(W.w4 + nt * 8 + 2 * t + e);
    }
  const float bias4 = load1<SHARED>(W.b4);
  const float* w0_lane = W.w0 + g * L::kW0Stride + t;      // + 8nt rows, + k0 columns
  const float* w2_lane = W.w2 + g * L::kW2Stride + 2 * t;  // + 8nt rows, + 8ks columns

#pragma unroll 1
  for (int grp = warp; grp * P < kMTiles; grp += NW) {
    const float* row_lo[P];  // rows g and g + 8 of each 16-pair tile
    const float* row_hi[P];
    const float* trow_lo[P];  // LNROW: their tile T rows
    const float* trow_hi[P];
#pragma unroll
    for (int p = 0; p < P; ++p) {
      const int m0 = (grp * P + p) * 16;
      const int q_lo = m0 + g < kRows ? m0 + g : kRows - 1, q_hi = m0 + g + 8 < kRows ? m0 + g + 8 : kRows - 1;
      row_lo[p] = tiles + q_lo * RS + t;
      row_hi[p] = tiles + q_hi * RS + t;
      trow_lo[p] = tiles + (t_row0 + (q_lo % TILE_J) * TILE_I + q_lo / TILE_J) * RS + t;
      trow_hi[p] = tiles + (t_row0 + (q_hi % TILE_J) * TILE_I + q_hi / TILE_J) * RS + t;
    }
    // Element k of the lane's row: s (LNROW 0), or u(i,j) + u(j,i).
    const auto a_at = [&](const float* const (&r)[P], const float* const (&tr)[P], int p, int k) {
      return LNROW ? r[p][k] + tr[p][k] : r[p][k];
    };
    float d1[NT][P][4];
    {
    float acc1[NT][3][P][4];
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) mma_3xtf32_init<P>(acc1[nt], bias0[nt]);
#pragma unroll
    for (int k0 = 0; k0 < C; k0 += 8) {
      float ahi[P][4], alo[P][4];
#pragma unroll
      for (int p = 0; p < P; ++p) {
        split_operand<PREC>(a_at(row_lo, trow_lo, p, k0), ahi[p][0], alo[p][0]);
        split_operand<PREC>(a_at(row_hi, trow_hi, p, k0), ahi[p][1], alo[p][1]);
        split_operand<PREC>(a_at(row_lo, trow_lo, p, k0 + 4), ahi[p][2], alo[p][2]);
        split_operand<PREC>(a_at(row_hi, trow_hi, p, k0 + 4), ahi[p][3], alo[p][3]);
      }
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
        const float* w = w0_lane + nt * 8 * L::kW0Stride + k0;
        mma_3xtf32<P, PREC>(acc1[nt], ahi, alo, load1<SHARED>(w), load1<SHARED>(w + 4));
      }
    }
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) mma_3xtf32_sum<P, PREC>(d1[nt], acc1[nt]);
    }
    float d2[NT][P][4];
    {
    float acc2[NT][3][P][4];
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) mma_3xtf32_init<P>(acc2[nt], bias2[nt]);
#pragma unroll
    for (int ks = 0; ks < NT; ++ks) {
      // A fragment {(g, t), (g+8, t), (g, t+4), (g+8, t+4)} = relu(D1) at h = 8ks + {2t, 2t, 2t+1, 2t+1}.
      float ahi[P][4], alo[P][4];
#pragma unroll
      for (int p = 0; p < P; ++p) {
        split_operand<PREC>(fmaxf(d1[ks][p][0], 0.0f), ahi[p][0], alo[p][0]);
        split_operand<PREC>(fmaxf(d1[ks][p][2], 0.0f), ahi[p][1], alo[p][1]);
        split_operand<PREC>(fmaxf(d1[ks][p][1], 0.0f), ahi[p][2], alo[p][2]);
        split_operand<PREC>(fmaxf(d1[ks][p][3], 0.0f), ahi[p][3], alo[p][3]);
      }
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
        float w2v[2];
        loadv<2, SHARED>(w2_lane + nt * 8 * L::kW2Stride + ks * 8, w2v);
        const float2 w = make_float2(w2v[0], w2v[1]);
        mma_3xtf32<P, PREC>(acc2[nt], ahi, alo, w.x, w.y);
      }
    }
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) mma_3xtf32_sum<P, PREC>(d2[nt], acc2[nt]);
    }
#pragma unroll
    for (int p = 0; p < P; ++p) {
      float logit_lo = 0.0f, logit_hi = 0.0f;  // rows g and g + 8
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
        logit_lo = fmaf(w4v[nt][0], fmaxf(d2[nt][p][0], 0.0f), logit_lo);
        logit_lo = fmaf(w4v[nt][1], fmaxf(d2[nt][p][1], 0.0f), logit_lo);
        logit_hi = fmaf(w4v[nt][0], fmaxf(d2[nt][p][2], 0.0f), logit_hi);
        logit_hi = fmaf(w4v[nt][1], fmaxf(d2[nt][p][3], 0.0f), logit_hi);
      }
      logit_lo = group_sum<4>(logit_lo);
      logit_hi = group_sum<4>(logit_hi);
      const int m0 = (grp * P + p) * 16;
      if (t < 2) {
        const PairSlot slot = tile_slot<N, TILE_I, TILE_J>(tile, m0 + g + 8 * t);
        store_result<N>(out, slot, SYM && tile.mirror, sigmoid((t == 0 ? logit_lo : logit_hi) + bias4));
      }
    }
  }
}

// d[n] = bias[n] + A[16 x K] B_n for NTW n-tiles in 3xTF32, A in the standard fragment layout:
// a_lo and a_hi point at column t of rows g and g + 8 of A; w at column t of row g of the first
// n-tile's weight rows (stride WS): the B fragment of n-tile n, k-step k0 is w[n*8*WS + k0 + {0, 4}].
template <int NTW, int K, int WS, int PREC>
__device__ __forceinline__ void mma_rows_layer(float (&d)[NTW][1][4], const float (&bias)[NTW][2], const float* a_lo,
                                               const float* a_hi, const float* w) {
  float acc[NTW][3][1][4];
#pragma unroll
  for (int n = 0; n < NTW; ++n) mma_3xtf32_init<1>(acc[n], bias[n]);
#pragma unroll
  for (int k0 = 0; k0 < K; k0 += 8) {
    float ahi[1][4], alo[1][4];
    split_operand<PREC>(a_lo[k0], ahi[0][0], alo[0][0]);
    split_operand<PREC>(a_hi[k0], ahi[0][1], alo[0][1]);
    split_operand<PREC>(a_lo[k0 + 4], ahi[0][2], alo[0][2]);
    split_operand<PREC>(a_hi[k0 + 4], ahi[0][3], alo[0][3]);
#pragma unroll
    for (int n = 0; n < NTW; ++n) {
      const float* wn = w + n * 8 * WS + k0;
      mma_3xtf32<1, PREC>(acc[n], ahi, alo, wn[0], wn[4]);
    }
  }
#pragma unroll
  for (int n = 0; n < NTW; ++n) mma_3xtf32_sum<1, PREC>(d[n], acc[n]);
}

// mma_pairs with NSPLIT warps per 16-pair tile, each taking NT / NSPLIT of the n-tiles of both
// layers: the chain of dependent MMAs a warp runs is NSPLIT times shorter. The warps of a
// group meet twice at a named barrier: relu(D1) goes through shared memory (the tile T rows of
// this m-tile, free once the LayerNorm is done: tile T has as many rows as tile A) to become
// layer 2's A operand in the standard fragment layout, and the partial logits of each warp's
// hidden units are added there. Needs TILE_I * TILE_J % 16 == 0 and HP + NSPLIT <= row_stride(C).
template <int N, int C, int H, int BLOCK, int TILE_I, int TILE_J, int NSPLIT, int SYM, int PREC>
__device__ __forceinline__ void mma_pairs_split(float* __restrict__ out, const TileOrigin& tile, float* tiles,
                                                const MmaWeights<C, H, true>& W) {
  using L = MmaWeights<C, H, true>;
  constexpr int HP = MmaWeightLayout<C, H>::HP, NT = HP / 8, NTW = NT / NSPLIT;
  constexpr int RS = row_stride(C), kRows = TILE_I * TILE_J, kMTiles = kRows / 16, NW = BLOCK / 32;
  constexpr int kGroups = NW / NSPLIT;
  static_assert(C % 8 == 0 && RS % 8 == 4, "mma fragments need C % 8 == 0");
  static_assert(kRows % 16 == 0 && NT % NSPLIT == 0 && NW % NSPLIT == 0 && HP + NSPLIT <= RS && kGroups <= 15,
                "NSPLIT must divide the n-tiles and the warps, and the scratch must fit a tile T row");
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int part = warp % NSPLIT, slot = warp / NSPLIT;
  const int nt0 = part * NTW;
  float bias0[NTW][2], bias2[NTW][2], w4v[NTW][2];
#pragma unroll
  for (int n = 0; n < NTW; ++n)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      bias0[n][e] = W.b0[(nt0 + n) * 8 + 2 * t + e];
      bias2[n][e] = W.b2[(nt0 + n) * 8 + 2 * t + e];
      w4v[n][e] = W.w4[(nt0 + n) * 8 + 2 * t + e];
    }
  const float bias4 = *W.b4;

#pragma unroll 1
  for (int m = slot; m < kMTiles; m += kGroups) {
    const float* row_lo = tiles + (m * 16 + g) * RS + t;
    const float* row_hi = row_lo + 8 * RS;
    float* scratch = tiles + (kRows + m * 16) * RS;  // 16 rows: relu(D1) in columns [0, HP), logits after
    float d1[NTW][1][4];
    mma_rows_layer<NTW, C, L::kW0Stride, PREC>(d1, bias0, row_lo, row_hi, W.w0 + (nt0 * 8 + g) * L::kW0Stride + t);
#pragma unroll
    for (int n = 0; n < NTW; ++n) {
      const int col = (nt0 + n) * 8 + 2 * t;
      *reinterpret_cast<float2*>(scratch + g * RS + col) =
          make_float2(fmaxf(d1[n][0][0], 0.0f), fmaxf(d1[n][0][1], 0.0f));
      *reinterpret_cast<float2*>(scratch + (g + 8) * RS + col) =
          make_float2(fmaxf(d1[n][0][2], 0.0f), fmaxf(d1[n][0][3], 0.0f));
    }
    named_barrier(1 + slot, NSPLIT * 32);
    float d2[NTW][1][4];
    mma_rows_layer<NTW, HP, L::kW2Stride, PREC>(d2, bias2, scratch + g * RS + t, scratch + (g + 8) * RS + t,
                                          W.w2 + (nt0 * 8 + g) * L::kW2Stride + t);
    float logit_lo = 0.0f, logit_hi = 0.0f;  // rows g and g + 8, this warp's hidden units
#pragma unroll
    for (int n = 0; n < NTW; ++n) {
      logit_lo = fmaf(w4v[n][0], fmaxf(d2[n][0][0], 0.0f), logit_lo);
      logit_lo = fmaf(w4v[n][1], fmaxf(d2[n][0][1], 0.0f), logit_lo);
      logit_hi = fmaf(w4v[n][0], fmaxf(d2[n][0][2], 0.0f), logit_hi);
      logit_hi = fmaf(w4v[n][1], fmaxf(d2[n][0][3], 0.0f), logit_hi);
    }
    logit_lo = group_sum<4>(logit_lo);
    logit_hi = group_sum<4>(logit_hi);
    if (t == 0) {
      scratch[g * RS + HP + part] = logit_lo;
      scratch[(g + 8) * RS + HP + part] = logit_hi;
    }
    named_barrier(1 + slot, NSPLIT * 32);
    if (part == 0 && t < 2) {
      const int row = g + 8 * t;
      float logit = 0.0f;
#pragma unroll
      for (int q = 0; q < NSPLIT; ++q) logit += scratch[row * RS + HP + q];
      const PairSlot pslot = tile_slot<N, TILE_I, TILE_J>(tile, m * 16 + row);
      store_result<N>(out, pslot, SYM && tile.mirror, sigmoid(logit + bias4));
    }
  }
}

}  // namespace contact
}  // namespace tune_kernels

template <int B, int N, int C, int H, int STRATEGY, int MAPPING, int BLOCK, int TILE_I, int TILE_J, int STAGE_T,
          int SMEM_W, int PAIRS = 1, int SYM = 0, int ASYNC = 0, int NSPLIT = 1, int PREC = 0, int LNROW = 0,
          int PERSIST = 0>
__global__ void __launch_bounds__(BLOCK)
    contact_kernel(const float* __restrict__ pair_repr, const float* __restrict__ ln_w, const float* __restrict__ ln_b,
                   const float* __restrict__ w0, const float* __restrict__ b0, const float* __restrict__ w2,
                   const float* __restrict__ b2, const float* __restrict__ w4, const float* __restrict__ b4,
                   float* __restrict__ out) {
  namespace k = tune_kernels::contact;
  static_assert(B >= 1 && N >= 1 && C >= 1 && H >= 1, "empty shape");
  static_assert(STRATEGY >= 0 && STRATEGY <= 2, "STRATEGY: 0 thread, 1 warp, 2 mma");
  static_assert(MAPPING >= 0 && MAPPING <= 2, "MAPPING: 0 linear, 1 tile, 2 warp_tile");
  static_assert(BLOCK % 32 == 0 && BLOCK >= 32 && BLOCK <= 1024, "BLOCK must be a multiple of 32");
  static_assert(TILE_I >= 1 && TILE_J >= 1 && PAIRS >= 1, "bad tile or PAIRS");
  static_assert(!SYM || (MAPPING != 0 && TILE_I == TILE_J), "SYM needs a tile mapping with square tiles");
  static_assert(PREC == 0 || (PREC == 1 && STRATEGY == 2), "PREC: 0 3xTF32, 1 TF32 (the mma strategy only)");
  static_assert(LNROW == 0 || (STRATEGY == 2 && SMEM_W != 0 && ASYNC != 0 && NSPLIT == 1),
                "LNROW: the mma strategy with SMEM_W, ASYNC and NSPLIT 1");
  static_assert(PERSIST == 0 || MAPPING == 2, "PERSIST: the warp_tile mapping");
  static_assert(STRATEGY != 2 || (MAPPING != 0 && STAGE_T != 0 && C % 8 == 0 && (SMEM_W != 0 || H % 8 == 0)),
                "the mma strategy needs a tile mapping, STAGE_T, C % 8 == 0, and SMEM_W or H % 8 == 0");
  using Layout = k::SmemLayout<C, H, STRATEGY, MAPPING, BLOCK, TILE_I, TILE_J, STAGE_T, SMEM_W, PAIRS>;
  constexpr bool kStaged = Layout::kStaged;

  extern __shared__ float4 tune_contact_smem[];
  float* smem = reinterpret_cast<float*>(tune_contact_smem);
  float* sw = smem + Layout::kWeights;

  TUNE_CONTACT_MARK(0);
  if constexpr (MAPPING == 2) {
    static_assert(STRATEGY == 2 && kStaged && ASYNC != 0 && SYM != 0 && NSPLIT == 1,
                  "warp_tile: the mma strategy, staged, cp.async, SYM, NSPLIT 1");
    constexpr int kWarps = BLOCK / 32, T = k::cdiv(N, TILE_I), kUnits = B * T * (T + 1) / 2;
    constexpr bool kSmemW = SMEM_W != 0;
    using ML = k::MmaWeightLayout<C, H>;
    using MW = k::MmaWeights<C, H, kSmemW>;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    // The warp's tiles: PAIRS consecutive ones, or (PERSIST) every (grid warps)-th from its index.
    const int gw = static_cast<int>(blockIdx.x) * kWarps + warp;
    const int first = PERSIST ? gw : gw * PAIRS;
    const int stride = PERSIST ? static_cast<int>(gridDim.x) * kWarps : 1;
    const int last = PERSIST ? kUnits : (first + PAIRS < kUnits ? first + PAIRS : kUnits);  // exclusive
    float* tiles = smem + Layout::kTileA + warp * PAIRS * Layout::kTileFloats;  // a ring of PAIRS buffers
    // LNROW: a diagonal tile (not mirrored) is staged once, its tile T rows being its tile A rows
    // (the rows are normalised in place before any is read as a T row; the group LayerNorm
    // overwrites A rows with s while others still read them, so it keeps both copies).
    const auto stage = [&](int u, int slot) {
      const k::TileOrigin t = k::tile_origin<N, TILE_I, TILE_J, SYM>(u);
      k::stage_tiles<N, C, TILE_I, TILE_J, 32, true>(pair_repr, t.b, t.i0, t.j0, tiles + slot * Layout::kTileFloats,
                                                    lane, LNROW != 0 && !t.mirror);
    };
    if constexpr (kSmemW) {  // the block's weights first: one group, waited for before the tiles
      k::copy_mma_weights<C, H, BLOCK, true>(ln_w, ln_b, w0, b0, w2, b2, w4, b4, sw);
      k::copy_commit();
    }
    // Every tile's copies are one cp.async group; PAIRS groups are always in flight (empty ones
    // past the warp's last tile), so a wait for all but the PAIRS - 1 newest is a wait for the
    // oldest tile.
#pragma unroll
    for (int p = 0; p < PAIRS; ++p) {
      if (first + p * stride < last) stage(first + p * stride, p);
      k::copy_commit();
    }
    if constexpr (kSmemW) {
      k::copy_wait<PAIRS>();
      __syncthreads();
      if constexpr (LNROW != 0) k::fold_layernorm<C, H, BLOCK>(sw);
    }
    const MW W = kSmemW ? MW{sw + ML::kW0, sw + ML::kB0, sw + ML::kW2, sw + ML::kB2, sw + ML::kW4, sw + ML::kB4}
                        : MW{w0, b0, w2, b2, w4, b4};
    int slot = 0;
#pragma unroll 1
    for (int u = first; u < last; u += stride) {
      k::copy_wait<PAIRS - 1>();
      __syncwarp();
      if (u == first) TUNE_CONTACT_MARK(1);
      float* tp = tiles + slot * Layout::kTileFloats;
      const k::TileOrigin tile = k::tile_origin<N, TILE_I, TILE_J, SYM>(u);
      const int t_row0 = LNROW == 0 || tile.mirror ? TILE_I * TILE_J : 0;
      if constexpr (LNROW != 0) {
        k::normalize_rows<C, 2 * TILE_I * TILE_J, 32>(tp, lane, TILE_I * TILE_J + t_row0);
      } else {
        k::layernorm_tile<C, TILE_I, TILE_J, 32, kSmemW>(tp, kSmemW ? sw + ML::kGamma : ln_w,
                                                        kSmemW ? sw + ML::kBeta : ln_b, 0, t_row0);
      }
      __syncwarp();
      if (u == first) TUNE_CONTACT_MARK(2);
      k::mma_pairs<N, C, H, 32, TILE_I, TILE_J, 1, SYM, kSmemW, PREC, LNROW>(out, tile, tp, W, 0, t_row0);
      __syncwarp();  // every lane is done with the buffer before it is refilled
      const int next = u + PAIRS * stride;
      if (next < last) stage(next, slot);
      k::copy_commit();
      slot = slot + 1 == PAIRS ? 0 : slot + 1;
    }
    TUNE_CONTACT_MARK(3);
    return;
  }

  k::TileOrigin tile{0, 0, 0, false};
  if constexpr (MAPPING == 1) {
    tile = k::tile_origin<N, TILE_I, TILE_J, SYM>();
    if (tile.b >= B) return;  // whole block, before any barrier
  }

  // Cooperative copies first, so the weight and tile loads are in flight together.
  // The tile first: its rows come from DRAM, the weights (shared by all blocks) mostly from L2.
  constexpr bool kAsync = ASYNC != 0;
  if constexpr (LNROW != 0) {
    // The weights first, in their own group: the fold runs while the tiles are still landing.
    k::copy_mma_weights<C, H, BLOCK, true>(ln_w, ln_b, w0, b0, w2, b2, w4, b4, sw);
    k::copy_commit();
    k::stage_tiles<N, C, TILE_I, TILE_J, BLOCK, true>(pair_repr, tile.b, tile.i0, tile.j0, smem + Layout::kTileA);
    k::copy_commit();
    k::copy_wait<1>();
    __syncthreads();
    k::fold_layernorm<C, H, BLOCK>(sw);
    k::copy_wait<0>();
  } else if constexpr (kStaged) {
    k::stage_tiles<N, C, TILE_I, TILE_J, BLOCK, kAsync>(pair_repr, tile.b, tile.i0, tile.j0, smem + Layout::kTileA);
  }
  if constexpr (LNROW != 0) {
  } else if constexpr (STRATEGY == 2 && SMEM_W != 0) {
    k::copy_mma_weights<C, H, BLOCK, kAsync>(ln_w, ln_b, w0, b0, w2, b2, w4, b4, sw);
  } else if constexpr (SMEM_W != 0) {
    k::copy_weights<C, H, BLOCK, kAsync>(ln_w, ln_b, w0, b0, w2, b2, w4, b4, sw);
  }
  if constexpr (kAsync && LNROW == 0) k::copy_wait_all();
  if constexpr (SMEM_W != 0 || kStaged) __syncthreads();
  TUNE_CONTACT_MARK(1);

  if constexpr (STRATEGY == 2) {
    using ML = k::MmaWeightLayout<C, H>;
    constexpr bool kSmemW = SMEM_W != 0;
    using MW = k::MmaWeights<C, H, kSmemW>;
    const MW W = kSmemW ? MW{sw + ML::kW0, sw + ML::kB0, sw + ML::kW2, sw + ML::kB2, sw + ML::kW4, sw + ML::kB4}
                        : MW{w0, b0, w2, b2, w4, b4};
    if constexpr (LNROW != 0) {
      k::normalize_rows<C, 2 * TILE_I * TILE_J, BLOCK>(smem + Layout::kTileA, static_cast<int>(threadIdx.x));
    } else {
      k::layernorm_tile<C, TILE_I, TILE_J, BLOCK, kSmemW>(smem + Layout::kTileA, kSmemW ? sw + ML::kGamma : ln_w,
                                                          kSmemW ? sw + ML::kBeta : ln_b);
    }
    __syncthreads();
    TUNE_CONTACT_MARK(2);
    if constexpr (NSPLIT > 1) {
      static_assert(PAIRS == 1 && kSmemW, "NSPLIT > 1 takes one 16-pair tile per warp group, weights in shared memory");
      k::mma_pairs_split<N, C, H, BLOCK, TILE_I, TILE_J, NSPLIT, SYM, PREC>(out, tile, smem + Layout::kTileA, W);
    } else {
      k::mma_pairs<N, C, H, BLOCK, TILE_I, TILE_J, PAIRS, SYM, kSmemW, PREC, LNROW>(out, tile, smem + Layout::kTileA,
                                                                                   W);
    }
    TUNE_CONTACT_MARK(3);
  } else {
    using WL = k::WeightLayout<C, H>;
    constexpr bool kSmemW = SMEM_W != 0;
    const float* g = kSmemW ? sw + WL::kGamma : ln_w;
    const float* be = kSmemW ? sw + WL::kBeta : ln_b;
    const float* pw0 = kSmemW ? sw + WL::kW0 : w0;
    const float* pb0 = kSmemW ? sw + WL::kB0 : b0;
    const float* pw2 = kSmemW ? sw + WL::kW2 : w2;
    const float* pb2 = kSmemW ? sw + WL::kB2 : b2;
    const float* pw4 = kSmemW ? sw + WL::kW4 : w4;
    const float* pb4 = kSmemW ? sw + WL::kB4 : b4;
    if constexpr (kStaged) {
      k::layernorm_tile<C, TILE_I, TILE_J, BLOCK, kSmemW>(smem + Layout::kTileA, g, be);
      __syncthreads();
    }
    if constexpr (STRATEGY == 0) {
      k::thread_pairs<B, N, C, H, MAPPING, BLOCK, TILE_I, TILE_J, kStaged, kSmemW, PAIRS, SYM>(
          pair_repr, g, be, pw0, pb0, pw2, pb2, pw4, pb4, out, tile, smem + Layout::kTileA);
    } else {
      k::warp_pairs<B, N, C, H, MAPPING, BLOCK, TILE_I, TILE_J, kStaged, kSmemW, PAIRS, SYM>(
          pair_repr, g, be, pw0, pb0, pw2, pb2, pw4, pb4, out, tile, smem + Layout::kTileA, smem + Layout::kScratch);
    }
  }
}

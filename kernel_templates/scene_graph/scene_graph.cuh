#pragma once
// Kernels of problem `scene_graph` (PROBLEMS.md): pre-LN multi-head attention over N graph
// nodes with a pair-feature MLP bias and an edge mask, output projection and residual.
// Self-contained (no #include): NVRTC compiles this file as the program source; every
// template parameter is an int fixed per variant (configs/scene_graph.json says which
// launches a configuration makes, with which arguments, grid and dynamic shared memory).
//
// Strategies and their launches:
//   unfused (baseline)  sg_naive_layernorm, sg_naive_qkv, sg_naive_pair_bias,
//                       sg_naive_attention, sg_naive_out_proj: one thread per output element,
//                       plain global memory, scratch buffers hn, q, k, v, bias, ctx between.
//   fused               sg_fused: one block per (batch, tile of QT query rows); QT = N is the
//                       block-per-batch mapping. Mapping "head": sg_fused_head, a cluster of
//                       `heads` blocks per (batch, query row), a block per head (sm_90).
//                       Mapping "cluster": sg_cluster, a cluster of heads x rsplit blocks per
//                       batch, a block per (head, row split), 3xTF32 tensor cores (sm_90);
//                       parameters ksplit, stasync, ntile, overlap, outmma, outbfly,
//                       attnquad: see sg_cluster.
//   split               sg_pair_bias (scratch bias) + sg_split_attention (as sg_fused, bias
//                       read from scratch); or, mapping "head": sg_pair_bias + sg_head_attention
//                       (block per (batch, head), scratch ctx) + sg_out_proj.
//
// Why the fused block never computes K and V: a block owns QT query rows but needs keys and
// values of all N rows. Instead of recomputing K = LN(x)·Wkᵀ and V for all N rows in every
// block (2·N·D² FMA per block), it folds the projections into the query side:
//   score[h,i,j] = (q_h[i]·scale)·(Wk_h hn[j]) = (Wk_hᵀ q_h[i]·scale)·hn[j]
//   ctx_h[i]     = Σ_j a[h,i,j] (Wv_h hn[j]) = Wv_h (Σ_j a[h,i,j] hn[j])
// which costs 4·QT·D² + 2·QT·heads·N·D per block and no work is repeated across blocks but
// the LayerNorm of the N rows. Each block still streams the four D×D weights once.
//
// Every element of `out` is written by a plain store (the harness fills it with NaN first);
// a fully masked attention row gives attention 0, so its output row is the input row. A
// kernel launched with the wrong block size or too little dynamic shared memory returns
// without writing, so the variant fails parity instead of corrupting memory; sg_cluster
// alone skips that check (it cost a constant-cache miss before its first load): its config
// value cl_smem is checked against SgClusterLayout by an NVRTC test (tests/nvrtc).
// Buffers must be 16-byte aligned (float4 and 16-byte cp.async accesses); D % 4 == 0.

namespace tune_kernels {

__host__ __device__ constexpr int sg_cdiv(int a, int b) { return (a + b - 1) / b; }
__host__ __device__ constexpr int sg_round4(int x) { return (x + 3) / 4 * 4; }
__host__ __device__ constexpr int sg_min(int a, int b) { return a < b ? a : b; }

// Row stride (floats) of a D-float row in shared memory: a whole number of float4s, and an
// odd number of them, so 8 lanes reading one float4 of 8 different rows hit 8 bank quads.
__host__ __device__ constexpr int sg_row_stride(int d) { return d % 8 == 0 ? d + 4 : d; }
// Row stride for scalar reads with lanes over rows: odd, so the lanes hit distinct banks.
__host__ __device__ constexpr int sg_odd_stride(int d) { return d % 2 == 0 ? d + 1 : d; }
// Lanes that share one dot product of K4 float4s (a power of two dividing K4, at most 8):
// 8 lanes read 128 contiguous bytes of a weight row.
__host__ __device__ constexpr int sg_k_lanes(int k4) {
  return k4 % 8 == 0 ? 8 : (k4 % 4 == 0 ? 4 : (k4 % 2 == 0 ? 2 : 1));
}
// Largest power of two that divides p and is at most cap.
__host__ __device__ constexpr int sg_pow2_divisor(int p, int cap) {
  int l = 1;
  while (l * 2 <= cap && p % (l * 2) == 0) l *= 2;
  return l;
}
// Lanes that share one pair's relation MLP (each takes P/lanes hidden units): enough that the
// pairs of a block keep its threads busy, a power of two dividing P.
__host__ __device__ constexpr int sg_pair_lanes(int pairs, int p, int block) {
  int l = 1;
  while (l < sg_pow2_divisor(p, 32) && pairs * l < block) l *= 2;
  return l;
}
// Rows per thread: as many as possible (up to 8; each weight load is reused that often from
// registers) while every one of `workers` still gets a unit of work.
__host__ __device__ constexpr int sg_rows_per_thread(int rows, int units_per_row_group, int workers) {
  const int candidates[4] = {rows < 8 ? rows : 8, 4, 2, 1};
  for (int i = 0; i < 4; ++i) {
    const int rt = candidates[i];
    if (rt <= rows && sg_cdiv(rows, rt) * units_per_row_group >= workers) return rt;
  }
  return 1;
}

// Units a thread of sg_rows_dot takes per pass (at most `wanted`): bounded so that the weight
// float4s in flight (4*TW registers a unit), the accumulators (RT a unit) and one set of
// input float4s (4*RT) stay within a register budget that leaves room at this block size.
__host__ __device__ constexpr int sg_units_per_pass(int tw, int rt, int wanted, int block) {
  const int budget = block >= 1024 ? 32 : (block >= 512 ? 64 : 96);
  int ub = sg_min(wanted, sg_min(12 / tw, 24 / rt));
  while (ub > 1 && ub * (4 * tw + rt) + 4 * rt > budget) --ub;
  return ub > 1 ? ub : 1;
}

// Dynamic shared memory (bytes) of sg_fused / sg_split_attention; configs/scene_graph.json
// derives the same number as `attn_smem`.
__host__ __device__ constexpr int sg_attention_smem_bytes(int N, int D, int H, int QT, int SMEM_W) {
  return 4 * (N * sg_row_stride(D)                      // hn: LayerNorm of all N rows
              + QT * sg_row_stride(D)                   // q, later ctx
              + QT * H * sg_row_stride(D)               // Wk_hᵀ q_h, later Σ_j a hn[j]
              + sg_round4(H * QT * N)                   // bias, scores, attention
              + sg_round4(QT * N)                       // edge mask rows
              + (SMEM_W ? 2 * D + 4 * D * sg_row_stride(D) : 0));  // gamma, beta, Wq Wk Wv Wout
}
// Dynamic shared memory (bytes) of sg_head_attention (config: `head_smem`).
__host__ __device__ constexpr int sg_head_smem_bytes(int N, int D, int H, int SMEM_W) {
  return 4 * (N * sg_row_stride(D)                                         // hn
              + (SMEM_W ? 2 * D + 3 * (D / H) * sg_row_stride(D) : 0)      // gamma, beta, head rows of Wq Wk Wv
              + sg_round4(3 * N * sg_odd_stride(D / H))                    // q_h, k_h, v_h
              + 2 * sg_round4(N * N));                                     // bias/scores, mask
}
// Dynamic shared memory (bytes) of sg_fused_head (config: `fh_smem`).
__host__ __device__ constexpr int sg_fused_head_smem_bytes(int N, int D, int H) {
  return 4 * (N * sg_row_stride(D)        // hn
              + sg_round4(D / H) * 2      // q_h, ctx_h
              + sg_row_stride(D)          // Wk_hᵀ q_h, later Σ_j a hn[j]
              + 2 * sg_round4(N)          // bias/scores/attention, mask row
              + sg_round4(D));            // this head's share of the output row, read by the cluster
}
// Lanes that share one output column of a register-resident weight slice (sg_cluster): a power
// of two up to 8 dividing K/4, as many as let all `cols` columns fit in the block at once. Each
// lane keeps K/lanes weights in registers (configs/scene_graph.json: cl_klo).
__host__ __device__ constexpr int sg_reg_lanes(int cols, int k, int block) {
  int l = 1;
  while (l < 8 && (k / 4) % (l * 2) == 0 && cols * l * 2 <= block) l *= 2;
  return l;
}
// Most weights (floats) a thread of sg_cluster keeps in registers.
constexpr int kSgRegWeights = 48;
// Shared memory of sg_cluster, offsets in floats (each a multiple of 4); kBytes is the config's
// `cl_smem`.
template <int N, int D, int H, int P, int R, int KSPLIT = 1>
struct SgClusterLayout {
  static constexpr int S = sg_row_stride(D), RN = sg_cdiv(N, R);
  // Row stride of q_h, k_h, v_h: an odd number of float4s when HD % 4 == 0 (the scores read
  // float4s of 8 rows at once, conflict-free), else an odd number of floats.
  static constexpr int HD = D / H;
  static constexpr int HS = HD % 4 == 0 ? ((HD / 4) % 2 == 1 ? HD : HD + 4) : sg_odd_stride(HD);
  static constexpr int JC = sg_cdiv(N, H);        // pair columns of one block's relation MLP share
  static constexpr bool kMlpMma = P % 8 == 0;      // relation MLP on the tensor cores
  static constexpr int PS = kMlpMma ? P + 4 : P;   // row stride of W0 and of the staged pair features
  static constexpr int kX = 0;                                 // RN x S own node rows (also the residual)
  static constexpr int kXh = kX + RN * S;                      // RN x S float2: LayerNorm rows, TF32 (hi, lo)
  static constexpr int kW = kXh + 2 * RN * S;                  // 3 HD x S
  static constexpr int kCtx = kW + 3 * (D / H) * S;            // RN x S
  static constexpr int kQ = kCtx + RN * S;                     // RN x HS
  static constexpr int kK = kQ + sg_round4(RN * HS);           // N x HS
  static constexpr int kV = kK + sg_round4(N * HS);            // N x HS
  static constexpr int kBias = kV + sg_round4(N * HS);         // RN x N
  static constexpr int kMask = kBias + sg_round4(RN * N);      // RN x N
  static constexpr int kPart = kMask + sg_round4(RN * N);      // KSPLIT > 1: KSPLIT x 3 x RN x HD partial projections
  // (or, as MMA fragments, KSPLIT - 1 partial tiles of 16 x 8 per (matrix, row tile, column tile))
  static constexpr int kPartSize = sg_round4(KSPLIT * 3 * RN * HD) > (KSPLIT - 1) * 3 * sg_cdiv(RN, 16) * sg_cdiv(HD, 8) * 128
                                       ? sg_round4(KSPLIT * 3 * RN * HD)
                                       : (KSPLIT - 1) * 3 * sg_cdiv(RN, 16) * sg_cdiv(HD, 8) * 128;
  static constexpr int kW0 = kPart + (KSPLIT > 1 ? kPartSize : 0);  // P x PS
  static constexpr int kB0 = kW0 + sg_round4(P * PS);          // P
  static constexpr int kW2 = kB0 + sg_round4(P);               // H x P, then b2 (H)
  static constexpr int kGB = kW2 + sg_round4(H * P + H);       // 2 D
  static constexpr int kPF = kGB + 2 * sg_round4(D);           // kMlpMma: RN JC x PS pair features
  // Relation MLP tiles (16 pairs) shared by two warps, half the hidden units each (the partner's
  // sums pass through kMx, the tile's named barrier is 1 + tile): needs P / 8 even and at most 15 tiles.
  static constexpr int kMlpTiles = sg_cdiv(RN * JC, 16);
  static constexpr bool kMlpHalves = kMlpMma && (P / 8) % 2 == 0 && kMlpTiles <= 15;
  static constexpr int kMx = kPF + (kMlpMma ? sg_round4(RN * JC * PS) : 0);      // kMlpHalves: tiles x 16 x H
  static constexpr int kBar = kMx + (kMlpHalves ? kMlpTiles * 16 * H : 0);        // 3 mbarriers (8 bytes each)
  static constexpr int kBytes = 4 * (kBar + 8);
};
// Dynamic shared memory (bytes) of sg_out_proj (config: `op_smem`).
__host__ __device__ constexpr int sg_out_proj_smem_bytes(int D, int ROWS) { return 4 * ROWS * sg_row_stride(D); }
// Dynamic shared memory (bytes) of sg_pair_bias (config: `pb_smem`).
__host__ __device__ constexpr int sg_pair_bias_smem_bytes(int H, int P, int SMEM_W) {
  return SMEM_W ? 4 * (sg_round4(P * P) + sg_round4(P) + sg_round4(H * P) + sg_round4(H)) : 0;
}

// One level of a transposed butterfly over a warp: sums x[0 .. 2 HW) of each lane, a lane keeps
// the half its bit HW selects (in x[0 .. HW)) and adds its partner's share of it. Levels 16, 8,
// 4, 2, 1 in turn leave lane l with the warp's total of x[l] (31 shuffles for 32 sums).
template <int HW, int NX>
__device__ __forceinline__ void sg_transpose_sum(float (&x)[NX], int lane) {
  static_assert(2 * HW <= NX, "a level needs 2 HW sums");
  const bool up = (lane & HW) != 0;
#pragma unroll
  for (int q = 0; q < HW; ++q) {
    const float lo = x[q], hi = x[q + HW];
    const float got = __shfl_xor_sync(0xffffffffu, up ? lo : hi, HW);
    x[q] = (up ? hi : lo) + got;
  }
}

// A level of the same butterfly for sums whose slots the lanes already hold permuted (slot
// q + HW of lane l ^ HW holds the sum slot q of lane l holds): no selects.
template <int HW, int NX>
__device__ __forceinline__ void sg_fold_upper(float (&x)[NX]) {
  static_assert(2 * HW <= NX, "a level needs 2 HW sums");
#pragma unroll
  for (int q = 0; q < HW; ++q) x[q] += __shfl_xor_sync(0xffffffffu, x[q + HW], HW);
}

__device__ __forceinline__ unsigned sg_dynamic_smem_size() {
  unsigned bytes;
  asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(bytes));
  return bytes;
}
__device__ __forceinline__ unsigned sg_smem_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
// Asynchronous global -> shared copies (sm_80+), so weight transfers overlap compute.
__device__ __forceinline__ void sg_copy16(float* dst, const float* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(sg_smem_address(dst)), "l"(src) : "memory");
}
__device__ __forceinline__ void sg_copy4(float* dst, const float* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(sg_smem_address(dst)), "l"(src) : "memory");
}
__device__ __forceinline__ void sg_copy_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
// Waits until at most PENDING of this thread's committed groups are in flight.
template <int PENDING>
__device__ __forceinline__ void sg_copy_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(PENDING) : "memory");
}
__device__ __forceinline__ void sg_prefetch_l2(const float* p) {
  asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
}
__device__ __forceinline__ void sg_prefetch_l1(const float* p) {
  asm volatile("prefetch.global.L1 [%0];" ::"l"(p));
}
// Thread-block clusters (sm_90): this block's rank, a barrier over the cluster's blocks (it also
// orders their shared-memory writes before the reads that follow), and a load from the shared
// memory of block `rank` at the offset of `p` in this block's.
__device__ __forceinline__ unsigned sg_cluster_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
__device__ __forceinline__ void sg_cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
// The shared::cluster address of `p`'s offset in the shared memory of block `rank`.
__device__ __forceinline__ unsigned sg_cluster_address(const void* p, unsigned rank) {
  unsigned remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(sg_smem_address(p)), "r"(rank));
  return remote;
}
__device__ __forceinline__ float sg_cluster_load(const float* p, unsigned rank) {
  const unsigned remote = sg_cluster_address(p, rank);
  float v;
  asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(remote) : "memory");
  return v;
}
// A store into the shared memory of block `rank` of this cluster, at the offset of `p` in this
// block's; the split cluster barrier (arrive early, wait before the first remote access) lets
// a block run ahead until it first writes into another one.
__device__ __forceinline__ void sg_cluster_store(float* p, unsigned rank, float v) {
  const unsigned remote = sg_cluster_address(p, rank);
  asm volatile("st.shared::cluster.f32 [%0], %1;" ::"r"(remote), "f"(v) : "memory");
}
__device__ __forceinline__ void sg_cluster_arrive_relaxed() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
}
__device__ __forceinline__ void sg_cluster_wait() { asm volatile("barrier.cluster.wait.aligned;" ::: "memory"); }
// The Hopper bulk-copy engine (TMA, sm_90): one thread starts a copy of BYTES (a multiple of 16,
// both ends 16-byte aligned) into this block's shared memory; the mbarrier's transaction count
// tracks the bytes, and a wait on its phase returns once all expected bytes have landed.
__device__ __forceinline__ void sg_mbar_init(void* bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(sg_smem_address(bar)), "r"(count) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
__device__ __forceinline__ void sg_mbar_expect_bytes(void* bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(sg_smem_address(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void sg_bulk_copy(float* dst, const float* src, unsigned bytes, void* bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
               ::"r"(sg_smem_address(dst)), "l"(src), "r"(bytes), "r"(sg_smem_address(bar)) : "memory");
}
// Waits until the mbarrier's phase `phase` has completed. CLUSTER: acquire semantics at cluster
// scope, so the data other blocks of the cluster delivered with sg_st_async in that phase is
// visible after it (default: cta scope, enough for this block's own bulk copies).
template <bool CLUSTER = false>
__device__ __forceinline__ void sg_mbar_wait(void* bar, unsigned phase) {
  unsigned done = 0;
  while (!done) {
    if constexpr (CLUSTER) {
      asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}"
                   : "=r"(done) : "r"(sg_smem_address(bar)), "r"(phase) : "memory");
    } else {
      asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}"
                   : "=r"(done) : "r"(sg_smem_address(bar)), "r"(phase) : "memory");
    }
  }
}
// A store of v into the shared memory of block `rank` of the cluster, at the offset of `p` in this
// block's, that completes 4 bytes of the transaction count of that block's mbarrier at the offset
// of `bar` (sm_90 st.async): no fence and no cluster barrier; the receiver waits on its mbarrier.
__device__ __forceinline__ void sg_st_async(float* p, unsigned rank, float v, void* bar) {
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%0], %1, [%2];"
               ::"r"(sg_cluster_address(p, rank)), "r"(__float_as_uint(v)), "r"(sg_cluster_address(bar, rank))
               : "memory");
}

// As sg_st_async, two floats at an 8-byte aligned p (8 bytes of the transaction count).
__device__ __forceinline__ void sg_st_async2(float* p, unsigned rank, float v0, float v1, void* bar) {
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.b32 [%0], {%1, %2}, [%3];"
               ::"r"(sg_cluster_address(p, rank)), "r"(__float_as_uint(v0)), "r"(__float_as_uint(v1)),
               "r"(sg_cluster_address(bar, rank))
               : "memory");
}

// chunk(row, c) for the C chunks of each of ROWS rows, a warp per row (row r by warp
// (r + FIRST) % WARPS of the first WARPS warps, so that successive calls start on the warp after
// the previous one's last row), chunk c by lane c % 32: no division per chunk, compile-time trip
// counts.
template <int ROWS, int C, int BLOCK, int FIRST, int WARPS = BLOCK / 32, class Chunk>
__device__ __forceinline__ void sg_rows_by_warp(const Chunk& chunk) {
  constexpr int NW = WARPS;
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  if (WARPS < BLOCK / 32 && warp >= WARPS) return;
  const int first = (warp + NW - FIRST % NW) % NW;
#pragma unroll
  for (int q = 0; q < sg_cdiv(ROWS, NW); ++q) {
    const int row = first + q * NW;
    if (ROWS % NW == 0 || row < ROWS) {
#pragma unroll
      for (int c = 0; c < sg_cdiv(C, 32); ++c) {
        if (C % 32 == 0 || lane + 32 * c < C) chunk(row, lane + 32 * c);
      }
    }
  }
}
// ROWS rows of L floats (L % 4 == 0) from global rows src_row(r) into shared rows of stride S,
// 16-byte cp.async chunks spread as sg_rows_by_warp.
template <int ROWS, int L, int S, int BLOCK, int FIRST, int WARPS = BLOCK / 32, class SrcRow>
__device__ __forceinline__ void sg_copy_rows_warp(float* dst, const SrcRow& src_row) {
  sg_rows_by_warp<ROWS, L / 4, BLOCK, FIRST, WARPS>(
      [&](int row, int c) { sg_copy16(dst + row * S + 4 * c, src_row(row) + 4 * c); });
}

// ROWS rows of D floats (D % 4 == 0) from global rows src_row(r) into shared rows of stride S.
template <int ROWS, int D, int S, int BLOCK, class SrcRow>
__device__ __forceinline__ void sg_copy_rows(float* dst, const SrcRow& src_row) {
  constexpr int D4 = D / 4;
  for (int idx = threadIdx.x; idx < ROWS * D4; idx += BLOCK) {
    const int r = idx / D4, c = (idx % D4) * 4;
    sg_copy16(dst + r * S + c, src_row(r) + c);
  }
}

// Loads a weight from shared memory (SMEM) or through the read-only cache.
template <int SMEM>
__device__ __forceinline__ float sg_load(const float* p) {
  if constexpr (SMEM != 0) {
    return *p;
  } else {
    return __ldg(p);
  }
}
template <int SMEM>
__device__ __forceinline__ float4 sg_load4(const float* p) {
  if constexpr (SMEM != 0) {
    return *reinterpret_cast<const float4*>(p);
  } else {
    return __ldg(reinterpret_cast<const float4*>(p));
  }
}

__device__ __forceinline__ float sg_dot4(float4 a, float4 b, float acc) {
  acc = fmaf(a.x, b.x, acc);
  acc = fmaf(a.y, b.y, acc);
  acc = fmaf(a.z, b.z, acc);
  return fmaf(a.w, b.w, acc);
}
__device__ __forceinline__ void sg_axpy4(float s, float4 m, float4& acc) {
  acc.x = fmaf(s, m.x, acc.x);
  acc.y = fmaf(s, m.y, acc.y);
  acc.z = fmaf(s, m.z, acc.z);
  acc.w = fmaf(s, m.w, acc.w);
}
__device__ __forceinline__ float sg_warp_sum(float v) {
  for (int off = 16; off > 0; off /= 2) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}
// Warp sums of M values at once: their shuffles interleave (independent), so M rows cost little
// more latency than one.
template <int M>
__device__ __forceinline__ void sg_warp_sums(float (&v)[M]) {
#pragma unroll
  for (int off = 16; off > 0; off /= 2) {
#pragma unroll
    for (int q = 0; q < M; ++q) v[q] += __shfl_xor_sync(0xffffffffu, v[q], off);
  }
}
__device__ __forceinline__ float sg_warp_max(float v) {
  for (int off = 16; off > 0; off /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
  return v;
}
// Sums and maxima over the lanes whose indices differ only in bits LO .. HI (powers of two; the
// offsets LO, 2 LO, .., HI in turn), of M values at once or of one.
template <int LO, int HI, int M>
__device__ __forceinline__ void sg_lane_sums(float (&v)[M]) {
#pragma unroll
  for (int q = 0; q < M; ++q) {
#pragma unroll
    for (int off = LO; off <= HI; off *= 2) v[q] += __shfl_xor_sync(0xffffffffu, v[q], off);
  }
}
template <int LO, int HI, int M>
__device__ __forceinline__ void sg_lane_maxes(float (&v)[M]) {
#pragma unroll
  for (int q = 0; q < M; ++q) {
#pragma unroll
    for (int off = LO; off <= HI; off *= 2) v[q] = fmaxf(v[q], __shfl_xor_sync(0xffffffffu, v[q], off));
  }
}
template <int LO, int HI>
__device__ __forceinline__ float sg_lane_sum(float v) {
#pragma unroll
  for (int off = LO; off <= HI; off *= 2) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}
template <int LO, int HI>
__device__ __forceinline__ float sg_lane_max(float v) {
#pragma unroll
  for (int off = LO; off <= HI; off *= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
  return v;
}
// Tensor cores (sm_80+): x = hi + lo exactly, hi a TF32 value (truncated); the MMA reads lo's
// TF32 part, so hi*hi + hi*lo + lo*hi carries an error near FP32's (3xTF32).
__device__ __forceinline__ void sg_split_tf32(float x, float& hi, float& lo) {
  hi = __uint_as_float(__float_as_uint(x) & 0xffffe000u);
  lo = x - hi;
}
// d += a·b for one m16n8k8 tile: a = (g, t), (g+8, t), (g, t+4), (g+8, t+4); b = (k t, n g),
// (k t+4, n g); d = (g, 2t), (g, 2t+1), (g+8, 2t), (g+8, 2t+1), with g = lane / 4, t = lane % 4.
__device__ __forceinline__ void sg_mma_tf32(float (&d)[4], const float (&a)[4], float b0, float b1) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(__float_as_uint(a[0])), "r"(__float_as_uint(a[1])), "r"(__float_as_uint(a[2])), "r"(__float_as_uint(a[3])),
        "r"(__float_as_uint(b0)), "r"(__float_as_uint(b1)));
}
// The A fragments (g, t), (g+8, t), (g, t+4), (g+8, t+4) of a k-step from rows xa (g) and xb
// (g + 8) at column k, split into TF32 (hi, lo).
__device__ __forceinline__ void sg_split_a(float (&ah)[4], float (&al)[4], const float* xa, const float* xb, int k,
                                           int t) {
  sg_split_tf32(xa[k + t], ah[0], al[0]);
  sg_split_tf32(xb[k + t], ah[1], al[1]);
  sg_split_tf32(xa[k + t + 4], ah[2], al[2]);
  sg_split_tf32(xb[k + t + 4], ah[3], al[3]);
}
// The B half of a 3xTF32 k-step, A already split (ah, al): B values b0 = B[t][g], b1 = B[t+4][g]
// split here; hi*hi, hi*lo and lo*hi accumulate separately (hh, hl, lh).
__device__ __forceinline__ void sg_mma_3xtf32(float (&hh)[4], float (&hl)[4], float (&lh)[4], const float (&ah)[4],
                                              const float (&al)[4], float b0, float b1) {
  float bh[2], bl[2];
  sg_split_tf32(b0, bh[0], bl[0]);
  sg_split_tf32(b1, bh[1], bl[1]);
  sg_mma_tf32(hl, al, bh[0], bh[1]);
  sg_mma_tf32(lh, ah, bl[0], bl[1]);
  sg_mma_tf32(hh, ah, bh[0], bh[1]);
}
// As sg_mma_3xtf32 with B column g at wrow (B[k][n] = wrow_n[k]), k-step k.
__device__ __forceinline__ void sg_mma_3xtf32_b(float (&hh)[4], float (&hl)[4], float (&lh)[4], const float (&ah)[4],
                                                const float (&al)[4], const float* wrow, int k, int t) {
  sg_mma_3xtf32(hh, hl, lh, ah, al, wrow[k + t], wrow[k + t + 4]);
}
// One k-step (columns k .. k+7) of a 3xTF32 tile product: A rows g and g+8 at xa and xb, B column
// g at wrow.
__device__ __forceinline__ void sg_mma_3xtf32_step(float (&hh)[4], float (&hl)[4], float (&lh)[4], const float* xa,
                                                   const float* xb, const float* wrow, int k, int t) {
  float ah[4], al[4];
  sg_split_a(ah, al, xa, xb, k, t);
  sg_mma_3xtf32_b(hh, hl, lh, ah, al, wrow, k, t);
}
// The A fragments of rows xa, xb (already split into TF32 (hi, lo) pairs) at k-step k.
__device__ __forceinline__ void sg_load_split_a(float (&ah)[4], float (&al)[4], const float2* xa, const float2* xb,
                                                int k, int t) {
  const float2 a0 = xa[k + t], a1 = xb[k + t], a2 = xa[k + t + 4], a3 = xb[k + t + 4];
  ah[0] = a0.x, ah[1] = a1.x, ah[2] = a2.x, ah[3] = a3.x;
  al[0] = a0.y, al[1] = a1.y, al[2] = a2.y, al[3] = a3.y;
}

// y[r][o] = Σ_c x(r, o)[c] · w[o][c] for r < R, o < O, c < K (K % 4 == 0).
// wload(o, c4) and xload(r, o, c4) return float4 number c4 of weight row o and of the input
// row of (r, o); store(r, o, y). A group of KL lanes shares one (o, row group) unit: each lane
// reads one float4 in KL of the row (128 contiguous bytes per group, coalesced from global,
// conflict-free from padded shared rows), keeps RT rows' partial sums, and the group reduces
// with shuffles. A thread takes UB units per pass, so that the weight loads of all of them
// are in flight together (one memory round trip per pass when the weights come from L2).
// The pass loop runs the same count in every warp, so the shuffles are full-warp.
template <int R, int O, int K, int BLOCK, class WLoad, class XLoad, class Store>
__device__ __forceinline__ void sg_rows_dot(const WLoad& wload, const XLoad& xload, const Store& store) {
  static_assert(K % 4 == 0, "K must be a multiple of 4");
  constexpr int K4 = K / 4;
  constexpr int KL = sg_k_lanes(K4);
  constexpr int TW = K4 / KL;  // float4s of one weight row per lane
  constexpr int NG = BLOCK / KL;
  constexpr int RT = sg_rows_per_thread(R, O, NG);
  constexpr int UNITS = O * sg_cdiv(R, RT);
  constexpr int UB = sg_units_per_pass(TW, RT, sg_cdiv(UNITS, NG), BLOCK);
  const int group = static_cast<int>(threadIdx.x) / KL, kl = static_cast<int>(threadIdx.x) % KL;
  for (int base = 0; base < UNITS; base += NG * UB) {
    float acc[UB][RT];
#pragma unroll
    for (int ub = 0; ub < UB; ++ub) {
      const int raw = base + ub * NG + group;
      const int u = raw < UNITS ? raw : UNITS - 1;
      const int o = u % O, r0 = (u / O) * RT;
#pragma unroll
      for (int rr = 0; rr < RT; ++rr) acc[ub][rr] = 0.0f;
#pragma unroll
      for (int t = 0; t < TW; ++t) {
        const int c4 = kl + t * KL;
        const float4 w = wload(o, c4);
#pragma unroll
        for (int rr = 0; rr < RT; ++rr) {
          const int r = r0 + rr < R ? r0 + rr : R - 1;
          acc[ub][rr] = sg_dot4(w, xload(r, o, c4), acc[ub][rr]);
        }
      }
    }
#pragma unroll
    for (int ub = 0; ub < UB; ++ub) {
#pragma unroll
      for (int rr = 0; rr < RT; ++rr) {
#pragma unroll
        for (int off = KL / 2; off > 0; off /= 2) acc[ub][rr] += __shfl_xor_sync(0xffffffffu, acc[ub][rr], off);
      }
    }
#pragma unroll
    for (int ub = 0; ub < UB; ++ub) {
      const int raw = base + ub * NG + group;
      const int o = raw % O, r0 = (raw / O) * RT;
      if (raw < UNITS) {
#pragma unroll
        for (int rr = 0; rr < RT; ++rr) {
          if (rr % KL == kl && r0 + rr < R) store(r0 + rr, o, acc[ub][rr]);
        }
      }
    }
  }
}

// y[r][h][c4] = Σ_t x(r, h, t) · m(h, t)[c4] over float4 columns c4 < C4, t < T.
// Lanes take consecutive c4 (coalesced / conflict-free m rows, broadcast x); a thread keeps
// RT rows of float4 accumulators. No block-wide synchronisation inside.
template <int R, int NH, int C4, int T, int BLOCK, class MLoad, class XVal, class Store>
__device__ __forceinline__ void sg_cols_accum(const MLoad& mload, const XVal& xval, const Store& store) {
  constexpr int RT = sg_rows_per_thread(R, NH * C4, BLOCK);
  constexpr int UNITS = sg_cdiv(R, RT) * NH * C4;
  for (int u = static_cast<int>(threadIdx.x); u < UNITS; u += BLOCK) {
    const int c4 = u % C4, h = (u / C4) % NH, r0 = (u / (C4 * NH)) * RT;
    float4 acc[RT];
#pragma unroll
    for (int rr = 0; rr < RT; ++rr) acc[rr] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll 8
    for (int t = 0; t < T; ++t) {
      const float4 m = mload(h, t, c4);
#pragma unroll
      for (int rr = 0; rr < RT; ++rr) {
        const int r = r0 + rr < R ? r0 + rr : R - 1;
        sg_axpy4(xval(r, h, t), m, acc[rr]);
      }
    }
#pragma unroll
    for (int rr = 0; rr < RT; ++rr) {
      if (r0 + rr < R) store(r0 + rr, h, c4, acc[rr]);
    }
  }
}

// Lanes that split the T terms of one sg_cols_accum_split unit: the largest power of two up
// to 8 (and at most T) with which all units still fit in one pass of the block.
__host__ __device__ constexpr int sg_t_lanes(int units, int t, int block) {
  int l = 1;
  while (l < 8 && l * 2 <= t && units * l * 2 <= block) l *= 2;
  return l;
}

// As sg_cols_accum, with TL adjacent lanes sharing one (row group, head, c4) unit: lane tl
// takes the terms t = tl + TL*k (all loads of a lane independent and in flight together),
// and the group adds its partial sums with shuffles. Uses up to 8x more threads than
// sg_cols_accum when the units are fewer than the block. The pass loop is uniform.
template <int R, int NH, int C4, int T, int BLOCK, class MLoad, class XVal, class Store>
__device__ __forceinline__ void sg_cols_accum_split(const MLoad& mload, const XVal& xval, const Store& store) {
  constexpr int RT = sg_rows_per_thread(R, NH * C4, BLOCK);
  constexpr int UNITS = sg_cdiv(R, RT) * NH * C4;
  constexpr int TL = sg_t_lanes(UNITS, T, BLOCK);
  constexpr int TK = sg_cdiv(T, TL);
  for (int base = 0; base < UNITS * TL; base += BLOCK) {
    const int raw = base + static_cast<int>(threadIdx.x);
    const int lu = raw < UNITS * TL ? raw : UNITS * TL - 1;
    const int u = lu / TL, tl = lu % TL;
    const int c4 = u % C4, h = (u / C4) % NH, r0 = (u / (C4 * NH)) * RT;
    float4 acc[RT];
#pragma unroll
    for (int rr = 0; rr < RT; ++rr) acc[rr] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll 6
    for (int k = 0; k < TK; ++k) {
      const int t = tl + TL * k;
      if (T % TL == 0 || t < T) {
        const float4 m = mload(h, t, c4);
#pragma unroll
        for (int rr = 0; rr < RT; ++rr) {
          const int r = r0 + rr < R ? r0 + rr : R - 1;
          sg_axpy4(xval(r, h, t), m, acc[rr]);
        }
      }
    }
#pragma unroll
    for (int rr = 0; rr < RT; ++rr) {
#pragma unroll
      for (int off = TL / 2; off > 0; off /= 2) {
        acc[rr].x += __shfl_xor_sync(0xffffffffu, acc[rr].x, off);
        acc[rr].y += __shfl_xor_sync(0xffffffffu, acc[rr].y, off);
        acc[rr].z += __shfl_xor_sync(0xffffffffu, acc[rr].z, off);
        acc[rr].w += __shfl_xor_sync(0xffffffffu, acc[rr].w, off);
      }
    }
    if (raw < UNITS * TL && tl == 0) {
#pragma unroll
      for (int rr = 0; rr < RT; ++rr) {
        if (r0 + rr < R) store(r0 + rr, h, c4, acc[rr]);
      }
    }
  }
}

// LayerNorm (eps 1e-5, biased variance, affine) of ROWS shared rows of stride S, in place;
// a warp per row.
template <int ROWS, int D, int S, int BLOCK, int SMEM>
__device__ __forceinline__ void sg_layernorm_rows(float* rows, const float* gamma, const float* beta) {
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  for (int r = warp; r < ROWS; r += BLOCK / 32) {
    float* x = rows + r * S;
    constexpr float inv_d = 1.0f / static_cast<float>(D);
    float sum = 0.0f;
    for (int c = lane; c < D; c += 32) sum += x[c];
    const float mean = sg_warp_sum(sum) * inv_d;
    float var = 0.0f;
    for (int c = lane; c < D; c += 32) {
      const float d = x[c] - mean;
      var = fmaf(d, d, var);
    }
    const float inv = rsqrtf(fmaf(sg_warp_sum(var), inv_d, 1e-5f));
    for (int c = lane; c < D; c += 32) x[c] = (x[c] - mean) * inv * sg_load<SMEM>(gamma + c) + sg_load<SMEM>(beta + c);
  }
}

// Relation MLP of one pair, x = the P floats at pf (global): res[h] = (W2 silu(W0 x + b0) + b2)[h]
// summed over the hidden units k = lane + LANES*kk that this lane (of LANES sharing the
// pair) takes; the caller adds the lanes' results. b2 is added by lane 0.
template <int P, int H, int LANES, int SMEM>
__device__ __forceinline__ void sg_pair_mlp(const float* pf, const float* w0, const float* b0, const float* w2,
                                            const float* b2, int lane, float (&res)[H]) {
  static_assert(P % LANES == 0, "LANES must divide P");
  float x[P];
  if constexpr (P % 4 == 0) {
#pragma unroll
    for (int p = 0; p < P; p += 4) {
      const float4 v = __ldg(reinterpret_cast<const float4*>(pf + p));
      x[p] = v.x;
      x[p + 1] = v.y;
      x[p + 2] = v.z;
      x[p + 3] = v.w;
    }
  } else {
#pragma unroll
    for (int p = 0; p < P; ++p) x[p] = __ldg(pf + p);
  }
#pragma unroll
  for (int h = 0; h < H; ++h) res[h] = lane == 0 ? sg_load<SMEM>(b2 + h) : 0.0f;
#pragma unroll 2
  for (int kk = 0; kk < P / LANES; ++kk) {
    const int k = lane + LANES * kk;
    float a = sg_load<SMEM>(b0 + k);
#pragma unroll
    for (int p = 0; p < P; ++p) a = fmaf(sg_load<SMEM>(w0 + k * P + p), x[p], a);
    // silu; __fdividef is within 2 ulp for denominators in [1, 2^126] and gives the right
    // 0 beyond (a < -87), and it avoids the division slow path's call and stack frame.
    const float s = __fdividef(a, 1.0f + expf(-a));
#pragma unroll
    for (int h = 0; h < H; ++h) res[h] = fmaf(sg_load<SMEM>(w2 + h * P + k), s, res[h]);
  }
}

// Masked softmax of `rows` rows of N scores (stride N) in place; mask_row(r) gives the edge
// mask row of score row r. A warp per row; a row without any edge becomes all zeros.
template <int N, int BLOCK, class MaskRow>
__device__ __forceinline__ void sg_masked_softmax(float* scores, int rows, const MaskRow& mask_row) {
  constexpr int PER_LANE = sg_cdiv(N, 32);
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  for (int r = warp; r < rows; r += BLOCK / 32) {
    float* s = scores + r * N;
    const float* m = mask_row(r);
    float v[PER_LANE];
    bool on[PER_LANE];
    float mx = -3.402823466e38f;
    bool any = false;
#pragma unroll
    for (int t = 0; t < PER_LANE; ++t) {
      const int j = lane + 32 * t;
      on[t] = j < N && m[j] >= 0.5f;
      v[t] = on[t] ? s[j] : 0.0f;
      if (on[t]) mx = fmaxf(mx, v[t]);
      any = any || on[t];
    }
    mx = sg_warp_max(mx);
    const bool row_has_edge = __any_sync(0xffffffffu, any);
    float sum = 0.0f;
#pragma unroll
    for (int t = 0; t < PER_LANE; ++t) {
      v[t] = on[t] ? expf(v[t] - mx) : 0.0f;
      sum += v[t];
    }
    sum = sg_warp_sum(sum);
    const float inv_sum = row_has_edge ? __fdividef(1.0f, sum) : 0.0f;  // sum in [1, N]
#pragma unroll
    for (int t = 0; t < PER_LANE; ++t) {
      const int j = lane + 32 * t;
      if (j < N) s[j] = v[t] * inv_sum;
    }
  }
}

// Body of sg_fused (BIAS_IN = 0: computes the pair bias of its rows) and sg_split_attention
// (BIAS_IN = 1: reads it from the scratch `bias`, layout (B, H, N, N)). One block per
// (batch b, tile of QT query rows starting at i0); rows past N are computed on row N-1 and
// not stored. Shared memory as sg_attention_smem_bytes. With SMEM_W the four projection
// weights arrive by cp.async in four groups, waited for just before their first use.
template <int B, int N, int D, int H, int P, int QT, int BLOCK, int SMEM_W, int BIAS_IN, int ILP = 0, int L1PF = 0>
__device__ __forceinline__ void sg_attention_block(const float* __restrict__ nodes, const float* __restrict__ pair_feats,
                                                   const float* __restrict__ edge_mask, const float* __restrict__ gamma,
                                                   const float* __restrict__ beta, const float* __restrict__ wq,
                                                   const float* __restrict__ wk, const float* __restrict__ wv,
                                                   const float* __restrict__ w0, const float* __restrict__ b0,
                                                   const float* __restrict__ w2, const float* __restrict__ b2,
                                                   const float* __restrict__ wo, const float* __restrict__ bias,
                                                   float* __restrict__ out) {
  static_assert(D % H == 0 && D % 4 == 0, "D must be a multiple of heads and of 4");
  constexpr int HD = D / H;
  constexpr int S = sg_row_stride(D);
  constexpr int NT = sg_cdiv(N, QT);
  constexpr int WS = SMEM_W ? S : D;  // weight row stride where the weights are read
  extern __shared__ float4 sg_smem[];
  if (blockDim.x != BLOCK || sg_dynamic_smem_size() < static_cast<unsigned>(sg_attention_smem_bytes(N, D, H, QT, SMEM_W))) {
    return;
  }
  float* hn = reinterpret_cast<float*>(sg_smem);  // N x S
  float* qc = hn + N * S;                         // QT x S: q, later ctx
  float* qk = qc + QT * S;                        // (QT x H) x S: Wk_hᵀ q_h, later Σ_j a hn[j]
  float* sc = qk + QT * H * S;                    // (H x QT) x N: bias, scores, attention
  float* msk = sc + sg_round4(H * QT * N);        // QT x N
  float* sw = msk + sg_round4(QT * N);            // SMEM_W: gamma, beta, Wq, Wk, Wv, Wout
  const int b = static_cast<int>(blockIdx.x) / NT;
  const int i0 = (static_cast<int>(blockIdx.x) % NT) * QT;
  const auto row_of = [&](int r) { return i0 + r < N ? i0 + r : N - 1; };
  const int tid = static_cast<int>(threadIdx.x);

  // Group 0: node rows, mask rows (and the bias tile, and gamma/beta); then one group per weight.
  sg_copy_rows<N, D, S, BLOCK>(hn, [&](int r) { return nodes + (b * N + r) * D; });
  for (int idx = tid; idx < QT * N; idx += BLOCK) {
    sg_copy4(msk + idx, edge_mask + (b * N + row_of(idx / N)) * N + idx % N);
  }
  if constexpr (BIAS_IN != 0) {
    for (int idx = tid; idx < H * QT * N; idx += BLOCK) {
      const int h = idx / (QT * N), r = (idx / N) % QT, j = idx % N;
      sg_copy4(sc + idx, bias + ((b * H + h) * N + row_of(r)) * N + j);
    }
  }
  const float* g_gamma = gamma;
  const float* g_beta = beta;
  const float* g_wq = wq;
  const float* g_wk = wk;
  const float* g_wv = wv;
  const float* g_wo = wo;
  if constexpr (SMEM_W != 0) {
    float* s_gamma = sw;
    float* s_beta = sw + D;
    float* s_w = sw + 2 * D;
    sg_copy_rows<1, D, D, BLOCK>(s_gamma, [&](int) { return gamma; });
    sg_copy_rows<1, D, D, BLOCK>(s_beta, [&](int) { return beta; });
    sg_copy_commit();
    sg_copy_rows<D, D, S, BLOCK>(s_w, [&](int r) { return wq + r * D; });
    sg_copy_commit();
    sg_copy_rows<D, D, S, BLOCK>(s_w + D * S, [&](int r) { return wk + r * D; });
    sg_copy_commit();
    sg_copy_rows<D, D, S, BLOCK>(s_w + 2 * D * S, [&](int r) { return wv + r * D; });
    sg_copy_commit();
    sg_copy_rows<D, D, S, BLOCK>(s_w + 3 * D * S, [&](int r) { return wo + r * D; });
    sg_copy_commit();
    g_gamma = s_gamma;
    g_beta = s_beta;
    g_wq = s_w;
    g_wk = s_w + D * S;
    g_wv = s_w + 2 * D * S;
    g_wo = s_w + 3 * D * S;
  } else {
    sg_copy_commit();
    // Warm L2 with the weights (cold after a flush); the grid shares the prefetching.
    constexpr int LINES = sg_cdiv(D * D, 32);  // 128-byte lines per weight
    for (int l = static_cast<int>(blockIdx.x) * BLOCK + tid; l < 4 * LINES; l += static_cast<int>(gridDim.x) * BLOCK) {
      const float* w = l < LINES ? wq : (l < 2 * LINES ? wk : (l < 3 * LINES ? wv : wo));
      sg_prefetch_l2(w + (l % LINES) * 32);
    }
    // L1PF: also pull this block's Wq and Wk into its SM's L1 while the LayerNorm runs, so the
    // first two projections read L1 instead of L2.
    if constexpr (L1PF != 0) {
      for (int l = tid; l < 2 * LINES; l += BLOCK) sg_prefetch_l1((l < LINES ? wq : wk) + (l % LINES) * 32);
    }
  }
  const float* const w_q = g_wq;
  const float* const w_k = g_wk;
  const float* const w_v = g_wv;
  const float* const w_o = g_wo;

  // Pair bias of this block's rows while the copies are in flight: sc[h][r][j]. LPP adjacent
  // lanes share a pair (its hidden units split among them) so the few pairs of a small tile
  // still occupy the block; the pass loop is uniform, so the shuffles are full-warp.
  if constexpr (BIAS_IN == 0) {
    constexpr int PAIRS = QT * N;
    constexpr int LPP = sg_pair_lanes(PAIRS, P, BLOCK);
    for (int base = 0; base < PAIRS * LPP; base += BLOCK) {
      const int raw = base + tid;
      const int u = raw < PAIRS * LPP ? raw : PAIRS * LPP - 1;
      const int r = (u / LPP) / N, j = (u / LPP) % N, kl = u % LPP;
      float res[H];
      sg_pair_mlp<P, H, LPP, 0>(pair_feats + ((b * N + row_of(r)) * N + j) * P, w0, b0, w2, b2, kl, res);
#pragma unroll
      for (int h = 0; h < H; ++h) {
#pragma unroll
        for (int off = LPP / 2; off > 0; off /= 2) res[h] += __shfl_xor_sync(0xffffffffu, res[h], off);
      }
      if (raw < PAIRS * LPP) {
#pragma unroll
        for (int h = 0; h < H; ++h) {
          if (h % LPP == kl) sc[(h * QT + r) * N + j] = res[h];
        }
      }
    }
  }

  sg_copy_wait<(SMEM_W ? 4 : 0)>();
  __syncthreads();
  sg_layernorm_rows<N, D, S, BLOCK, SMEM_W>(hn, g_gamma, g_beta);
  sg_copy_wait<(SMEM_W ? 3 : 0)>();
  __syncthreads();

  // q[r] = scale · hn[row r]·Wqᵀ
  const float scale = 1.0f / sqrtf(static_cast<float>(HD));
  sg_rows_dot<QT, D, D, BLOCK>([&](int o, int c4) { return sg_load4<SMEM_W>(w_q + o * WS + 4 * c4); },
                               [&](int r, int, int c4) { return *reinterpret_cast<const float4*>(hn + row_of(r) * S + 4 * c4); },
                               [&](int r, int o, float y) { qc[r * S + o] = y * scale; });
  sg_copy_wait<(SMEM_W ? 2 : 0)>();
  __syncthreads();

  // qk[r][h] = Wk_hᵀ q_h[r]: D values per (row, head)
  {
    const auto mload = [&](int h, int t, int c4) { return sg_load4<SMEM_W>(w_k + (h * HD + t) * WS + 4 * c4); };
    const auto xval = [&](int r, int h, int t) { return qc[r * S + h * HD + t]; };
    const auto store = [&](int r, int h, int c4, float4 y) { *reinterpret_cast<float4*>(qk + (r * H + h) * S + 4 * c4) = y; };
    if constexpr (ILP != 0) {
      sg_cols_accum_split<QT, H, D / 4, HD, BLOCK>(mload, xval, store);
    } else {
      sg_cols_accum<QT, H, D / 4, HD, BLOCK>(mload, xval, store);
    }
  }
  __syncthreads();

  // sc[h][r][j] += qk[r][h]·hn[j]
  if constexpr (ILP != 0) {
    // SL adjacent lanes share one score, each taking every SL-th float4 of the row.
    constexpr int SU = H * QT * N;
    constexpr int SL = sg_t_lanes(SU, D / 4, BLOCK);
    for (int base = 0; base < SU * SL; base += BLOCK) {
      const int raw = base + tid;
      const int lu = raw < SU * SL ? raw : SU * SL - 1;
      const int u = lu / SL, sl = lu % SL;
      const int j = u % N, r = (u / N) % QT, h = u / (N * QT);
      const float4* x = reinterpret_cast<const float4*>(qk + (r * H + h) * S);
      const float4* y = reinterpret_cast<const float4*>(hn + j * S);
      float acc = 0.0f;
#pragma unroll
      for (int k = 0; k < sg_cdiv(D / 4, SL); ++k) {
        const int c4 = sl + SL * k;
        if ((D / 4) % SL == 0 || c4 < D / 4) acc = sg_dot4(x[c4], y[c4], acc);
      }
#pragma unroll
      for (int off = SL / 2; off > 0; off /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, off);
      if (raw < SU * SL && sl == 0) sc[u] += acc;
    }
  } else {
    for (int u = tid; u < H * QT * N; u += BLOCK) {
      const int j = u % N, r = (u / N) % QT, h = u / (N * QT);
      const float4* x = reinterpret_cast<const float4*>(qk + (r * H + h) * S);
      const float4* y = reinterpret_cast<const float4*>(hn + j * S);
      float acc = 0.0f;
#pragma unroll 8
      for (int c4 = 0; c4 < D / 4; ++c4) acc = sg_dot4(x[c4], y[c4], acc);
      sc[u] += acc;
    }
  }
  __syncthreads();
  sg_masked_softmax<N, BLOCK>(sc, H * QT, [&](int row) { return msk + (row % QT) * N; });
  sg_copy_wait<(SMEM_W ? 1 : 0)>();
  __syncthreads();

  // qk[r][h] = Σ_j a[h][r][j] hn[j]
  {
    const auto mload = [&](int, int t, int c4) { return *reinterpret_cast<const float4*>(hn + t * S + 4 * c4); };
    const auto xval = [&](int r, int h, int t) { return sc[(h * QT + r) * N + t]; };
    const auto store = [&](int r, int h, int c4, float4 y) { *reinterpret_cast<float4*>(qk + (r * H + h) * S + 4 * c4) = y; };
    if constexpr (ILP != 0) {
      sg_cols_accum_split<QT, H, D / 4, N, BLOCK>(mload, xval, store);
    } else {
      sg_cols_accum<QT, H, D / 4, N, BLOCK>(mload, xval, store);
    }
  }
  __syncthreads();

  // ctx[r][o] = Wv[o]·qk[r][head of o]
  sg_rows_dot<QT, D, D, BLOCK>([&](int o, int c4) { return sg_load4<SMEM_W>(w_v + o * WS + 4 * c4); },
                               [&](int r, int o, int c4) { return *reinterpret_cast<const float4*>(qk + (r * H + o / HD) * S + 4 * c4); },
                               [&](int r, int o, float y) { qc[r * S + o] = y; });
  sg_copy_wait<0>();
  __syncthreads();

  // out = nodes + ctx·Woutᵀ
  sg_rows_dot<QT, D, D, BLOCK>([&](int o, int c4) { return sg_load4<SMEM_W>(w_o + o * WS + 4 * c4); },
                               [&](int r, int, int c4) { return *reinterpret_cast<const float4*>(qc + r * S + 4 * c4); },
                               [&](int r, int o, float y) {
                                 if (i0 + r < N) {
                                   const int e = (b * N + i0 + r) * D + o;
                                   out[e] = __ldg(nodes + e) + y;
                                 }
                               });
}

// Pair bias of pair number `pair` (pairs ordered (b, i, j)) into bias (B, H, N, N).
template <int N, int H, int P, int SMEM>
__device__ __forceinline__ void sg_pair_bias_one(int pair, const float* __restrict__ pair_feats, const float* w0,
                                                 const float* b0, const float* w2, const float* b2,
                                                 float* __restrict__ bias) {
  const int b = pair / (N * N), ij = pair % (N * N);
  float res[H];
  sg_pair_mlp<P, H, 1, SMEM>(pair_feats + pair * P, w0, b0, w2, b2, 0, res);
#pragma unroll
  for (int h = 0; h < H; ++h) bias[(b * H + h) * N * N + ij] = res[h];
}

}  // namespace tune_kernels

// ---------------------------------------------------------------------------------------
// Tuned variants: strategies fused and split.

// strategy fused: one launch. Grid B * cdiv(N, QT), block BLOCK, dynamic smem attn_smem.
// L1PF = 1 (SMEM_W = 0): Wq and Wk are prefetched into L1 at the start.
// ILP = 1: the Wk fold, the scores and the attention-weighted sum of hn split each unit's
// terms over up to 8 adjacent lanes (more threads, more loads in flight, shorter chains).
template <int B, int N, int D, int H, int P, int QT, int BLOCK, int SMEM_W, int ILP, int L1PF = 0>
__global__ void __launch_bounds__(BLOCK, 1)
    sg_fused(const float* __restrict__ nodes, const float* __restrict__ pair_feats, const float* __restrict__ edge_mask,
             const float* __restrict__ gamma, const float* __restrict__ beta, const float* __restrict__ wq,
             const float* __restrict__ wk, const float* __restrict__ wv, const float* __restrict__ w0,
             const float* __restrict__ b0, const float* __restrict__ w2, const float* __restrict__ b2,
             const float* __restrict__ wo, float* __restrict__ out) {
  tune_kernels::sg_attention_block<B, N, D, H, P, QT, BLOCK, SMEM_W, 0, ILP, L1PF>(nodes, pair_feats, edge_mask, gamma, beta, wq,
                                                                        wk, wv, w0, b0, w2, b2, wo, nullptr, out);
}

// strategy fused, mapping head: one launch, grid B * N * H in clusters of H blocks. The cluster
// of (batch b, query row i) has one block per head h, and block h computes only head h: its
// HD rows of Wq, Wk, Wv and HD columns of Wout (a quarter of the weight bytes of a
// query-row block at H = 4, on H times as many SMs), the pair bias of head h, and its share
// Σ_t Wout[o][h·HD + t] ctx_h[t] of every output o. The cluster adds the H shares through
// distributed shared memory: block h writes the outputs o in [h·HD, (h+1)·HD), summing the
// shares in rank order (deterministic). Every block of a cluster takes the same branches, so
// none leaves a cluster barrier waiting.
template <int B, int N, int D, int H, int P, int BLOCK>
__global__ void __cluster_dims__(H, 1, 1) __launch_bounds__(BLOCK)
    sg_fused_head(const float* __restrict__ nodes, const float* __restrict__ pair_feats,
                  const float* __restrict__ edge_mask, const float* __restrict__ gamma,
                  const float* __restrict__ beta, const float* __restrict__ wq, const float* __restrict__ wk,
                  const float* __restrict__ wv, const float* __restrict__ w0, const float* __restrict__ b0,
                  const float* __restrict__ w2, const float* __restrict__ b2, const float* __restrict__ wo,
                  float* __restrict__ out) {
  namespace k = tune_kernels;
  constexpr int HD = D / H;
  constexpr int S = k::sg_row_stride(D);
  static_assert(D % H == 0 && HD % 4 == 0 && D % 4 == 0, "needs D / heads a multiple of 4");
  static_assert(H >= 1 && H <= 8, "a portable cluster has at most 8 blocks");
  extern __shared__ float4 sg_smem[];
  if (blockDim.x != BLOCK || k::sg_dynamic_smem_size() < static_cast<unsigned>(k::sg_fused_head_smem_bytes(N, D, H))) {
    return;
  }
  float* hn = reinterpret_cast<float*>(sg_smem);  // N x S
  float* qh = hn + N * S;                         // HD: q_h, scaled
  float* ctx = qh + k::sg_round4(HD);             // HD: ctx_h
  float* u = ctx + k::sg_round4(HD);              // D: Wk_hᵀ q_h, later Σ_j a[j] hn[j]
  float* sc = u + S;                              // N: bias, scores, attention
  float* msk = sc + k::sg_round4(N);              // N: edge mask row i
  float* part = msk + k::sg_round4(N);            // D: this head's share of out[b, i, :]
  const int h = static_cast<int>(k::sg_cluster_rank());
  const int b = static_cast<int>(blockIdx.x) / H / N, i = static_cast<int>(blockIdx.x) / H % N;
  const int tid = static_cast<int>(threadIdx.x);

  k::sg_copy_rows<N, D, S, BLOCK>(hn, [&](int r) { return nodes + (b * N + r) * D; });
  for (int j = tid; j < N; j += BLOCK) k::sg_copy4(msk + j, edge_mask + (b * N + i) * N + j);
  k::sg_copy_commit();
  // Warm L2 with this head's weight rows (cold after a flush); the cluster's blocks share it.
  {
    constexpr int LINES = k::sg_cdiv(HD * D, 32);
    for (int l = tid; l < 3 * LINES; l += BLOCK) {
      const float* w = l < LINES ? wq : (l < 2 * LINES ? wk : wv);
      k::sg_prefetch_l2(w + h * HD * D + (l % LINES) * 32);
    }
  }

  // Pair bias of head h for the N pairs (i, j), LPP lanes per pair, while the copies fly.
  {
    constexpr int LPP = k::sg_pair_lanes(N, P, BLOCK);
    for (int base = 0; base < N * LPP; base += BLOCK) {
      const int raw = base + tid;
      const int uu = raw < N * LPP ? raw : N * LPP - 1;
      const int j = uu / LPP, kl = uu % LPP;
      float res[H];
      k::sg_pair_mlp<P, H, LPP, 0>(pair_feats + ((b * N + i) * N + j) * P, w0, b0, w2, b2, kl, res);
      float mine = 0.0f;
#pragma unroll
      for (int hh = 0; hh < H; ++hh) {
        float v = res[hh];
#pragma unroll
        for (int off = LPP / 2; off > 0; off /= 2) v += __shfl_xor_sync(0xffffffffu, v, off);
        if (hh == h) mine = v;
      }
      if (raw < N * LPP && kl == 0) sc[j] = mine;
    }
  }
  k::sg_copy_wait<0>();
  __syncthreads();
  k::sg_layernorm_rows<N, D, S, BLOCK, 0>(hn, gamma, beta);
  __syncthreads();

  // q_h[t] = scale · hn[i]·Wq[h·HD + t]
  const float scale = 1.0f / sqrtf(static_cast<float>(HD));
  k::sg_rows_dot<1, HD, D, BLOCK>(
      [&](int o, int c4) { return __ldg(reinterpret_cast<const float4*>(wq + (h * HD + o) * D) + c4); },
      [&](int, int, int c4) { return *reinterpret_cast<const float4*>(hn + i * S + 4 * c4); },
      [&](int, int o, float y) { qh[o] = y * scale; });
  __syncthreads();
  // u = Wk_hᵀ q_h
  k::sg_cols_accum<1, 1, D / 4, HD, BLOCK>(
      [&](int, int t, int c4) { return __ldg(reinterpret_cast<const float4*>(wk + (h * HD + t) * D) + c4); },
      [&](int, int, int t) { return qh[t]; },
      [&](int, int, int c4, float4 y) { *reinterpret_cast<float4*>(u + 4 * c4) = y; });
  __syncthreads();
  // sc[j] += u·hn[j], a warp per j
  {
    const int warp = tid / 32, lane = tid % 32;
    for (int j = warp; j < N; j += BLOCK / 32) {
      float acc = 0.0f;
      for (int c = lane; c < D; c += 32) acc = fmaf(u[c], hn[j * S + c], acc);
      acc = k::sg_warp_sum(acc);
      if (lane == 0) sc[j] += acc;
    }
  }
  __syncthreads();
  k::sg_masked_softmax<N, BLOCK>(sc, 1, [&](int) { return msk; });
  __syncthreads();
  // u = Σ_j a[j] hn[j]
  k::sg_cols_accum<1, 1, D / 4, N, BLOCK>(
      [&](int, int t, int c4) { return *reinterpret_cast<const float4*>(hn + t * S + 4 * c4); },
      [&](int, int, int t) { return sc[t]; },
      [&](int, int, int c4, float4 y) { *reinterpret_cast<float4*>(u + 4 * c4) = y; });
  __syncthreads();
  // ctx_h[t] = Wv[h·HD + t]·u
  k::sg_rows_dot<1, HD, D, BLOCK>(
      [&](int o, int c4) { return __ldg(reinterpret_cast<const float4*>(wv + (h * HD + o) * D) + c4); },
      [&](int, int, int c4) { return *reinterpret_cast<const float4*>(u + 4 * c4); },
      [&](int, int o, float y) { ctx[o] = y; });
  __syncthreads();
  // part[o] = Σ_t Wout[o][h·HD + t] ctx_h[t]
  k::sg_rows_dot<1, D, HD, BLOCK>(
      [&](int o, int c4) { return __ldg(reinterpret_cast<const float4*>(wo + o * D + h * HD) + c4); },
      [&](int, int, int c4) { return *reinterpret_cast<const float4*>(ctx + 4 * c4); },
      [&](int, int o, float y) { part[o] = y; });
  k::sg_cluster_sync();
  for (int t = tid; t < HD; t += BLOCK) {
    const int o = h * HD + t;
    float acc = 0.0f;
#pragma unroll
    for (int r = 0; r < H; ++r) acc += k::sg_cluster_load(part + o, static_cast<unsigned>(r));
    const int e = (b * N + i) * D + o;
    out[e] = __ldg(nodes + e) + acc;
  }
  k::sg_cluster_sync();  // no block leaves while another still reads its shared memory
}

// strategy fused, mapping cluster: one launch, grid B * H * R in clusters of H * R blocks, a
// cluster per batch. Block (h, r) (rank h * R + r) owns head h and the RN = cdiv(N, R) rows
// starting at r * RN; no work is repeated across blocks:
//   1. at the start it puts all its loads in flight: its node rows (also the residual) and mask
//      rows, head h's rows of Wq, Wk, Wv (cp.async, or with BULK the bulk-copy engine), the
//      relation MLP, gamma and beta, its pairs' features, and its share of Wout's head-h rows
//      (registers);
//   2. LayerNorm of its rows, stored as TF32 (hi, lo) pairs, on the warps without MLP work;
//      the relation MLP (all heads) of pairs (its rows) x (column chunk h) on the last warps,
//      on the tensor cores when P % 8 == 0; each head's bias stored into block (head, r)
//      through distributed shared memory. With OVERLAP the projection warps (LayerNorm,
//      weight copies) meet at a named barrier of their own and go on to step 3 while the MLP
//      warps still run;
//   3. q_h, k_h, v_h of its rows on the tensor cores (mma.sync m16n8k8, 3xTF32: hi*hi + hi*lo +
//      lo*hi, near FP32), a warp per NTILE column tiles (sharing its A fragments), each tile's
//      k-range split over KSPLIT warps (partial sums added in a fixed order), k_h and v_h stored
//      into the R blocks of head h;  [exchange 1]
//   4. a warp per query row: scores, masked softmax and ctx_h in registers, ctx_h stored into the
//      ctx rows of the H blocks of row split r (ATTN 0: a lane per key; 2 (attnquad): a lane per
//      key and quarter of the head's columns);  [exchange 2]
//   5. out[rows][h HD, (h+1) HD) = nodes + ctx · Woutᵀ, Wout from the registers of step 1
//      (OUT 0: FP32 FMAs, KLO lanes per output; 1 (outmma): 3xTF32 MMAs, four warps per row
//      tile, a k-range each; 2 (outbfly): FP32 FMAs, a lane per k, the sums meeting in a
//      transposed butterfly).
// An exchange is a cluster barrier (ASYNC == 0: plain remote stores, then barrier.cluster with
// release/acquire), or (ASYNC == 1) remote st.async stores that complete bytes on the receiving
// block's mbarrier, on which the receiver waits for exactly the bytes it is sent: no fence, and
// no block waits for blocks that send it nothing.
// A block writes another's shared memory only after the cluster's first wait (all blocks
// running), and every block receives all its bytes before it ends, so none leaves while its
// memory can still be written. With ASYNC == 0 every value a barrier publishes is written
// before the writer arrives at it (a value written between a thread's arrive and its wait
// would race with the readers after the wait).
template <int B, int N, int D, int H, int P, int R, int BLOCK, int BULK, int KSPLIT = 1, int ASYNC = 0, int NTILE = 1,
          int OVERLAP = 0, int OUT = 0, int ATTN = 0>
__global__ void __cluster_dims__(H * R, 1, 1) __launch_bounds__(BLOCK, 1)
    sg_cluster(const float* __restrict__ nodes, const float* __restrict__ pair_feats,
               const float* __restrict__ edge_mask, const float* __restrict__ gamma, const float* __restrict__ beta,
               const float* __restrict__ wq, const float* __restrict__ wk, const float* __restrict__ wv,
               const float* __restrict__ w0, const float* __restrict__ b0, const float* __restrict__ w2,
               const float* __restrict__ b2, const float* __restrict__ wo, float* __restrict__ out) {
  namespace k = tune_kernels;
  using L = k::SgClusterLayout<N, D, H, P, R, KSPLIT>;
  constexpr int HD = D / H;
  constexpr int S = L::S, HS = L::HS, RN = L::RN, PS = L::PS, JC = L::JC;
  constexpr int NW = BLOCK / 32;
  constexpr int KLO = k::sg_reg_lanes(HD, D, BLOCK);
  constexpr int WO4 = D / 4 / KLO;  // Wout float4s a thread holds
  constexpr int PAIRS = RN * JC, PPT = k::sg_cdiv(PAIRS, BLOCK);  // pairs, pairs per thread
  constexpr int NT = k::sg_cdiv(HD, 8), MT = k::sg_cdiv(RN, 16);   // mma tiles of the projections
  constexpr int KST = D / 8 / KSPLIT;                              // k-steps of one projection task
  // Relation MLP tiles of 16 pairs on the last MW warps (with kMlpHalves two warps per tile, half
  // the hidden units each); the LayerNorm rows on the first LNW warps (all when no warp is free).
  // Projection tasks: NB column tiles of one matrix, one row tile, one k-range each (the A
  // fragments a task loads serve its NB tiles).
  constexpr int NB = NTILE < NT ? NTILE : NT, NG = k::sg_cdiv(NT, NB), PW = 3 * MT * NG * KSPLIT;
  constexpr int UT = k::sg_cdiv(PAIRS, 16);
  // OVERLAP: the first PW warps take one projection task each and the weight copies; the first
  // LNW warps (see below) take the LayerNorm and meet at a named barrier of their own; the last
  // UT warps run the MLP meanwhile (those among the LayerNorm warps after it).
  constexpr bool kOv = OVERLAP != 0 && L::kMlpMma && PW + UT <= NW;
  constexpr bool kMlpHalves = !kOv && L::kMlpHalves && 2 * UT <= NW && UT <= 13;
  constexpr int MW = L::kMlpMma ? k::sg_min(kMlpHalves ? 2 * UT : UT, NW) : 0;
  // With kOv the LayerNorm takes the first max(RN, PW) warps (a row each when RN <= NW), which
  // then meet at the projection barrier: the projection warps start once every row is done; the
  // other warps go straight on to the MLP.
  constexpr int LNW = kOv ? k::sg_min(NW, RN > PW ? RN : PW) : (NW - MW > 0 ? NW - MW : NW);
  constexpr int kProjBar = 15;  // named barrier of the projection warps (the MLP halves use 1 .. UT)
  // OUT == 1: out = ctx · Woutᵀ on the tensor cores (3xTF32), KW warps per 16-row tile, a k-range
  // each with its Wout fragments in registers; the partial fragments meet at named barrier 14
  // (through the LayerNorm buffer, free by then) and the tile's last warp adds them in k order.
  constexpr int KW = 4, KSW = D / 8 / KW, kOutBar = 14;
  constexpr bool kOutMma = OUT == 1 && (D / 8) % KW == 0 && MT * KW <= NW && MT * (KW - 1) * NT * 128 <= 2 * RN * S;
  // OUT == 2: out = ctx · Woutᵀ with FP32 FMAs, a warp per (OPW outputs, RPW = 32 / OPW rows):
  // lane l keeps Wout[o][l + 32 s] (s < KS) of its OPW outputs in registers (coalesced loads),
  // reads ctx[i][l + 32 s] (4-byte loads, no broadcast), and the warp's 32 sums (row OPW + o) over
  // its lanes meet in one transposed butterfly (31 shuffles), after which lane l holds sum l. The
  // row bits need no selects: slot row q of lane l holds ctx row q ^ (l / OPW), so at the levels
  // 16 .. OPW each lane sends its upper slots and its partner's lower slots hold the same sums;
  // the output levels OPW / 2 .. 1 select (2 OPW - 2 selects). The last W5 warps: OPW = 8 when
  // the registers allow (8 KS <= kSgRegWeights), else 4 (D <= 48 KLO <= 384 leaves KS <= 12).
  constexpr int KS5 = k::sg_cdiv(D, 32);
  constexpr int OPW = 8 * KS5 <= k::kSgRegWeights ? 8 : 4;
  constexpr int RPW = 32 / OPW, NOG = k::sg_cdiv(HD, OPW), NRG = k::sg_cdiv(RN, RPW);
  constexpr int RGW = k::sg_min(NRG, NW / NOG > 0 ? NW / NOG : 1), W5 = NOG * RGW;
  constexpr bool kOutBfly = OUT == 2;
  static_assert(!kOutBfly || (NOG <= NW && OPW * KS5 <= k::kSgRegWeights), "the block must hold Wout's head rows");
  const auto proj_sync = [&] {
    if constexpr (kOv) {
      asm volatile("bar.sync %0, %1;" ::"n"(kProjBar), "n"(PW * 32) : "memory");
    } else {
      __syncthreads();
    }
  };
  static_assert(D % H == 0 && D % 8 == 0 && P % 4 == 0, "needs D a multiple of heads and of 8, P of 4");
  static_assert((D / 8) % KSPLIT == 0, "KSPLIT must divide D / 8");
  static_assert(H * R <= 8, "a portable cluster has at most 8 blocks");
  static_assert(HD * KLO <= BLOCK && 4 * WO4 <= k::kSgRegWeights, "the block must hold Wout's head rows");
  // No check of blockDim and the dynamic shared memory size here (tune launches the config's):
  // reading them at the start costs a constant-cache miss on a cold launch before any load.
  extern __shared__ float4 sg_smem[];
  float* const sm = reinterpret_cast<float*>(sg_smem);
  float* xs = sm + L::kX;      // RN x S: own node rows
  float2* xh = reinterpret_cast<float2*>(sm + L::kXh);  // RN x S: their LayerNorm, TF32 (hi, lo)
  float* ws = sm + L::kW;      // 3 HD x S: rows h HD + t of Wq, Wk, Wv
  float* cx = sm + L::kCtx;    // RN x S: ctx rows, a head from each block of the row split
  float* qs = sm + L::kQ;      // RN x HS: scale · q_h
  float* ks = sm + L::kK;      // N x HS: k_h of all rows, from the R blocks of head h
  float* vs = sm + L::kV;      // N x HS
  float* bs = sm + L::kBias;   // RN x N: bias of head h, from the H blocks of row split r
  float* msk = sm + L::kMask;  // RN x N
  float* part = sm + L::kPart; // KSPLIT > 1: KSPLIT x 3 x RN x HD
  float* mw0 = sm + L::kW0;    // P x PS
  float* mb0 = sm + L::kB0;    // P
  float* mw2 = sm + L::kW2;    // H x P, then b2
  float* gb = sm + L::kGB;     // gamma, beta
  float* pfs = sm + L::kPF;    // L::kMlpMma: pair features, PAIRS x PS
  float* bar = sm + L::kBar;   // mbarriers: BULK weight copies; ASYNC: exchange 1, exchange 2
  float* const bar_x1 = bar + 2;
  float* const bar_x2 = bar + 4;
  const int rank = static_cast<int>(k::sg_cluster_rank());
  const int h = rank / R, r = rank % R;
  const int b = static_cast<int>(blockIdx.x) / (H * R);
  const int i0 = r * RN;
  const int rows = N - i0 < RN ? (N - i0 > 0 ? N - i0 : 0) : RN;  // own rows inside the batch
  const auto row_of = [&](int i) { return i0 + i < N ? i0 + i : N - 1; };
  // pair u of this block: own row u / JC, column h JC + u % JC (clamped; stored only if < N)
  const auto pair_src = [&](int u) {
    const int j = h * JC + u % JC;
    return pair_feats + ((b * N + row_of(u / JC)) * N + (j < N ? j : N - 1)) * P;
  };
  const int tid = static_cast<int>(threadIdx.x), warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, t4 = lane % 4;  // mma lane coordinates
  // Stores of exchange 1 (bias, k, v) and exchange 2 (ctx) into block `to` (this one included:
  // with ASYNC a plain store, published by the block's own barriers).
  const auto put = [&](float* p, int to, float v, float* xbar) {
    if constexpr (ASYNC != 0) {
      if (to == rank) {
        *p = v;
      } else {
        k::sg_st_async(p, static_cast<unsigned>(to), v, xbar);
      }
    } else {
      k::sg_cluster_store(p, static_cast<unsigned>(to), v);
    }
  };
  const auto put1 = [&](float* p, int to, float v) { put(p, to, v, bar_x1); };
  const auto put2 = [&](float* p, int to, float v) { put(p, to, v, bar_x2); };

  if constexpr (ASYNC != 0) {
    if (tid == 0) {  // the bytes the other blocks send: bias RN x N and k, v N x HD; ctx rows x D
      const int own_cols = N - h * JC < JC ? (N - h * JC > 0 ? N - h * JC : 0) : JC;  // this block's bias columns
      k::sg_mbar_init(bar_x1, 1);
      k::sg_mbar_expect_bytes(bar_x1, static_cast<unsigned>(4 * (RN * (N - own_cols) + 2 * (N - rows) * HD)));
      k::sg_mbar_init(bar_x2, 1);
      k::sg_mbar_expect_bytes(bar_x2, static_cast<unsigned>(4 * rows * (D - HD)));
    }
  }
  k::sg_cluster_arrive_relaxed();
  // Step 1. Group 0: what step 2 needs; then the q/k/v weights (group 1, or the bulk copies).
  // A warp per row; each copy starts on the warp after the previous one's last row.
  constexpr int F_GB = RN, F_W0 = F_GB + 2, F_B0 = F_W0 + P, F_W2 = F_B0 + 1, F_MSK = F_W2 + H, F_PF = F_MSK + RN;
  constexpr int F_W = F_PF + (L::kMlpMma ? RN : 0);
  k::sg_copy_rows_warp<RN, D, S, BLOCK, 0>(xs, [&](int i) { return nodes + (b * N + row_of(i)) * D; });
  k::sg_copy_rows_warp<2, D, D, BLOCK, F_GB>(gb, [&](int q) { return q == 0 ? gamma : beta; });
  k::sg_copy_rows_warp<P, P, PS, BLOCK, F_W0>(mw0, [&](int q) { return w0 + q * P; });
  k::sg_copy_rows_warp<1, P, P, BLOCK, F_B0>(mb0, [&](int) { return b0; });
  k::sg_copy_rows_warp<H, P, P, BLOCK, F_W2>(mw2, [&](int q) { return w2 + q * P; });
  if (tid >= BLOCK - H) k::sg_copy4(mw2 + H * P + (tid - (BLOCK - H)), b2 + (tid - (BLOCK - H)));
  if constexpr (N % 4 == 0) {
    k::sg_copy_rows_warp<RN, N, N, BLOCK, F_MSK>(msk, [&](int i) { return edge_mask + (b * N + row_of(i)) * N; });
  } else {
    for (int idx = tid; idx < RN * N; idx += BLOCK) k::sg_copy4(msk + idx, edge_mask + (b * N + row_of(idx / N)) * N + idx % N);
  }
  if constexpr (L::kMlpMma) {
    // own row i: its JC pairs (P floats each, clamped to column N - 1) into rows of stride PS
    constexpr int P4 = P / 4;
    k::sg_rows_by_warp<RN, JC * P4, BLOCK, F_PF>([&](int i, int ch) {
      const int u = i * JC + ch / P4;
      k::sg_copy16(pfs + u * PS + ch % P4 * 4, pair_src(u) + ch % P4 * 4);
    });
  }
  k::sg_copy_commit();
  const auto w_row = [&](int o) { return (o < HD ? wq : (o < 2 * HD ? wk : wv)) + (h * HD + o % HD) * D; };
  if constexpr (BULK != 0) {
    // warp 0 starts the bulk copies of the weight rows (no load unit slots held, no block barrier)
    if (warp == 0) {
      if (lane == 0) {
        k::sg_mbar_init(bar, 1);
        k::sg_mbar_expect_bytes(bar, 3u * HD * D * 4u);
      }
      __syncwarp();
      for (int o = lane; o < 3 * HD; o += 32) k::sg_bulk_copy(ws + o * S, w_row(o), D * 4u, bar);
    }
  } else {
    {  // a call per matrix: head h's source rows are consecutive, no division per row
      constexpr int WW = kOv ? PW : NW, F0 = kOv ? 0 : F_W;
      k::sg_copy_rows_warp<HD, D, S, BLOCK, F0, WW>(ws, [&](int t) { return wq + (h * HD + t) * D; });
      k::sg_copy_rows_warp<HD, D, S, BLOCK, F0 + HD, WW>(ws + HD * S, [&](int t) { return wk + (h * HD + t) * D; });
      k::sg_copy_rows_warp<HD, D, S, BLOCK, F0 + 2 * HD, WW>(ws + 2 * HD * S, [&](int t) { return wv + (h * HD + t) * D; });
    }
    k::sg_copy_commit();
  }
  // FP32 relation MLP: the pair features of pairs tid + BLOCK q into registers.
  constexpr int PPR = L::kMlpMma ? 1 : PPT;
  float4 pf[PPR][P / 4];
  if constexpr (!L::kMlpMma) {
#pragma unroll
    for (int q = 0; q < PPT; ++q) {
      const float4* src = reinterpret_cast<const float4*>(pair_src(tid + BLOCK * q < PAIRS ? tid + BLOCK * q : PAIRS - 1));
#pragma unroll
      for (int c = 0; c < P / 4; ++c) pf[q][c] = __ldg(src + c);
    }
  }
  // Wout: threads from warp OW0 on, in RGO row groups (as many as the block holds, at most RN):
  // row group rg, column oo of head h, lane ol: float4s ol + KLO s of row h HD + oo.
  constexpr int RGO = k::sg_min(RN, BLOCK / (HD * KLO));
  constexpr int OW0 = (BLOCK - k::sg_cdiv(RGO * HD * KLO, 32) * 32) / 32;
  const int ot = tid - OW0 * 32;
  const int rg = ot / (HD * KLO), oo = ot % (HD * KLO) / KLO, ol = ot % KLO;
  const bool o_on = ot >= 0 && rg < RGO;
  float4 wor[kOutMma || kOutBfly ? 1 : WO4];
  float wt[kOutBfly ? OPW : 1][kOutBfly ? KS5 : 1];  // kOutBfly: Wout[h HD + og OPW + o][lane + 32 s]
  const int v5 = warp - (NW - W5);              // kOutBfly: this warp's index among the last W5
  float wof[kOutMma ? NT : 1][kOutMma ? KSW : 1][2];  // kOutMma: B fragments (column tile, k-step)
  if constexpr (kOutMma) {
    if (warp < MT * KW) {
      const int kq = warp % KW;
#pragma unroll
      for (int n = 0; n < NT; ++n) {
        const float* w = wo + (h * HD + (8 * n + g < HD ? 8 * n + g : HD - 1)) * D + kq * KSW * 8 + t4;
#pragma unroll
        for (int ks = 0; ks < KSW; ++ks) {
          wof[n][ks][0] = __ldg(w + 8 * ks);
          wof[n][ks][1] = __ldg(w + 8 * ks + 4);
        }
      }
    }
  } else if constexpr (kOutBfly) {
    if (v5 >= 0) {
      const int og = v5 % NOG;
#pragma unroll
      for (int oq = 0; oq < OPW; ++oq) {
        const int o = og * OPW + oq;
#pragma unroll
        for (int s5 = 0; s5 < KS5; ++s5) {
          const int c = lane + 32 * s5;
          wt[oq][s5] = o < HD && (D % 32 == 0 || c < D) ? __ldg(wo + (h * HD + o) * D + c) : 0.0f;
        }
      }
    }
  } else {
    const float4* w = reinterpret_cast<const float4*>(wo + (h * HD + (o_on ? oo : 0)) * D);
#pragma unroll
    for (int s = 0; s < WO4; ++s) wor[s] = o_on ? __ldg(w + ol + KLO * s) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  }

  // Step 2. LayerNorm of the own rows (a warp per row, the row in registers), stored as TF32
  // (hi, lo) pairs for the projections; the relation MLP of this block's pairs.
  k::sg_copy_wait<BULK != 0 ? 0 : 1>();
  __syncthreads();
  if (warp < LNW) {  // rows warp + LNW q, all of a warp's rows at once (independent shuffles)
    constexpr int DL = k::sg_cdiv(D, 32), RPW = k::sg_cdiv(RN, LNW);
    constexpr float inv_d = 1.0f / static_cast<float>(D);
    float x[RPW][DL], mean[RPW], inv[RPW];
#pragma unroll
    for (int q = 0; q < RPW; ++q) {
      const int i = warp + LNW * q < RN ? warp + LNW * q : RN - 1;
      mean[q] = 0.0f;
#pragma unroll
      for (int c = 0; c < DL; ++c) {
        const int col = lane + 32 * c;
        x[q][c] = col < D ? xs[i * S + col] : 0.0f;
        mean[q] += x[q][c];
      }
    }
    k::sg_warp_sums(mean);
#pragma unroll
    for (int q = 0; q < RPW; ++q) {
      mean[q] *= inv_d;
      inv[q] = 0.0f;
#pragma unroll
      for (int c = 0; c < DL; ++c) {
        const float d = lane + 32 * c < D ? x[q][c] - mean[q] : 0.0f;
        inv[q] = fmaf(d, d, inv[q]);
      }
    }
    k::sg_warp_sums(inv);
#pragma unroll
    for (int q = 0; q < RPW; ++q) {
      const int i = warp + LNW * q;
      const float rs = rsqrtf(fmaf(inv[q], inv_d, 1e-5f));
#pragma unroll
      for (int c = 0; c < DL; ++c) {
        const int col = lane + 32 * c;
        if (col < D && i < RN) {
          float hi = 0.0f, lo = 0.0f;
          k::sg_split_tf32((x[q][c] - mean[q]) * rs * gb[col] + gb[D + col], hi, lo);
          xh[i * S + col] = make_float2(hi, lo);
        }
      }
    }
  }
  // Each thread waits once at the cluster's first barrier (all blocks run: their shared memory
  // and mbarriers can be written) before its first remote store: the MLP warps after their sums.
  // With kOv: the LayerNorm warps (the projection warps among them, which wait for their weight
  // copies) meet, then run the projections (step 3) while the MLP warps go on.
  if constexpr (kOv) {
    if (warp < LNW) {
      if constexpr (BULK != 0) {
        if (warp < PW) k::sg_mbar_wait(bar, 0);
      } else {
        k::sg_copy_wait<0>();
      }
      asm volatile("bar.sync %0, %1;" ::"n"(kProjBar), "n"(LNW * 32) : "memory");
    }
  }
  if constexpr (L::kMlpMma) {
    // hidden = pf · W0ᵀ on the tensor cores for 16 pairs (tile u) and hidden tiles nt0 .. nt0 +
    // NTH - 1; lane (g, t) finishes hidden units 2t, 2t+1 of each 8-unit tile for pairs g and
    // g+8, then the 4 lanes of a pair add their shares of W2·silu(hidden + b0) into acc.
    // The last warps take the MLP (the first ones have the LayerNorm rows). With kMlpHalves two
    // warps share a tile, half the hidden units each: the second leaves its sums in shared
    // memory and arrives at the tile's named barrier, the first waits there and adds them.
    constexpr int NTM = P / 8;
    constexpr int NTH = kMlpHalves ? NTM / 2 : NTM;
    const auto mlp_tile = [&](int u, int nt0, float (&acc)[2][H]) {
      const int pa = 16 * u + g, pb = pa + 8;
      const float* xa = pfs + (pa < PAIRS ? pa : PAIRS - 1) * PS;
      const float* xb = pfs + (pb < PAIRS ? pb : PAIRS - 1) * PS;
#pragma unroll
      for (int hh = 0; hh < H; ++hh) acc[0][hh] = acc[1][hh] = 0.0f;
#pragma unroll
      for (int n = 0; n < NTH; ++n) {
        const int nt = nt0 + n;
        const float* wrow = mw0 + (8 * nt + g) * PS;
        float hh4[4] = {0.0f, 0.0f, 0.0f, 0.0f}, hl[4] = {0.0f, 0.0f, 0.0f, 0.0f}, lh[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
        for (int k0 = 0; k0 < P; k0 += 8) k::sg_mma_3xtf32_step(hh4, hl, lh, xa, xb, wrow, k0, t4);
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int col = 8 * nt + 2 * t4 + (e % 2);
          const float a = hh4[e] + (hl[e] + lh[e]) + mb0[col];
          const float sl = __fdividef(a, 1.0f + __expf(-a));  // silu (MUFU exp: relative error near 1e-6)
#pragma unroll
          for (int hh = 0; hh < H; ++hh) acc[e / 2][hh] = fmaf(mw2[hh * P + col], sl, acc[e / 2][hh]);
        }
      }
#pragma unroll
      for (int e = 0; e < 2; ++e) k::sg_lane_sums<1, 2>(acc[e]);
    };
    // lane (g, t) stores heads t, t+4, ... of pairs g (e = 0) and g+8 (e = 1)
    const auto mlp_store = [&](int u, const float (&acc)[2][H]) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int pu = 16 * u + g + 8 * e;
        const int i = pu / JC, j = h * JC + pu % JC;
        if (pu < PAIRS && j < N) {
#pragma unroll
          for (int hh = 0; hh < H; ++hh) {
            if (hh % 4 == t4) put1(bs + i * N + j, hh * R + r, acc[e][hh] + mw2[H * P + hh]);
          }
        }
      }
    };
    const int v = NW - 1 - warp;
    if constexpr (kMlpHalves) {
      if (v < 2 * UT) {
        const int u = v / 2;
        float acc[2][H];
        mlp_tile(u, v % 2 * NTH, acc);
        float* mx = sm + L::kMx + u * 16 * H;  // (e 8 + g) H + head
        if (v % 2 == 1) {
          if (t4 == 0) {
#pragma unroll
            for (int e = 0; e < 2; ++e) {
#pragma unroll
              for (int hh = 0; hh < H; ++hh) mx[(e * 8 + g) * H + hh] = acc[e][hh];
            }
          }
          asm volatile("bar.arrive %0, 64;" ::"r"(1 + u) : "memory");
          k::sg_cluster_wait();
        } else {
          asm volatile("bar.sync %0, 64;" ::"r"(1 + u) : "memory");
#pragma unroll
          for (int e = 0; e < 2; ++e) {
#pragma unroll
            for (int hh = 0; hh < H; ++hh) acc[e][hh] += mx[(e * 8 + g) * H + hh];
          }
          k::sg_cluster_wait();
          mlp_store(u, acc);
        }
      } else {
        k::sg_cluster_wait();
      }
    } else {
      if (v < UT) {
        for (int u = v; u < UT; u += NW) {
          float acc[2][H];
          mlp_tile(u, 0, acc);
          if (u == v) k::sg_cluster_wait();
          mlp_store(u, acc);
        }
      } else {
        k::sg_cluster_wait();
      }
    }
  } else {
    k::sg_cluster_wait();
#pragma unroll
    for (int q = 0; q < PPT; ++q) {
      const int u = tid + BLOCK * q;
      const int i = u / JC, j = h * JC + u % JC;
      if (u < PAIRS && j < N) {
        float acc[H];
#pragma unroll
        for (int hh = 0; hh < H; ++hh) acc[hh] = mw2[H * P + hh];
#pragma unroll 4
        for (int hk = 0; hk < P; ++hk) {
          const float4* w = reinterpret_cast<const float4*>(mw0 + hk * PS);
          float a0 = mb0[hk], a1 = 0.0f;
#pragma unroll
          for (int c = 0; c < P / 4; ++c) {
            if (c % 2 == 0) {
              a0 = k::sg_dot4(w[c], pf[q][c], a0);
            } else {
              a1 = k::sg_dot4(w[c], pf[q][c], a1);
            }
          }
          const float a = a0 + a1;
          const float sl = __fdividef(a, 1.0f + expf(-a));  // silu, as sg_pair_mlp
#pragma unroll
          for (int hh = 0; hh < H; ++hh) acc[hh] = fmaf(mw2[hh * P + hk], sl, acc[hh]);
        }
#pragma unroll
        for (int hh = 0; hh < H; ++hh) {
          put1(bs + i * N + j, hh * R + r, acc[hh]);
        }
      }
    }
  }
  if constexpr (!kOv) {
    if constexpr (BULK != 0) {
      k::sg_mbar_wait(bar, 0);
    } else {
      k::sg_copy_wait<0>();
    }
    __syncthreads();
  }

  // Step 3. Projections of the own rows on the tensor cores, a warp per (matrix, 16-row tile,
  // 8-column tile, k-range), all at once: A = LayerNorm rows, B[k][n] = W[h HD + n][k]; k and v
  // stored into the R blocks of head h. Each of the three 3xTF32 terms accumulates in KC
  // independent chains (k-steps alternate), which the warp adds at the end: the MMAs of a chain
  // wait for each other, those of different chains overlap. With KSPLIT > 1 the partial sums of
  // the k-ranges meet in shared memory and are added in k order.
  const float scale = 1.0f / sqrtf(static_cast<float>(HD));
  const auto deliver = [&](int m, int li, int o, float y) {
    if (i0 + li >= N) return;
    if (m == 0) {
      qs[li * HS + o] = y * scale;
    } else {
#pragma unroll
      for (int rs = 0; rs < R; ++rs) {
        put1((m == 1 ? ks : vs) + (i0 + li) * HS + o, h * R + rs, y);
      }
    }
  };
  // columns o, o + 1 of row li (o even): one 8-byte remote store per block when rows of q/k/v
  // are 8-byte aligned
  const auto deliver2 = [&](int m, int li, int o, float y0, float y1) {
    if constexpr (ASYNC != 0 && HS % 2 == 0 && HD % 2 == 0) {
      if (i0 + li >= N) return;
      if (m == 0) {
        qs[li * HS + o] = y0 * scale;
        qs[li * HS + o + 1] = y1 * scale;
      } else {
        float* p = (m == 1 ? ks : vs) + (i0 + li) * HS + o;
#pragma unroll
        for (int rs = 0; rs < R; ++rs) {
          if (h * R + rs == rank) {
            *reinterpret_cast<float2*>(p) = make_float2(y0, y1);
          } else {
            k::sg_st_async2(p, static_cast<unsigned>(h * R + rs), y0, y1, bar_x1);
          }
        }
      }
    } else {
      deliver(m, li, o, y0);
      if (o + 1 < HD) deliver(m, li, o + 1, y1);
    }
  };
  // kGroupSum: the KSPLIT warps of one (matrix, row tile, column group) are consecutive and
  // meet at the group's named barrier (1 + group). Column tile n of the group is summed and
  // delivered by warp n % KSPLIT: each warp leaves its sums of the tiles it does not own in
  // shared memory as MMA fragments (slot kr, or kr - 1 past the owner), an owner waits at the
  // barrier, adds the KSPLIT sums of its tiles in k order and delivers them, the others only
  // arrive.
  constexpr bool kGroupSum = KSPLIT > 1 && kOv && PW / KSPLIT <= 12;  // ids 1 .. 13, 13 for kEvenBar
  const auto project = [&](int m, int mt, int ng, int kr) {
    const int la = 16 * mt + g, lb = la + 8;
    const float2* xa = xh + (la < RN ? la : RN - 1) * S;
    const float2* xb = xh + (lb < RN ? lb : RN - 1) * S;
    const float* wrow[NB];
#pragma unroll
    for (int n = 0; n < NB; ++n) {
      const int on = 8 * (ng * NB + n) + g;
      wrow[n] = ws + (m * HD + (on < HD ? on : HD - 1)) * S;
    }
    constexpr int KC = NB == 1 && KST % 2 == 0 ? 2 : 1;
    float hh[KC][NB][4], hl[KC][NB][4], lh[KC][NB][4];
#pragma unroll
    for (int c = 0; c < KC; ++c) {
#pragma unroll
      for (int n = 0; n < NB; ++n) {
#pragma unroll
        for (int e = 0; e < 4; ++e) hh[c][n][e] = hl[c][n][e] = lh[c][n][e] = 0.0f;
      }
    }
#pragma unroll 6
    for (int k0 = 8 * KST * kr; k0 < 8 * KST * (kr + 1); k0 += 8 * KC) {
#pragma unroll
      for (int c = 0; c < KC; ++c) {
        float ah[4], al[4];
        k::sg_load_split_a(ah, al, xa, xb, k0 + 8 * c, t4);
#pragma unroll
        for (int n = 0; n < NB; ++n) {
          if (NT % NB == 0 || ng * NB + n < NT) k::sg_mma_3xtf32_b(hh[c][n], hl[c][n], lh[c][n], ah, al, wrow[n], k0 + 8 * c, t4);
        }
      }
    }
    float y[NB][4];
#pragma unroll
    for (int n = 0; n < NB; ++n) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        y[n][e] = 0.0f;
#pragma unroll
        for (int c = 0; c < KC; ++c) y[n][e] += hh[c][n][e] + (hl[c][n][e] + lh[c][n][e]);
      }
    }
    if constexpr (kGroupSum) {
      const int group = warp / KSPLIT;
      // fragment of (slot, matrix, row tile, column tile): 32 lanes x 4 floats; warp kq's sums of
      // tile n sit in slot kq, or kq - 1 past the tile's owner n % KSPLIT
      const auto frag = [&](int kq, int n) {
        const int slot = kq < n % KSPLIT ? kq : kq - 1;
        return reinterpret_cast<float4*>(part) + (((slot * 3 + m) * MT + mt) * NT + ng * NB + n) * 32 + lane;
      };
      bool owns = false;
#pragma unroll
      for (int n = 0; n < NB; ++n) {
        if (NT % NB != 0 && ng * NB + n >= NT) continue;
        if (n % KSPLIT != kr) {
          *frag(kr, n) = make_float4(y[n][0], y[n][1], y[n][2], y[n][3]);
        } else {
          owns = true;
        }
      }
      if (!owns) {
        asm volatile("bar.arrive %0, %1;" ::"r"(1 + group), "n"(KSPLIT * 32) : "memory");
        return;
      }
      asm volatile("bar.sync %0, %1;" ::"r"(1 + group), "n"(KSPLIT * 32) : "memory");
#pragma unroll
      for (int n = 0; n < NB; ++n) {
        if ((NT % NB != 0 && ng * NB + n >= NT) || n % KSPLIT != kr) continue;
        const auto sums_of = [&](int kq) { return kq == kr ? make_float4(y[n][0], y[n][1], y[n][2], y[n][3]) : *frag(kq, n); };
        float4 sum = sums_of(0);
#pragma unroll
        for (int kq = 1; kq < KSPLIT; ++kq) {  // in k order
          const float4 pk = sums_of(kq);
          sum.x += pk.x, sum.y += pk.y, sum.z += pk.z, sum.w += pk.w;
        }
        y[n][0] = sum.x, y[n][1] = sum.y, y[n][2] = sum.z, y[n][3] = sum.w;
      }
    }
#pragma unroll
    for (int n = 0; n < NB; ++n) {
      if (kGroupSum && n % KSPLIT != kr) continue;
#pragma unroll
      for (int e = 0; e < 4; e += 2) {
        const int li = e < 2 ? la : lb, o = 8 * (ng * NB + n) + 2 * t4;
        if (o >= HD || li >= RN) continue;
        if constexpr (KSPLIT == 1 || kGroupSum) {
          deliver2(m, li, o, y[n][e], y[n][e + 1]);
        } else {
          part[((kr * 3 + m) * RN + li) * HD + o] = y[n][e];
          if (o + 1 < HD) part[((kr * 3 + m) * RN + li) * HD + o + 1] = y[n][e + 1];
        }
      }
    }
  };
  // task u: k-range fastest, then column group, row tile, matrix (k and v, the remote ones, first)
  if (!kOv || warp < PW) {
    for (int u = warp; u < PW; u += NW) {
      project((u / (MT * NG * KSPLIT) + 1) % 3, u / (NG * KSPLIT) % MT, u / KSPLIT % NG, u % KSPLIT);
    }
  }
  if constexpr (KSPLIT > 1 && !kGroupSum) {
    constexpr int PT = kOv ? PW * 32 : BLOCK;  // threads of the partial sums
    if (!kOv || warp < PW) proj_sync();
    for (int idx = tid; idx < (tid < PT ? 3 * RN * HD : 0); idx += PT) {
      float y = part[idx];
#pragma unroll
      for (int kr = 1; kr < KSPLIT; ++kr) y += part[kr * 3 * RN * HD + idx];
      deliver(idx / (RN * HD), idx / HD % RN, idx % HD, y);
    }
  }
  // compute-sanitizer's racecheck orders a store before a later load only when the loading warp
  // has passed more barriers than the storing warp had at the store, whichever barriers they were
  // (docs/scene-graph-racecheck.md; with these two barriers racecheck is clean on the H200, without
  // them it flagged the reads after the next block-wide barrier). With kOv the warps that skipped
  // the LayerNorm's named barrier (from LNW on) or their projection group's (from PW on) meet at
  // barriers of their own here, so that every warp reaches the block-wide barrier below having
  // passed as many. They would wait there anyway; kOutBar is free until after it.
  if constexpr (kOv && LNW < NW) {
    if (warp >= LNW) asm volatile("bar.sync %0, %1;" ::"n"(kOutBar), "n"((NW - LNW) * 32) : "memory");
  }
  if constexpr (kOv && KSPLIT > 1 && PW < NW) {
    constexpr int kEvenBar = 13;
    if (warp >= PW) asm volatile("bar.sync %0, %1;" ::"n"(kEvenBar), "n"((NW - PW) * 32) : "memory");
  }
  __syncthreads();  // qs, block-wide
  if constexpr (ASYNC != 0) {
    k::sg_mbar_wait<true>(bar_x1, 0);  // this block's bias, k and v have all arrived
  } else {
    k::sg_cluster_sync();  // every block's bias and k, v stores are done
  }

  // Step 4. A warp per query row i0 + i: lane j % 32 holds score j; lanes over t for ctx_h.
  // ATTN == 2: a warp per query row, lane (tq, jg) = (lane / 8, lane % 8) takes the keys jg + 8 m
  // and the quarter tq of the head's columns: each lane reads HQ = HD / 4 columns of its keys' k
  // and v rows and of q (8-byte loads, conflict-free), the quarters' partial scores meet in two
  // shuffles, the softmax reductions run over the 8 key lanes (three), and the partial sums over v
  // meet in a transposed butterfly over the key lanes (lane jg ends with column tq HQ + jg).
  // About 40 % fewer shared-memory wavefronts than a lane per key with q broadcast (a 16-byte
  // load costs four wavefronts whatever the lanes share), and shorter reductions.
  constexpr int HQ = HD / 4, MQ = k::sg_cdiv(N, 8), CV = HQ <= 8 ? 8 : HQ;
  constexpr bool kAttnQuad = ATTN == 2 && HD % 4 == 0 && N <= 64;
  if constexpr (kAttnQuad) {
    const int jg = lane % 8, tq = lane / 8;
    const auto row2 = [&](const float* base, int u2) {  // columns tq HQ + 2 u2, + 1 of a row
      if constexpr (HQ % 2 == 0) {
        return *reinterpret_cast<const float2*>(base + tq * HQ + 2 * u2);
      } else {
        return make_float2(base[tq * HQ + 2 * u2], 2 * u2 + 1 < HQ ? base[tq * HQ + 2 * u2 + 1] : 0.0f);
      }
    };
    constexpr int H2 = k::sg_cdiv(HQ, 2);
    for (int i = warp; i < RN && i0 + i < N; i += NW) {
      float2 q[H2];
#pragma unroll
      for (int u2 = 0; u2 < H2; ++u2) q[u2] = row2(qs + i * HS, u2);
      float sc[MQ];
#pragma unroll
      for (int m = 0; m < MQ; ++m) {
        const int j = jg + 8 * m < N ? jg + 8 * m : N - 1;
        float a0 = 0.0f, a1 = 0.0f;
#pragma unroll
        for (int u2 = 0; u2 < H2; ++u2) {
          const float2 kv = row2(ks + j * HS, u2);
          a0 = fmaf(q[u2].x, kv.x, a0);
          a1 = fmaf(q[u2].y, kv.y, a1);
        }
        sc[m] = a0 + a1;
      }
      k::sg_lane_sums<8, 16>(sc);  // the four quarters: every lane of a key gets the same sum
      bool on[MQ];
      float mx = -3.402823466e38f;
      bool any = false;
#pragma unroll
      for (int m = 0; m < MQ; ++m) {
        const int j = jg + 8 * m;
        on[m] = j < N && msk[i * N + (j < N ? j : N - 1)] >= 0.5f;
        sc[m] = on[m] ? sc[m] + bs[i * N + (j < N ? j : N - 1)] : 0.0f;
        if (on[m]) mx = fmaxf(mx, sc[m]);
        any = any || on[m];
      }
      mx = k::sg_lane_max<1, 4>(mx);
      const bool row_has_edge = __any_sync(0xffffffffu, any);
      float sum = 0.0f;
#pragma unroll
      for (int m = 0; m < MQ; ++m) {
        sc[m] = on[m] ? __expf(sc[m] - mx) : 0.0f;
        sum += sc[m];
      }
      sum = k::sg_lane_sum<1, 4>(sum);
      const float inv_sum = row_has_edge ? __fdividef(1.0f, sum) : 0.0f;  // sum in [1, N]
      float cv[CV];
#pragma unroll
      for (int u = 0; u < CV; ++u) cv[u] = 0.0f;
#pragma unroll
      for (int m = 0; m < MQ; ++m) {
        const int j = jg + 8 * m < N ? jg + 8 * m : N - 1;  // a key past N has weight 0
#pragma unroll
        for (int u2 = 0; u2 < H2; ++u2) {
          const float2 vv = row2(vs + j * HS, u2);
          cv[2 * u2] = fmaf(sc[m], vv.x, cv[2 * u2]);
          if (2 * u2 + 1 < HQ) cv[2 * u2 + 1] = fmaf(sc[m], vv.y, cv[2 * u2 + 1]);
        }
      }
      if constexpr (HQ <= 8) {  // lane jg ends with column tq HQ + jg
        k::sg_transpose_sum<4>(cv, lane);
        k::sg_transpose_sum<2>(cv, lane);
        k::sg_transpose_sum<1>(cv, lane);
        if (jg < HQ) {
          const float c = cv[0] * inv_sum;
#pragma unroll
          for (int hh = 0; hh < H; ++hh) put2(cx + i * S + h * HD + tq * HQ + jg, hh * R + r, c);
        }
      } else {
        k::sg_lane_sums<1, 4>(cv);  // CV == HQ here
#pragma unroll
        for (int u = 0; u < HQ; ++u) {
          if (u % 8 == jg) {
#pragma unroll
            for (int hh = 0; hh < H; ++hh) put2(cx + i * S + h * HD + tq * HQ + u, hh * R + r, cv[u] * inv_sum);
          }
        }
      }
    }
  } else {
    constexpr int JL = k::sg_cdiv(N, 32), TL = k::sg_cdiv(HD, 32);
    for (int i = warp; i < RN && i0 + i < N; i += NW) {
      float a[JL];
      bool on[JL];
      float mx = -3.402823466e38f;
      bool any = false;
#pragma unroll
      for (int jt = 0; jt < JL; ++jt) {
        const int j = lane + 32 * jt;
        float sp[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        if (j < N) {
          if constexpr (HD % 4 == 0) {
#pragma unroll
            for (int c4 = 0; c4 < HD / 4; ++c4) {
              const float4 q = reinterpret_cast<const float4*>(qs + i * HS)[c4];
              const float4 kv = reinterpret_cast<const float4*>(ks + j * HS)[c4];
              sp[0] = fmaf(q.x, kv.x, sp[0]);
              sp[1] = fmaf(q.y, kv.y, sp[1]);
              sp[2] = fmaf(q.z, kv.z, sp[2]);
              sp[3] = fmaf(q.w, kv.w, sp[3]);
            }
          } else {
#pragma unroll
            for (int t = 0; t < HD; ++t) sp[t % 4] = fmaf(qs[i * HS + t], ks[j * HS + t], sp[t % 4]);
          }
        }
        on[jt] = j < N && msk[i * N + j] >= 0.5f;
        a[jt] = on[jt] ? (sp[0] + sp[1]) + (sp[2] + sp[3]) + bs[i * N + j] : 0.0f;
        if (on[jt]) mx = fmaxf(mx, a[jt]);
        any = any || on[jt];
      }
      mx = k::sg_warp_max(mx);
      const bool row_has_edge = __any_sync(0xffffffffu, any);
      float sum = 0.0f;
#pragma unroll
      for (int jt = 0; jt < JL; ++jt) {
        a[jt] = on[jt] ? __expf(a[jt] - mx) : 0.0f;
        sum += a[jt];
      }
      sum = k::sg_warp_sum(sum);
      const float inv_sum = row_has_edge ? __fdividef(1.0f, sum) : 0.0f;  // sum in [1, N]
#pragma unroll
      for (int tt = 0; tt < TL; ++tt) {
        const int t = lane + 32 * tt;
        float cp[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
        for (int jt = 0; jt < JL; ++jt) {
#pragma unroll
          for (int jj = 0; jj < 32 && 32 * jt + jj < N; ++jj) {
            const float aj = __shfl_sync(0xffffffffu, a[jt], jj);
            if (t < HD) cp[jj % 4] = fmaf(aj, vs[(32 * jt + jj) * HS + t], cp[jj % 4]);
          }
        }
        if (t < HD) {
          const float c = ((cp[0] + cp[1]) + (cp[2] + cp[3])) * inv_sum;
#pragma unroll
          for (int hh = 0; hh < H; ++hh) put2(cx + i * S + h * HD + t, hh * R + r, c);
        }
      }
    }
  }
  if constexpr (ASYNC != 0) {
    __syncthreads();                     // this block's own head of ctx
    k::sg_mbar_wait<true>(bar_x2, 0);  // the other heads' ctx rows have arrived
  } else {
    k::sg_cluster_sync();
  }

  // Step 5. out[i0 + i][h HD + oo] = nodes + ctx[i] · Wout[h HD + oo], rows i = rg + RGO q.
  if constexpr (kOutMma) {
    if (warp < MT * KW) {
      const int mt = warp / KW, kq = warp % KW;
      const int la = 16 * mt + g, lb = la + 8;
      const float* xa = cx + (la < RN ? la : RN - 1) * S;
      const float* xb = cx + (lb < RN ? lb : RN - 1) * S;
      float hh[NT][4], hl[NT][4], lh[NT][4];
#pragma unroll
      for (int n = 0; n < NT; ++n) {
#pragma unroll
        for (int e = 0; e < 4; ++e) hh[n][e] = hl[n][e] = lh[n][e] = 0.0f;
      }
#pragma unroll
      for (int ks = 0; ks < KSW; ++ks) {
        float ah[4], al[4];
        k::sg_split_a(ah, al, xa, xb, (kq * KSW + ks) * 8, t4);
#pragma unroll
        for (int n = 0; n < NT; ++n) k::sg_mma_3xtf32(hh[n], hl[n], lh[n], ah, al, wof[n][ks][0], wof[n][ks][1]);
      }
      float4* frag = reinterpret_cast<float4*>(xh) + (mt * (KW - 1) * NT) * 32 + lane;  // [kq][n][lane]
      if (kq < KW - 1) {
#pragma unroll
        for (int n = 0; n < NT; ++n) {
          frag[(kq * NT + n) * 32] = make_float4(hh[n][0] + (hl[n][0] + lh[n][0]), hh[n][1] + (hl[n][1] + lh[n][1]),
                                                 hh[n][2] + (hl[n][2] + lh[n][2]), hh[n][3] + (hl[n][3] + lh[n][3]));
        }
        asm volatile("bar.arrive %0, %1;" ::"n"(kOutBar), "n"(MT * KW * 32) : "memory");
      } else {
        asm volatile("bar.sync %0, %1;" ::"n"(kOutBar), "n"(MT * KW * 32) : "memory");
#pragma unroll
        for (int n = 0; n < NT; ++n) {
          float y[4];
#pragma unroll
          for (int e = 0; e < 4; ++e) y[e] = 0.0f;
#pragma unroll
          for (int q = 0; q < KW - 1; ++q) {
            const float4 f = frag[(q * NT + n) * 32];
            y[0] += f.x, y[1] += f.y, y[2] += f.z, y[3] += f.w;
          }
#pragma unroll
          for (int e = 0; e < 4; e += 2) {
            const int li = e < 2 ? la : lb, o = 8 * n + 2 * t4;
            if (li >= RN || i0 + li >= N || o >= HD) continue;
            const float y0 = xs[li * S + h * HD + o] + (y[e] + (hh[n][e] + (hl[n][e] + lh[n][e])));
            float* dst = out + (b * N + i0 + li) * D + h * HD + o;
            if (o + 1 < HD) {
              const float y1 = xs[li * S + h * HD + o + 1] + (y[e + 1] + (hh[n][e + 1] + (hl[n][e + 1] + lh[n][e + 1])));
              if constexpr (HD % 2 == 0 && D % 2 == 0) {
                *reinterpret_cast<float2*>(dst) = make_float2(y0, y1);
              } else {
                dst[0] = y0, dst[1] = y1;
              }
            } else {
              dst[0] = y0;
            }
          }
        }
      }
    }
  } else if constexpr (kOutBfly) {
    if (v5 >= 0) {
      const int og = v5 % NOG;
#pragma unroll 1
      for (int rq = v5 / NOG; rq < NRG; rq += RGW) {
        float x[32];
#pragma unroll
        for (int rr = 0; rr < RPW; ++rr) {
          const int ir = rq * RPW + (rr ^ (lane / OPW));
          const int i = ir < RN ? ir : RN - 1;
          float c[KS5];
#pragma unroll
          for (int s5 = 0; s5 < KS5; ++s5) c[s5] = D % 32 == 0 || lane + 32 * s5 < D ? cx[i * S + lane + 32 * s5] : 0.0f;
#pragma unroll
          for (int oq = 0; oq < OPW; ++oq) {
            float a = 0.0f;
#pragma unroll
            for (int s5 = 0; s5 < KS5; ++s5) a = fmaf(wt[oq][s5], c[s5], a);
            x[rr * OPW + oq] = a;
          }
        }
        // the 32 sums over the warp's lanes: the row levels without selects (slot row q of lane
        // l holds row q ^ (l / OPW), as does slot row q + HW / OPW of partner l ^ HW), then the
        // output levels
        k::sg_fold_upper<16>(x);
        k::sg_fold_upper<8>(x);
        if constexpr (OPW == 4) {
          k::sg_fold_upper<4>(x);
        } else {
          k::sg_transpose_sum<4>(x, lane);
        }
        k::sg_transpose_sum<2>(x, lane);
        k::sg_transpose_sum<1>(x, lane);
        const int i = rq * RPW + lane / OPW, oc = og * OPW + lane % OPW;
        if (i < RN && i0 + i < N && oc < HD) out[(b * N + i0 + i) * D + h * HD + oc] = xs[i * S + h * HD + oc] + x[0];
      }
    }
  } else if (warp >= OW0) {
    constexpr int RT = k::sg_cdiv(RN, RGO), RC5 = RT <= 16 ? RT : 8;
#pragma unroll 1
    for (int c0 = 0; c0 < RT; c0 += RC5) {
      float acc[RC5];
#pragma unroll
      for (int rr = 0; rr < RC5; ++rr) acc[rr] = 0.0f;
#pragma unroll
      for (int s = 0; s < WO4; ++s) {
#pragma unroll
        for (int rr = 0; rr < RC5; ++rr) {
          const int ir = rg + RGO * (c0 + rr);
          const int i = o_on && ir < RN ? ir : RN - 1;
          acc[rr] = k::sg_dot4(wor[s], reinterpret_cast<const float4*>(cx + i * S)[ol + KLO * s], acc[rr]);
        }
      }
#pragma unroll
      for (int rr = 0; rr < RC5; ++rr) {
#pragma unroll
        for (int off = KLO / 2; off > 0; off /= 2) acc[rr] += __shfl_xor_sync(0xffffffffu, acc[rr], off);
      }
      if (o_on) {
#pragma unroll
        for (int rr = 0; rr < RC5; ++rr) {
          const int i = rg + RGO * (c0 + rr);
          if (rr % KLO == ol && i < RN && i0 + i < N) out[(b * N + i0 + i) * D + h * HD + oo] = xs[i * S + h * HD + oo] + acc[rr];
        }
      }
    }
  }
}

// strategy split, mapping batch/qtile, second launch: as sg_fused with the bias from scratch.
template <int B, int N, int D, int H, int QT, int BLOCK, int SMEM_W>
__global__ void __launch_bounds__(BLOCK, 1)
    sg_split_attention(const float* __restrict__ nodes, const float* __restrict__ bias,
                       const float* __restrict__ edge_mask, const float* __restrict__ gamma,
                       const float* __restrict__ beta, const float* __restrict__ wq, const float* __restrict__ wk,
                       const float* __restrict__ wv, const float* __restrict__ wo, float* __restrict__ out) {
  tune_kernels::sg_attention_block<B, N, D, H, 1, QT, BLOCK, SMEM_W, 1>(nodes, nullptr, edge_mask, gamma, beta, wq, wk,
                                                                        wv, nullptr, nullptr, nullptr, nullptr, wo,
                                                                        bias, out);
}

// strategy split, first launch: one thread per pair (b, i, j) writes bias[b, :, i, j].
// Grid cdiv(B*N*N, BLOCK); dynamic smem pb_smem (the MLP weights when SMEM_W).
template <int B, int N, int H, int P, int BLOCK, int SMEM_W>
__global__ void __launch_bounds__(BLOCK, 1)
    sg_pair_bias(const float* __restrict__ pair_feats, const float* __restrict__ w0, const float* __restrict__ b0,
                 const float* __restrict__ w2, const float* __restrict__ b2, float* __restrict__ bias) {
  using namespace tune_kernels;
  extern __shared__ float4 sg_smem[];
  if (blockDim.x != BLOCK) return;
  if constexpr (SMEM_W != 0) {
    if (sg_dynamic_smem_size() < static_cast<unsigned>(sg_pair_bias_smem_bytes(H, P, SMEM_W))) return;
  }
  const int pair = static_cast<int>(blockIdx.x) * BLOCK + static_cast<int>(threadIdx.x);
  if constexpr (SMEM_W != 0) {
    float* s_w0 = reinterpret_cast<float*>(sg_smem);
    float* s_b0 = s_w0 + sg_round4(P * P);
    float* s_w2 = s_b0 + sg_round4(P);
    float* s_b2 = s_w2 + sg_round4(H * P);
    for (int i = static_cast<int>(threadIdx.x); i < P * P; i += BLOCK) s_w0[i] = __ldg(w0 + i);
    for (int i = static_cast<int>(threadIdx.x); i < P; i += BLOCK) s_b0[i] = __ldg(b0 + i);
    for (int i = static_cast<int>(threadIdx.x); i < H * P; i += BLOCK) s_w2[i] = __ldg(w2 + i);
    for (int i = static_cast<int>(threadIdx.x); i < H; i += BLOCK) s_b2[i] = __ldg(b2 + i);
    __syncthreads();
    if (pair < B * N * N) sg_pair_bias_one<N, H, P, 1>(pair, pair_feats, s_w0, s_b0, s_w2, s_b2, bias);
  } else {
    if (pair < B * N * N) sg_pair_bias_one<N, H, P, 0>(pair, pair_feats, w0, b0, w2, b2, bias);
  }
}

// strategy split, mapping head, second launch: one block per (batch, head) computes q_h, k_h,
// v_h of all N rows, the masked softmax with the scratch bias, and writes ctx[b, :, head] to
// scratch. Grid B*H; dynamic smem head_smem.
template <int B, int N, int D, int H, int BLOCK, int SMEM_W>
__global__ void __launch_bounds__(BLOCK, 1)
    sg_head_attention(const float* __restrict__ nodes, const float* __restrict__ bias,
                      const float* __restrict__ edge_mask, const float* __restrict__ gamma,
                      const float* __restrict__ beta, const float* __restrict__ wq, const float* __restrict__ wk,
                      const float* __restrict__ wv, float* __restrict__ ctx) {
  using namespace tune_kernels;
  static_assert(D % H == 0 && D % 4 == 0, "D must be a multiple of heads and of 4");
  constexpr int HD = D / H;
  constexpr int S = sg_row_stride(D);
  constexpr int HS = sg_odd_stride(HD);
  constexpr int WS = SMEM_W ? S : D;
  extern __shared__ float4 sg_smem[];
  if (blockDim.x != BLOCK || sg_dynamic_smem_size() < static_cast<unsigned>(sg_head_smem_bytes(N, D, H, SMEM_W))) {
    return;
  }
  float* hn = reinterpret_cast<float*>(sg_smem);               // N x S
  float* sw = hn + N * S;                                      // SMEM_W: gamma, beta, 3 x HD x S
  float* qkv = sw + (SMEM_W ? 2 * D + 3 * HD * S : 0);         // 3 x N x HS
  float* sc = qkv + sg_round4(3 * N * HS);                     // N x N
  float* msk = sc + sg_round4(N * N);                          // N x N
  const int b = static_cast<int>(blockIdx.x) / H, head = static_cast<int>(blockIdx.x) % H;
  const int tid = static_cast<int>(threadIdx.x);

  sg_copy_rows<N, D, S, BLOCK>(hn, [&](int r) { return nodes + (b * N + r) * D; });
  for (int idx = tid; idx < N * N; idx += BLOCK) {
    sg_copy4(msk + idx, edge_mask + b * N * N + idx);
    sg_copy4(sc + idx, bias + (b * H + head) * N * N + idx);
  }
  const float* g_gamma = gamma;
  const float* g_beta = beta;
  if constexpr (SMEM_W != 0) {
    sg_copy_rows<1, D, D, BLOCK>(sw, [&](int) { return gamma; });
    sg_copy_rows<1, D, D, BLOCK>(sw + D, [&](int) { return beta; });
    sg_copy_commit();
    // rows m*HD + t of the slice: row head*HD + t of Wq (m=0), Wk (m=1), Wv (m=2)
    sg_copy_rows<3 * HD, D, S, BLOCK>(sw + 2 * D, [&](int r) {
      const float* w = r < HD ? wq : (r < 2 * HD ? wk : wv);
      return w + (head * HD + r % HD) * D;
    });
    g_gamma = sw;
    g_beta = sw + D;
  }
  sg_copy_commit();
  sg_copy_wait<(SMEM_W ? 1 : 0)>();
  __syncthreads();
  sg_layernorm_rows<N, D, S, BLOCK, SMEM_W>(hn, g_gamma, g_beta);
  sg_copy_wait<0>();
  __syncthreads();

  // q_h (scaled), k_h, v_h of all N rows: output o = m*HD + t.
  const float scale = 1.0f / sqrtf(static_cast<float>(HD));
  const float* s_w = sw + 2 * D;
  sg_rows_dot<N, 3 * HD, D, BLOCK>(
      [&](int o, int c4) {
        if constexpr (SMEM_W != 0) {
          return *reinterpret_cast<const float4*>(s_w + o * WS + 4 * c4);
        } else {
          const float* w = o < HD ? wq : (o < 2 * HD ? wk : wv);
          return __ldg(reinterpret_cast<const float4*>(w + (head * HD + o % HD) * D + 4 * c4));
        }
      },
      [&](int r, int, int c4) { return *reinterpret_cast<const float4*>(hn + r * S + 4 * c4); },
      [&](int r, int o, float y) { qkv[((o / HD) * N + r) * HS + o % HD] = o < HD ? y * scale : y; });
  __syncthreads();

  const float* q = qkv;
  const float* k = qkv + N * HS;
  const float* v = qkv + 2 * N * HS;
  for (int u = tid; u < N * N; u += BLOCK) {
    const int i = u / N, j = u % N;
    float acc = 0.0f;
#pragma unroll 8
    for (int t = 0; t < HD; ++t) acc = fmaf(q[i * HS + t], k[j * HS + t], acc);
    sc[u] += acc;
  }
  __syncthreads();
  sg_masked_softmax<N, BLOCK>(sc, N, [&](int row) { return msk + row * N; });
  __syncthreads();
  for (int u = tid; u < N * HD; u += BLOCK) {
    const int i = u / HD, t = u % HD;
    float acc = 0.0f;
#pragma unroll 8
    for (int j = 0; j < N; ++j) acc = fmaf(sc[i * N + j], v[j * HS + t], acc);
    ctx[(b * N + i) * D + head * HD + t] = acc;
  }
}

// strategy split, mapping head, third launch: out = nodes + ctx·Woutᵀ for a tile of ROWS of the
// B*N rows and COLS output features. Grid (cdiv(B*N, ROWS), cdiv(D, COLS)); dynamic smem op_smem.
// Wout is always read through the cache (whatever smem_w): each block uses a COLS x D slice
// once, reused ROWS times from registers, and a whole D x D Wout would not fit at D = 256.
template <int B, int N, int D, int ROWS, int COLS, int BLOCK>
__global__ void __launch_bounds__(BLOCK, 1)
    sg_out_proj(const float* __restrict__ ctx, const float* __restrict__ wo, const float* __restrict__ nodes,
                float* __restrict__ out) {
  using namespace tune_kernels;
  constexpr int S = sg_row_stride(D);
  constexpr int M = B * N;
  extern __shared__ float4 sg_smem[];
  if (blockDim.x != BLOCK || sg_dynamic_smem_size() < static_cast<unsigned>(sg_out_proj_smem_bytes(D, ROWS))) {
    return;
  }
  float* xs = reinterpret_cast<float*>(sg_smem);
  const int r0 = static_cast<int>(blockIdx.x) * ROWS, o0 = static_cast<int>(blockIdx.y) * COLS;
  sg_copy_rows<ROWS, D, S, BLOCK>(xs, [&](int r) { return ctx + (r0 + r < M ? r0 + r : M - 1) * D; });
  sg_copy_commit();
  sg_copy_wait<0>();
  __syncthreads();
  sg_rows_dot<ROWS, COLS, D, BLOCK>(
      [&](int o, int c4) { return __ldg(reinterpret_cast<const float4*>(wo + (o0 + o < D ? o0 + o : D - 1) * D + 4 * c4)); },
      [&](int r, int, int c4) { return *reinterpret_cast<const float4*>(xs + r * S + 4 * c4); },
      [&](int r, int o, float y) {
        if (r0 + r < M && o0 + o < D) {
          const int e = (r0 + r) * D + o0 + o;
          out[e] = __ldg(nodes + e) + y;
        }
      });
}

// ---------------------------------------------------------------------------------------
// Baseline (strategy unfused): one launch per stage, one thread per output element, plain
// global memory; grids are cdiv(elements, BLOCK).

// hn = LayerNorm(nodes), (B*N, D).
template <int B, int N, int D, int BLOCK>
__global__ void __launch_bounds__(BLOCK, 1)
    sg_naive_layernorm(const float* nodes, const float* gamma, const float* beta, float* hn) {
  const int e = static_cast<int>(blockIdx.x) * BLOCK + static_cast<int>(threadIdx.x);
  if (blockDim.x != BLOCK || e >= B * N * D) return;
  const float* x = nodes + (e / D) * D;
  float mean = 0.0f;
  for (int c = 0; c < D; ++c) mean += x[c];
  mean /= static_cast<float>(D);
  float var = 0.0f;
  for (int c = 0; c < D; ++c) var += (x[c] - mean) * (x[c] - mean);
  var /= static_cast<float>(D);
  const int c = e % D;
  hn[e] = (x[c] - mean) / sqrtf(var + 1e-5f) * gamma[c] + beta[c];
}

// q, k, v = hn·Wᵀ: 3*B*N*D threads.
template <int B, int N, int D, int BLOCK>
__global__ void __launch_bounds__(BLOCK, 1)
    sg_naive_qkv(const float* hn, const float* wq, const float* wk, const float* wv, float* q, float* k, float* v) {
  const int e = static_cast<int>(blockIdx.x) * BLOCK + static_cast<int>(threadIdx.x);
  if (blockDim.x != BLOCK || e >= 3 * B * N * D) return;
  const int m = e / (B * N * D), f = e % (B * N * D), row = f / D, o = f % D;
  const float* w = m == 0 ? wq : (m == 1 ? wk : wv);
  float acc = 0.0f;
  for (int c = 0; c < D; ++c) acc += hn[row * D + c] * w[o * D + c];
  (m == 0 ? q : (m == 1 ? k : v))[f] = acc;
}

// bias[b, h, i, j]: one thread per element, each recomputing the hidden layer of its pair.
template <int B, int N, int H, int P, int BLOCK>
__global__ void __launch_bounds__(BLOCK, 1)
    sg_naive_pair_bias(const float* pair_feats, const float* w0, const float* b0, const float* w2, const float* b2,
                       float* bias) {
  const int e = static_cast<int>(blockIdx.x) * BLOCK + static_cast<int>(threadIdx.x);
  if (blockDim.x != BLOCK || e >= B * H * N * N) return;
  const int b = e / (H * N * N), h = (e / (N * N)) % H, ij = e % (N * N);
  const float* x = pair_feats + (b * N * N + ij) * P;
  float acc = b2[h];
  for (int k = 0; k < P; ++k) {
    float a = b0[k];
    for (int p = 0; p < P; ++p) a += w0[k * P + p] * x[p];
    acc += w2[h * P + k] * (a / (1.0f + expf(-a)));
  }
  bias[e] = acc;
}

// ctx[b, i, c] = Σ_j softmax_j(q·k/sqrt(hd) + bias, masked)[head of c] v[b, j, c]: one thread
// per element; two passes over j (maximum, then exponentials and sums).
template <int B, int N, int D, int H, int BLOCK>
__global__ void __launch_bounds__(BLOCK, 1)
    sg_naive_attention(const float* q, const float* k, const float* v, const float* bias, const float* edge_mask,
                       float* ctx) {
  constexpr int HD = D / H;
  const int e = static_cast<int>(blockIdx.x) * BLOCK + static_cast<int>(threadIdx.x);
  if (blockDim.x != BLOCK || e >= B * N * D) return;
  const int b = e / (N * D), i = (e / D) % N, c = e % D, h = c / HD;
  const float scale = 1.0f / sqrtf(static_cast<float>(HD));
  const float* qi = q + (b * N + i) * D + h * HD;
  const float* mask = edge_mask + (b * N + i) * N;
  const float* bi = bias + ((b * H + h) * N + i) * N;
  float mx = -3.402823466e38f;
  bool any = false;
  for (int j = 0; j < N; ++j) {
    if (mask[j] < 0.5f) continue;
    const float* kj = k + (b * N + j) * D + h * HD;
    float s = 0.0f;
    for (int t = 0; t < HD; ++t) s += qi[t] * kj[t];
    mx = fmaxf(mx, s * scale + bi[j]);
    any = true;
  }
  float sum = 0.0f, acc = 0.0f;
  for (int j = 0; j < N; ++j) {
    if (mask[j] < 0.5f) continue;
    const float* kj = k + (b * N + j) * D + h * HD;
    float s = 0.0f;
    for (int t = 0; t < HD; ++t) s += qi[t] * kj[t];
    const float p = expf(s * scale + bi[j] - mx);
    sum += p;
    acc += p * v[(b * N + j) * D + c];
  }
  ctx[e] = any ? acc / sum : 0.0f;
}

// out = nodes + ctx·Woutᵀ: one thread per element.
template <int B, int N, int D, int BLOCK>
__global__ void __launch_bounds__(BLOCK, 1)
    sg_naive_out_proj(const float* ctx, const float* wo, const float* nodes, float* out) {
  const int e = static_cast<int>(blockIdx.x) * BLOCK + static_cast<int>(threadIdx.x);
  if (blockDim.x != BLOCK || e >= B * N * D) return;
  const int row = e / D, o = e % D;
  float acc = 0.0f;
  for (int c = 0; c < D; ++c) acc += ctx[row * D + c] * wo[o * D + c];
  out[e] = nodes[e] + acc;
}

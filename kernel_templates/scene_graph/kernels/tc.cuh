#pragma once
// strategy tc (issue 36): the projections as 3xTF32 tensor-core GEMMs, four launches.
//   sg_tc_qkv        LayerNorm + [q·scale | k | v] = LN(x)·[Wq; Wk; Wv]ᵀ, (B*N) x 3D, scratch qkv
//   sg_pair_bias     the relation MLP (kernels/split.cuh), scratch bias
//   sg_tc_attention  a block per (batch, head, tile of QR query rows): scores + bias, masked
//                    softmax, context, scratch ctx
//   sg_tc_out_proj   out = nodes + ctx·Woutᵀ
// The GEMM blocks take BM rows x BN columns with the whole K = D in shared memory (one cp.async
// group); warp w computes the m16n8k8 tiles of row tile w % (BM/16), every WPR-th column tile.
// Wider tiles (config `ilp`: 64 x 96 and 32 x 64 instead of 32 x 64 and 16 x 64) read the
// operands from L2 fewer times and give each warp more independent MMAs.
// Part of the scene_graph template (scene_graph.cuh).

#include "../attention.cuh"
#include "../layernorm.cuh"
#include "../mma.cuh"
#include "../ptx.cuh"
#include "../rows.cuh"
#include "../sizes.cuh"
#include "../smem.cuh"
#include "tune_common.cuh"

namespace tune_kernels {

// Dynamic shared memory (bytes) of sg_tc_qkv and sg_tc_out_proj (config: tc_qsmem, tc_osmem):
// BM input rows and BN weight rows of stride sg_row_stride(D).
__host__ __device__ constexpr int sg_tc_gemm_smem_bytes(int D, int BM, int BN) { return 4 * (BM + BN) * sg_row_stride(D); }
// Dynamic shared memory (bytes) of sg_tc_attention (config: tc_asmem): q of QR rows, k and v of
// N rows (odd stride), scores QR x N.
__host__ __device__ constexpr int sg_tc_attention_smem_bytes(int N, int D, int H, int QR) {
  return 4 * (round4((QR + 2 * N) * sg_odd_stride(D / H)) + round4(QR * N));
}

// C (BM x BN) = A (BM x K) · Wᵀ (W: BN rows of K) from shared rows of stride S, 3xTF32 (hi·hi +
// hi·lo + lo·hi into one FP32 accumulator). store(r, c, y0, y1): C[r][c] and C[r][c+1], c even.
template <int BM, int BN, int K, int S, int BLOCK, class Store>
__device__ __forceinline__ void sg_tc_tile(const float* a, const float* w, const Store& store) {
  constexpr int RT = BM / 16, WARPS = BLOCK / 32;
  static_assert(BM % 16 == 0 && K % 8 == 0 && WARPS % RT == 0, "BM/16 row tiles must divide the warps");
  constexpr int WPR = WARPS / RT;  // warps per row tile
  static_assert(BN % 8 == 0 && (BN / 8) % WPR == 0, "the warps of a row tile must divide its column tiles");
  constexpr int NT = BN / 8 / WPR;
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int g = lane / 4, t = lane % 4, rt = warp % RT, c0 = warp / RT;
  const float* xa = a + (rt * 16 + g) * S;
  const float* xb = xa + 8 * S;
  float acc[NT][4];
#pragma unroll
  for (int q = 0; q < NT; ++q) acc[q][0] = acc[q][1] = acc[q][2] = acc[q][3] = 0.0f;
#pragma unroll 2
  for (int k = 0; k < K; k += 8) {
    float ah[4], al[4];
    sg_split_a(ah, al, xa, xb, k, t);
#pragma unroll
    for (int q = 0; q < NT; ++q) {
      const float* wr = w + ((c0 + WPR * q) * 8 + g) * S;
      float bh[2], bl[2];
      sg_split_tf32(wr[k + t], bh[0], bl[0]);
      sg_split_tf32(wr[k + t + 4], bh[1], bl[1]);
      mma_tf32(acc[q], al, bh[0], bh[1]);
      mma_tf32(acc[q], ah, bl[0], bl[1]);
      mma_tf32(acc[q], ah, bh[0], bh[1]);
    }
  }
#pragma unroll
  for (int q = 0; q < NT; ++q) {
    const int c = (c0 + WPR * q) * 8 + 2 * t;
    store(rt * 16 + g, c, acc[q][0], acc[q][1]);
    store(rt * 16 + g + 8, c, acc[q][2], acc[q][3]);
  }
}

// BM rows of `src_row(r)` and BN weight rows `w_row(o)` (D floats each) into xs and ws.
template <int BM, int BN, int D, int BLOCK, class SrcRow, class WRow>
__device__ __forceinline__ void sg_tc_load(float* xs, float* ws, const SrcRow& src_row, const WRow& w_row) {
  constexpr int S = sg_row_stride(D);
  sg_copy_rows<BM, D, S, BLOCK>(xs, src_row);
  sg_copy_rows<BN, D, S, BLOCK>(ws, w_row);
  copy_commit();
  copy_wait<0>();
  __syncthreads();
}

}  // namespace tune_kernels

// strategy tc, first launch: qkv[m] (m = 0, 1, 2: q·HD^-1/2, k, v; each (B*N) x D) of a tile of BM
// rows and BN of the 3D columns. Grid (cdiv(B*N, BM), cdiv(3D, BN)); dynamic smem tc_qsmem.
template <int B, int N, int D, int H, int BM, int BN, int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    sg_tc_qkv(const float* __restrict__ nodes, const float* __restrict__ gamma, const float* __restrict__ beta,
              const float* __restrict__ wq, const float* __restrict__ wk, const float* __restrict__ wv,
              float* __restrict__ qkv) {
  using namespace tune_kernels;
  static_assert(D % 8 == 0 && D % H == 0, "D must be a multiple of 8 and of heads");
  constexpr int S = sg_row_stride(D), M = B * N, O = 3 * D;
  using tune_kernels::sg_smem;
  if (blockDim.x != BLOCK || sg_dynamic_smem_size() < static_cast<unsigned>(sg_tc_gemm_smem_bytes(D, BM, BN))) return;
  float* xs = reinterpret_cast<float*>(sg_smem);
  float* ws = xs + BM * S;
  const int r0 = static_cast<int>(blockIdx.x) * BM, o0 = static_cast<int>(blockIdx.y) * BN;
  sg_tc_load<BM, BN, D, BLOCK>(
      xs, ws, [&](int r) { return nodes + (r0 + r < M ? r0 + r : M - 1) * D; },
      [&](int o) {
        const int c = o0 + o < O ? o0 + o : O - 1;
        return (c < D ? wq : (c < 2 * D ? wk : wv)) + (c % D) * D;
      });
  sg_layernorm_rows<BM, D, S, BLOCK, 0>(xs, gamma, beta);
  __syncthreads();
  const float scale = 1.0f / sqrtf(static_cast<float>(D / H));
  sg_tc_tile<BM, BN, D, S, BLOCK>(xs, ws, [&](int r, int c, float y0, float y1) {
    const int o = o0 + c;
    if (r0 + r < M && o < O) {
      const float s = o < D ? scale : 1.0f;
      *reinterpret_cast<float2*>(qkv + (o / D) * M * D + (r0 + r) * D + o % D) = make_float2(y0 * s, y1 * s);
    }
  });
}

// strategy tc, third launch: a block per (batch, head, tile of QR query rows). Scores q·k + bias,
// masked softmax (a row without edges gives attention 0), ctx[b, i, head·HD ..] = a·v.
// Grid B*H*cdiv(N, QR); dynamic smem tc_asmem.
template <int B, int N, int D, int H, int QR, int BLOCK>
__global__ void __launch_bounds__(BLOCK) sg_tc_attention(const float* __restrict__ qkv, const float* __restrict__ bias,
                                                         const float* __restrict__ edge_mask, float* __restrict__ ctx) {
  using namespace tune_kernels;
  constexpr int HD = D / H, HS = sg_odd_stride(HD), M = B * N, TILES = cdiv(N, QR);
  using tune_kernels::sg_smem;
  if (blockDim.x != BLOCK || sg_dynamic_smem_size() < static_cast<unsigned>(sg_tc_attention_smem_bytes(N, D, H, QR))) {
    return;
  }
  float* qs = reinterpret_cast<float*>(sg_smem);                              // QR x HS
  float* ks = qs + QR * HS;                                                   // N x HS
  float* vs = ks + N * HS;                                                    // N x HS
  float* sc = reinterpret_cast<float*>(sg_smem) + round4((QR + 2 * N) * HS);  // QR x N
  const int tile = static_cast<int>(blockIdx.x) % TILES, bh = static_cast<int>(blockIdx.x) / TILES;
  const int b = bh / H, head = bh % H, i0 = tile * QR, tid = static_cast<int>(threadIdx.x);
  constexpr int ROWS = N - (TILES - 1) * QR;  // rows of the last tile
  const int rows = tile == TILES - 1 ? ROWS : QR;
  const float* base = qkv + b * N * D + head * HD;
  for (int u = tid; u < N * HD; u += BLOCK) {
    const int j = u / HD, t = u % HD;
    ks[j * HS + t] = __ldg(base + M * D + j * D + t);
    vs[j * HS + t] = __ldg(base + 2 * M * D + j * D + t);
    if (j < rows) qs[j * HS + t] = __ldg(base + (i0 + j) * D + t);
  }
  __syncthreads();
  const float* bias_rows = bias + ((b * H + head) * N + i0) * N;
  for (int u = tid; u < rows * N; u += BLOCK) {
    const int i = u / N, j = u % N;
    float acc = __ldg(bias_rows + u);
#pragma unroll 8
    for (int t = 0; t < HD; ++t) acc = fmaf(qs[i * HS + t], ks[j * HS + t], acc);
    sc[u] = acc;
  }
  __syncthreads();
  sg_masked_softmax<N, BLOCK>(sc, rows, [&](int r) { return edge_mask + (b * N + i0 + r) * N; });
  __syncthreads();
  for (int u = tid; u < rows * HD; u += BLOCK) {
    const int i = u / HD, t = u % HD;
    float acc = 0.0f;
#pragma unroll 8
    for (int j = 0; j < N; ++j) acc = fmaf(sc[i * N + j], vs[j * HS + t], acc);
    ctx[(b * N + i0 + i) * D + head * HD + t] = acc;
  }
}

// strategy tc, fourth launch: out = nodes + ctx·Woutᵀ for a tile of BM rows and BN columns.
// Grid (cdiv(B*N, BM), cdiv(D, BN)); dynamic smem tc_osmem.
template <int B, int N, int D, int BM, int BN, int BLOCK>
__global__ void __launch_bounds__(BLOCK) sg_tc_out_proj(const float* __restrict__ ctx, const float* __restrict__ wo,
                                                        const float* __restrict__ nodes, float* __restrict__ out) {
  using namespace tune_kernels;
  static_assert(D % 8 == 0, "D must be a multiple of 8");
  constexpr int S = sg_row_stride(D), M = B * N;
  using tune_kernels::sg_smem;
  if (blockDim.x != BLOCK || sg_dynamic_smem_size() < static_cast<unsigned>(sg_tc_gemm_smem_bytes(D, BM, BN))) return;
  float* xs = reinterpret_cast<float*>(sg_smem);
  float* ws = xs + BM * S;
  const int r0 = static_cast<int>(blockIdx.x) * BM, o0 = static_cast<int>(blockIdx.y) * BN;
  sg_tc_load<BM, BN, D, BLOCK>(
      xs, ws, [&](int r) { return ctx + (r0 + r < M ? r0 + r : M - 1) * D; },
      [&](int o) { return wo + (o0 + o < D ? o0 + o : D - 1) * D; });
  sg_tc_tile<BM, BN, D, S, BLOCK>(xs, ws, [&](int r, int c, float y0, float y1) {
    const int o = o0 + c;
    if (r0 + r < M && o < D) {
      const int e = (r0 + r) * D + o;
      const float2 x = __ldg(reinterpret_cast<const float2*>(nodes + e));
      *reinterpret_cast<float2*>(out + e) = make_float2(x.x + y0, x.y + y1);
    }
  });
}

#pragma once
// strategy fused (mappings batch and qtile) and strategy split's second launch: sg_fused and
// sg_split_attention, one body (sg_attention_block), and their shared-memory size.
// Part of the scene_graph template: scene_graph.cuh includes it after the helpers.
// (NVRTC finds a header only by the name the including file gives, so the pieces include
// nothing themselves; scene_graph.cuh includes them in order.)

namespace tune_kernels {

// Dynamic shared memory (bytes) of sg_fused / sg_split_attention; configs/scene_graph.json
// derives the same number as `attn_smem`.
__host__ __device__ constexpr int sg_attention_smem_bytes(int N, int D, int H, int QT, int SMEM_W) {
  return 4 * (N * sg_row_stride(D)                      // hn: LayerNorm of all N rows
              + QT * sg_row_stride(D)                   // q, later ctx
              + QT * H * sg_row_stride(D)               // Wk_hᵀ q_h, later Σ_j a hn[j]
              + round4(H * QT * N)                   // bias, scores, attention
              + round4(QT * N)                       // edge mask rows
              + (SMEM_W ? 2 * D + 4 * D * sg_row_stride(D) : 0));  // gamma, beta, Wq Wk Wv Wout
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
  constexpr int NT = cdiv(N, QT);
  constexpr int WS = SMEM_W ? S : D;  // weight row stride where the weights are read
  extern __shared__ float4 sg_smem[];
  if (blockDim.x != BLOCK || sg_dynamic_smem_size() < static_cast<unsigned>(sg_attention_smem_bytes(N, D, H, QT, SMEM_W))) {
    return;
  }
  float* hn = reinterpret_cast<float*>(sg_smem);  // N x S
  float* qc = hn + N * S;                         // QT x S: q, later ctx
  float* qk = qc + QT * S;                        // (QT x H) x S: Wk_hᵀ q_h, later Σ_j a hn[j]
  float* sc = qk + QT * H * S;                    // (H x QT) x N: bias, scores, attention
  float* msk = sc + round4(H * QT * N);        // QT x N
  float* sw = msk + round4(QT * N);            // SMEM_W: gamma, beta, Wq, Wk, Wv, Wout
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
    copy_commit();
    sg_copy_rows<D, D, S, BLOCK>(s_w, [&](int r) { return wq + r * D; });
    copy_commit();
    sg_copy_rows<D, D, S, BLOCK>(s_w + D * S, [&](int r) { return wk + r * D; });
    copy_commit();
    sg_copy_rows<D, D, S, BLOCK>(s_w + 2 * D * S, [&](int r) { return wv + r * D; });
    copy_commit();
    sg_copy_rows<D, D, S, BLOCK>(s_w + 3 * D * S, [&](int r) { return wo + r * D; });
    copy_commit();
    g_gamma = s_gamma;
    g_beta = s_beta;
    g_wq = s_w;
    g_wk = s_w + D * S;
    g_wv = s_w + 2 * D * S;
    g_wo = s_w + 3 * D * S;
  } else {
    copy_commit();
    // Warm L2 with the weights (cold after a flush); the grid shares the prefetching.
    constexpr int LINES = cdiv(D * D, 32);  // 128-byte lines per weight
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

  copy_wait<(SMEM_W ? 4 : 0)>();
  __syncthreads();
  sg_layernorm_rows<N, D, S, BLOCK, SMEM_W>(hn, g_gamma, g_beta);
  copy_wait<(SMEM_W ? 3 : 0)>();
  __syncthreads();

  // q[r] = scale · hn[row r]·Wqᵀ
  const float scale = 1.0f / sqrtf(static_cast<float>(HD));
  sg_rows_dot<QT, D, D, BLOCK>([&](int o, int c4) { return sg_load4<SMEM_W>(w_q + o * WS + 4 * c4); },
                               [&](int r, int, int c4) { return *reinterpret_cast<const float4*>(hn + row_of(r) * S + 4 * c4); },
                               [&](int r, int o, float y) { qc[r * S + o] = y * scale; });
  copy_wait<(SMEM_W ? 2 : 0)>();
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
      for (int k = 0; k < cdiv(D / 4, SL); ++k) {
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
  copy_wait<(SMEM_W ? 1 : 0)>();
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
  copy_wait<0>();
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

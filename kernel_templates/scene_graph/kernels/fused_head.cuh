#pragma once
// strategy fused, mapping head: sg_fused_head, a cluster of `heads` blocks per query row, and its
// shared-memory size.
// Part of the scene_graph template: scene_graph.cuh includes it after the helpers.
// (NVRTC finds a header only by the name the including file gives, so the pieces include
// nothing themselves; scene_graph.cuh includes them in order.)

namespace tune_kernels {

// Dynamic shared memory (bytes) of sg_fused_head (config: `fh_smem`).
__host__ __device__ constexpr int sg_fused_head_smem_bytes(int N, int D, int H) {
  return 4 * (N * sg_row_stride(D)        // hn
              + round4(D / H) * 2      // q_h, ctx_h
              + sg_row_stride(D)          // Wk_hᵀ q_h, later Σ_j a hn[j]
              + 2 * round4(N)          // bias/scores/attention, mask row
              + round4(D));            // this head's share of the output row, read by the cluster
}

}  // namespace tune_kernels

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
  float* ctx = qh + k::round4(HD);             // HD: ctx_h
  float* u = ctx + k::round4(HD);              // D: Wk_hᵀ q_h, later Σ_j a[j] hn[j]
  float* sc = u + S;                              // N: bias, scores, attention
  float* msk = sc + k::round4(N);              // N: edge mask row i
  float* part = msk + k::round4(N);            // D: this head's share of out[b, i, :]
  const int h = static_cast<int>(k::sg_cluster_rank());
  const int b = static_cast<int>(blockIdx.x) / H / N, i = static_cast<int>(blockIdx.x) / H % N;
  const int tid = static_cast<int>(threadIdx.x);

  k::sg_copy_rows<N, D, S, BLOCK>(hn, [&](int r) { return nodes + (b * N + r) * D; });
  for (int j = tid; j < N; j += BLOCK) k::sg_copy4(msk + j, edge_mask + (b * N + i) * N + j);
  k::copy_commit();
  // Warm L2 with this head's weight rows (cold after a flush); the cluster's blocks share it.
  {
    constexpr int LINES = k::cdiv(HD * D, 32);
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
  k::copy_wait<0>();
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

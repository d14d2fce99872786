#pragma once
// strategy split: sg_pair_bias (first launch), and for mapping head sg_head_attention and
// sg_out_proj, with their shared-memory sizes.
// Part of the scene_graph template (scene_graph.cuh).

#include "../attention.cuh"
#include "../layernorm.cuh"
#include "../pair_bias.cuh"
#include "../ptx.cuh"
#include "../rows.cuh"
#include "../sizes.cuh"
#include "../smem.cuh"
#include "split/head_attention.cuh"
#include "split/head_inputs.cuh"
#include "tune_common.cuh"

namespace tune_kernels {

// Dynamic shared memory (bytes) of sg_head_attention (config: `head_smem`).
__host__ __device__ constexpr int sg_head_smem_bytes(int N, int D, int H, int SMEM_W) {
  return 4 * (N * sg_row_stride(D)                                     // hn
              + (SMEM_W ? 2 * D + 3 * (D / H) * sg_row_stride(D) : 0)  // gamma, beta, head rows of Wq Wk Wv
              + round4(3 * N * sg_odd_stride(D / H))                   // q_h, k_h, v_h
              + 2 * round4(N * N));                                    // bias/scores, mask
}

// Dynamic shared memory (bytes) of sg_out_proj (config: `op_smem`).
__host__ __device__ constexpr int sg_out_proj_smem_bytes(int D, int ROWS) { return 4 * ROWS * sg_row_stride(D); }
// Dynamic shared memory (bytes) of sg_pair_bias (config: `pb_smem`).
__host__ __device__ constexpr int sg_pair_bias_smem_bytes(int H, int P, int SMEM_W) {
  return SMEM_W ? 4 * (round4(P * P) + round4(P) + round4(H * P) + round4(H)) : 0;
}

}  // namespace tune_kernels

// strategy split, first launch: one thread per pair (b, i, j) writes bias[b, :, i, j].
// Grid cdiv(B*N*N, BLOCK); dynamic smem pb_smem (the MLP weights when SMEM_W).
template <int B, int N, int H, int P, int BLOCK, int SMEM_W>
__global__ void __launch_bounds__(BLOCK, 1)
    sg_pair_bias(const float* __restrict__ pair_feats, const float* __restrict__ w0, const float* __restrict__ b0,
                 const float* __restrict__ w2, const float* __restrict__ b2, float* __restrict__ bias) {
  using namespace tune_kernels;
  using tune_kernels::sg_smem;
  if (blockDim.x != BLOCK) return;
  if constexpr (SMEM_W != 0) {
    if (sg_dynamic_smem_size() < static_cast<unsigned>(sg_pair_bias_smem_bytes(H, P, SMEM_W))) return;
  }
  const int pair = static_cast<int>(blockIdx.x) * BLOCK + static_cast<int>(threadIdx.x);
  if constexpr (SMEM_W != 0) {
    float* s_w0 = reinterpret_cast<float*>(sg_smem);
    float* s_b0 = s_w0 + round4(P * P);
    float* s_w2 = s_b0 + round4(P);
    float* s_b2 = s_w2 + round4(H * P);
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
    sg_head_attention(const float* __restrict__ nodes, const float* __restrict__ bias, const float* __restrict__ edge_mask,
                      const float* __restrict__ gamma, const float* __restrict__ beta, const float* __restrict__ wq,
                      const float* __restrict__ wk, const float* __restrict__ wv, float* __restrict__ ctx) {
  using namespace tune_kernels;
  static_assert(D % H == 0 && D % 4 == 0, "D must be a multiple of heads and of 4");
  using L = SgHeadLayout<N, D, H, SMEM_W>;
  constexpr int S = L::S;
  using tune_kernels::sg_smem;
  if (blockDim.x != BLOCK || sg_dynamic_smem_size() < static_cast<unsigned>(sg_head_smem_bytes(N, D, H, SMEM_W))) {
    return;
  }
  float* hn = reinterpret_cast<float*>(sg_smem) + L::kHn;    // N x S
  float* sw = reinterpret_cast<float*>(sg_smem) + L::kSw;    // SMEM_W: gamma, beta, 3 x HD x S
  float* qkv = reinterpret_cast<float*>(sg_smem) + L::kQkv;  // 3 x N x HS
  float* sc = reinterpret_cast<float*>(sg_smem) + L::kSc;    // N x N
  float* msk = reinterpret_cast<float*>(sg_smem) + L::kMsk;  // N x N
  const int b = static_cast<int>(blockIdx.x) / H, head = static_cast<int>(blockIdx.x) % H;
  const int tid = static_cast<int>(threadIdx.x);

  // Step 1 (kernels/split/head_inputs.cuh). Step 2: LayerNorm of hn (layernorm.cuh).
  sg_head_copy_inputs<N, D, H, BLOCK, SMEM_W>(nodes, bias, edge_mask, gamma, beta, wq, wk, wv, b, head, tid);
  copy_wait<(SMEM_W ? 1 : 0)>();
  __syncthreads();
  sg_layernorm_rows<N, D, S, BLOCK, SMEM_W>(hn, SMEM_W ? sw : gamma, SMEM_W ? sw + D : beta);
  copy_wait<0>();
  __syncthreads();

  // Steps 3-5 (kernels/split/head_attention.cuh).
  sg_head_project<N, D, H, BLOCK, SMEM_W>(wq, wk, wv, head);
  __syncthreads();
  sg_head_scores<N, D, H, BLOCK, SMEM_W>(tid, qkv, sc);
  __syncthreads();
  sg_masked_softmax<N, BLOCK>(sc, N, [&](int row) { return msk + row * N; });
  __syncthreads();
  sg_head_context<N, D, H, BLOCK, SMEM_W>(ctx, b, head, tid);
}

// strategy split, mapping head, third launch: out = nodes + ctx·Woutᵀ for a tile of ROWS of the
// B*N rows and COLS output features. Grid (cdiv(B*N, ROWS), cdiv(D, COLS)); dynamic smem op_smem.
// Wout is always read through the cache (whatever smem_w): each block uses a COLS x D slice
// once, reused ROWS times from registers, and a whole D x D Wout would not fit at D = 256.
template <int B, int N, int D, int ROWS, int COLS, int BLOCK>
__global__ void __launch_bounds__(BLOCK, 1) sg_out_proj(const float* __restrict__ ctx, const float* __restrict__ wo,
                                                        const float* __restrict__ nodes, float* __restrict__ out) {
  using namespace tune_kernels;
  constexpr int S = sg_row_stride(D);
  constexpr int M = B * N;
  using tune_kernels::sg_smem;
  if (blockDim.x != BLOCK || sg_dynamic_smem_size() < static_cast<unsigned>(sg_out_proj_smem_bytes(D, ROWS))) {
    return;
  }
  float* xs = reinterpret_cast<float*>(sg_smem);
  const int r0 = static_cast<int>(blockIdx.x) * ROWS, o0 = static_cast<int>(blockIdx.y) * COLS;
  sg_copy_rows<ROWS, D, S, BLOCK>(xs, [&](int r) { return ctx + (r0 + r < M ? r0 + r : M - 1) * D; });
  copy_commit();
  copy_wait<0>();
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

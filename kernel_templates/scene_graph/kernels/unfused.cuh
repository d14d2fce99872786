#pragma once
// strategy unfused (the baseline): one launch per stage, one thread per output element.
// Part of the scene_graph template (scene_graph.cuh).

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
__global__ void __launch_bounds__(BLOCK, 1) sg_naive_pair_bias(const float* pair_feats, const float* w0, const float* b0,
                                                               const float* w2, const float* b2, float* bias) {
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
__global__ void __launch_bounds__(BLOCK, 1) sg_naive_attention(const float* q, const float* k, const float* v,
                                                               const float* bias, const float* edge_mask, float* ctx) {
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

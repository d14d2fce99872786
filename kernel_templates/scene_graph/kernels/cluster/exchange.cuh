#pragma once
// sg_cluster, the cluster exchanges (kernels/cluster.cuh): exchange 1 (bias, k, v, after step 3)
// and exchange 2 (ctx, after step 4). ASYNC == 0: plain remote stores, then barrier.cluster with
// release/acquire; ASYNC == 1: remote st.async stores that complete bytes on the receiving
// block's mbarrier (bar_x1, bar_x2), on which the receiver waits for exactly the bytes it is
// sent. Part of the scene_graph template (scene_graph.cuh).

#include "../../ptx.cuh"
#include "../../smem.cuh"

// ASYNC: thread 0 sets up the two exchange mbarriers with the bytes the other blocks send: bias
// RN x N and k, v N x HD; ctx rows x D (`rows`: the block's rows inside the batch).
template <class C>
__device__ __forceinline__ void sg_cluster_expect_exchanges(int h, int rows, int tid) {
  namespace k = tune_kernels;
  using L = typename C::L;
  constexpr int N = C::kN, D = C::kD, HD = C::HD, RN = C::RN, JC = C::JC;
  using tune_kernels::sg_smem;
  float* const sm = reinterpret_cast<float*>(sg_smem);
  float* const bar_x1 = sm + L::kBar + 2;
  float* const bar_x2 = sm + L::kBar + 4;
  if constexpr (C::kAsync != 0) {
    if (tid == 0) {  // the bytes the other blocks send: bias RN x N and k, v N x HD; ctx rows x D
      const int own_cols = N - h * JC < JC ? (N - h * JC > 0 ? N - h * JC : 0) : JC;  // this block's bias columns
      k::sg_mbar_init(bar_x1, 1);
      k::sg_mbar_expect_bytes(bar_x1, static_cast<unsigned>(4 * (RN * (N - own_cols) + 2 * (N - rows) * HD)));
      k::sg_mbar_init(bar_x2, 1);
      k::sg_mbar_expect_bytes(bar_x2, static_cast<unsigned>(4 * rows * (D - HD)));
    }
  }
}

// End of exchange X: with X == 1 this block's bias, k and v have all arrived (every block's
// stores are done); with X == 2 the ctx rows of all heads (with ASYNC, this block's own head
// after a block barrier).
template <class C, int X>
__device__ __forceinline__ void sg_cluster_exchange_wait() {
  namespace k = tune_kernels;
  using tune_kernels::sg_smem;
  float* const xbar = reinterpret_cast<float*>(sg_smem) + C::L::kBar + 2 * X;  // bar_x1, bar_x2
  if constexpr (C::kAsync != 0) {
    if constexpr (X == 2) __syncthreads();  // this block's own head of ctx
    k::sg_mbar_wait<true>(xbar, 0);
  } else {
    k::sg_cluster_sync();
  }
}

// A store of exchange X (1: bias, k, v; 2: ctx) into block `to` of the cluster, this one included
// (with ASYNC a plain store there, published by the block's own barriers; elsewhere st.async
// completing bytes on the receiver's mbarrier of exchange X).
template <class C, int X>
__device__ __forceinline__ void sg_cluster_put(float* p, int to, float v, int rank) {
  namespace k = tune_kernels;
  using tune_kernels::sg_smem;
  float* const xbar = reinterpret_cast<float*>(sg_smem) + C::L::kBar + 2 * X;  // bar_x1, bar_x2
  if constexpr (C::kAsync != 0) {
    if (to == rank) {
      *p = v;
    } else {
      k::sg_st_async(p, static_cast<unsigned>(to), v, xbar);
    }
  } else {
    k::sg_cluster_store(p, static_cast<unsigned>(to), v);
  }
}

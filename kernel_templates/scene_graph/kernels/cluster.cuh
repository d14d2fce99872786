#pragma once
// strategy fused, mapping cluster: sg_cluster, composed of its phases (kernels/cluster/*.cuh; its
// shared-memory layout SgClusterLayout and constants SgClusterPlan in kernels/cluster/plan.cuh).
// Part of the scene_graph template (scene_graph.cuh).
// A phase function finds its buffers in the one dynamic shared-memory array (smem.cuh) from
// SgClusterLayout (a shared-memory pointer handed from the kernel changes the machine code);
// the lane coordinates (g, t4, v5) come from the kernel (recomputed in a phase, they did).

#include "../ptx.cuh"
#include "cluster/attention.cuh"
#include "cluster/copies.cuh"
#include "cluster/exchange.cuh"
#include "cluster/layernorm.cuh"
#include "cluster/out_bfly.cuh"
#include "cluster/out_mma.cuh"
#include "cluster/out_proj.cuh"
#include "cluster/plan.cuh"
#include "cluster/projections.cuh"
#include "cluster/relation_mlp.cuh"
#include "tune_common.cuh"

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
//      ctx rows of the H blocks of row split r (ATTN 0, attention lanes: a lane per key; 1,
//      attention quad: a lane per key and quarter of the head's columns);  [exchange 2]
//   5. out[rows][h HD, (h+1) HD) = nodes + ctx · Woutᵀ, Wout from the registers of step 1
//      (OUT 0, out fma: FP32 FMAs, KLO lanes per output; 1, out mma: 3xTF32 MMAs, four warps per
//      row tile, a k-range each; 2, out butterfly: FP32 FMAs, a lane per k, the sums meeting in a
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
__global__ void __cluster_dims__(H* R, 1, 1) __launch_bounds__(BLOCK, 1)
    sg_cluster(const float* __restrict__ nodes, const float* __restrict__ pair_feats, const float* __restrict__ edge_mask,
               const float* __restrict__ gamma, const float* __restrict__ beta, const float* __restrict__ wq,
               const float* __restrict__ wk, const float* __restrict__ wv, const float* __restrict__ w0,
               const float* __restrict__ b0, const float* __restrict__ w2, const float* __restrict__ b2,
               const float* __restrict__ wo, float* __restrict__ out) {
  namespace k = tune_kernels;
  using C = k::SgClusterPlan<N, D, H, P, R, BLOCK, BULK, KSPLIT, ASYNC, NTILE, OVERLAP, OUT, ATTN>;
  using L = typename C::L;
  constexpr int RN = C::RN, PPT = C::PPT, NT = C::NT, KSW = C::KSW, KS5 = C::KS5, OPW = C::OPW, WO4 = C::WO4;
  constexpr bool kOutMma = C::kOutMma, kOutBfly = C::kOutBfly;
  static_assert(D % H == 0 && D % 8 == 0 && P % 4 == 0, "needs D a multiple of heads and of 8, P of 4");
  static_assert((D / 8) % KSPLIT == 0, "KSPLIT must divide D / 8");
  static_assert(H * R <= 8, "a portable cluster has at most 8 blocks");
  static_assert(C::HD * C::KLO <= BLOCK && 4 * WO4 <= k::kSgRegWeights, "the block must hold Wout's head rows");
  static_assert(!kOutBfly || (C::NOG <= C::NW && OPW * KS5 <= k::kSgRegWeights), "the block must hold Wout's head rows");
  // No check of blockDim and the dynamic shared memory size here (tune launches the config's):
  // reading them at the start costs a constant-cache miss on a cold launch before any load.
  const int rank = static_cast<int>(k::sg_cluster_rank());
  const int h = rank / R, r = rank % R;
  const int b = static_cast<int>(blockIdx.x) / (H * R);
  const int i0 = r * RN;
  const int rows = N - i0 < RN ? (N - i0 > 0 ? N - i0 : 0) : RN;  // own rows inside the batch
  const int tid = static_cast<int>(threadIdx.x), warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, t4 = lane % 4;  // mma lane coordinates
  const int v5 = warp - (C::NW - C::W5);  // OUT 2: this warp's index among the last W5

  sg_cluster_expect_exchanges<C>(h, rows, tid);  // ASYNC: the exchanges' mbarriers
  k::sg_cluster_arrive_relaxed();
  // Step 1 (kernels/cluster/copies.cuh).
  sg_cluster_copy_inputs<C>(nodes, pair_feats, edge_mask, gamma, beta, wq, wk, wv, w0, b0, w2, b2, b, h, i0, tid, warp,
                            lane);
  // FP32 relation MLP: the pair features of pairs tid + BLOCK q into registers.
  float4 pf[L::kMlpMma ? 1 : PPT][P / 4];
  sg_cluster_load_pair_features<C>(pf, pair_feats, b, h, i0, tid);
  // Head h's Wout rows in registers for step 5 (kernels/cluster/out_proj.cuh): wor (OUT 0, threads
  // from warp OW0 on, row group rg, column oo, lane ol: float4s ol + KLO s of row h HD + oo).
  float4 wor[kOutMma || kOutBfly ? 1 : WO4];
  float wt[kOutBfly ? OPW : 1][kOutBfly ? KS5 : 1];   // kOutBfly: Wout[h HD + og OPW + o][lane + 32 s]
  float wof[kOutMma ? NT : 1][kOutMma ? KSW : 1][2];  // kOutMma: B fragments (column tile, k-step)
  sg_cluster_load_wout<C>(wof, wt, wor, wo, h, tid, warp, lane);

  // Step 2. LayerNorm of the own rows (kernels/cluster/layernorm.cuh) and the relation MLP of this
  // block's pairs (kernels/cluster/relation_mlp.cuh), which waits at the cluster's first barrier.
  k::copy_wait<BULK != 0 ? 0 : 1>();
  __syncthreads();
  sg_cluster_layernorm<C>(warp, lane);
  sg_cluster_projection_warps_meet<C>(warp);  // kOv: the projections start before the MLP ends
  if constexpr (L::kMlpMma) {
    sg_cluster_relation_mlp_mma<C>(h, r, rank, warp, g, t4);
  } else {
    sg_cluster_relation_mlp_fp32<C>(pf, h, r, rank, tid);
  }
  sg_cluster_weights_wait<C>();

  // Step 3. q_h, k_h, v_h of the own rows (kernels/cluster/projections.cuh).
  sg_cluster_project<C>(h, rank, i0, tid, warp, lane, g, t4);
  __syncthreads();                   // qs, block-wide
  sg_cluster_exchange_wait<C, 1>();  // exchange 1: bias, k, v (kernels/cluster/exchange.cuh)

  // Step 4. Attention of the own rows, head h (kernels/cluster/attention.cuh).
  if constexpr (ATTN == 1) {
    sg_cluster_attention_quad<C>(h, r, rank, i0, warp, lane);
  } else {
    sg_cluster_attention_lanes<C>(h, r, rank, i0, warp, lane);
  }
  sg_cluster_exchange_wait<C, 2>();  // exchange 2: ctx

  // Step 5. out[i0 + i][h HD + oo] = nodes + ctx[i] · Wout[h HD + oo] (kernels/cluster/out_*.cuh).
  if constexpr (kOutMma) {
    sg_cluster_out_mma<C>(wof, out, b, h, i0, warp, lane, g, t4);
  } else if constexpr (kOutBfly) {
    sg_cluster_out_bfly<C>(wt, out, b, h, i0, v5, lane);
  } else {
    sg_cluster_out_plain<C>(wor, out, b, h, i0, tid, warp);
  }
}

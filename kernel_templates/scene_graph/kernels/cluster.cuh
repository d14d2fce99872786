#pragma once
// strategy fused, mapping cluster: sg_cluster, composed of its phases (kernels/cluster/*.cuh; its
// shared-memory layout SgClusterLayout and constants SgClusterPlan in kernels/cluster/plan.cuh).
// Part of the scene_graph template: scene_graph.cuh includes it after the helpers and phases.
// A phase function declares the extern __shared__ array itself and finds its buffers from
// SgClusterLayout (a shared-memory pointer handed from the kernel changes the machine code).
// (NVRTC finds a header only by the name the including file gives, so the pieces include
// nothing themselves; scene_graph.cuh includes them in order.)

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
  using C = k::SgClusterPlan<N, D, H, P, R, BLOCK, BULK, KSPLIT, ASYNC, NTILE, OVERLAP, OUT, ATTN>;
  using L = typename C::L;
  constexpr int HD = C::HD, S = C::S, HS = C::HS, RN = C::RN, PS = C::PS, JC = C::JC;
  constexpr int NW = C::NW, KLO = C::KLO, WO4 = C::WO4, PAIRS = C::PAIRS, PPT = C::PPT;
  constexpr int NT = C::NT, MT = C::MT, KST = C::KST, NB = C::NB, NG = C::NG, PW = C::PW, UT = C::UT;
  constexpr bool kOv = C::kOv, kMlpHalves = C::kMlpHalves;
  constexpr int LNW = C::LNW, kProjBar = C::kProjBar;
  constexpr int KW = C::KW, KSW = C::KSW, kOutBar = C::kOutBar;
  constexpr bool kOutMma = C::kOutMma, kOutBfly = C::kOutBfly;
  constexpr int KS5 = C::KS5, OPW = C::OPW, RPW = C::RPW, NOG = C::NOG, NRG = C::NRG, RGW = C::RGW, W5 = C::W5;
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

  sg_cluster_expect_exchanges<C>(h, rows, tid);  // ASYNC: the exchanges' mbarriers
  k::sg_cluster_arrive_relaxed();
  // Step 1 (kernels/cluster/copies.cuh).
  sg_cluster_copy_inputs<C>(nodes, pair_feats, edge_mask, gamma, beta, wq, wk, wv, w0, b0, w2, b2, b, h, i0, tid, warp, lane);
  // FP32 relation MLP: the pair features of pairs tid + BLOCK q into registers.
  constexpr int PPR = L::kMlpMma ? 1 : PPT;
  float4 pf[PPR][P / 4];
  sg_cluster_load_pair_features<C>(pf, pair_feats, b, h, i0, tid);
  // Head h's Wout rows in registers for step 5 (kernels/cluster/out_proj.cuh): wor (OUT 0, threads
  // from warp OW0 on, row group rg, column oo, lane ol: float4s ol + KLO s of row h HD + oo).
  float4 wor[kOutMma || kOutBfly ? 1 : WO4];
  float wt[kOutBfly ? OPW : 1][kOutBfly ? KS5 : 1];  // kOutBfly: Wout[h HD + og OPW + o][lane + 32 s]
  const int v5 = warp - (NW - W5);              // kOutBfly: this warp's index among the last W5
  float wof[kOutMma ? NT : 1][kOutMma ? KSW : 1][2];  // kOutMma: B fragments (column tile, k-step)
  sg_cluster_load_wout<C>(wof, wt, wor, wo, h, tid, warp, lane);

  // Step 2. LayerNorm of the own rows (a warp per row, the row in registers), stored as TF32
  // (hi, lo) pairs for the projections; the relation MLP of this block's pairs.
  k::copy_wait<BULK != 0 ? 0 : 1>();
  __syncthreads();
  if (warp < LNW) {  // rows warp + LNW q, all of a warp's rows at once (independent shuffles)
    constexpr int DL = k::cdiv(D, 32), RPW = k::cdiv(RN, LNW);
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
        k::copy_wait<0>();
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
      k::copy_wait<0>();
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
  sg_cluster_exchange_wait<C, 1>();  // exchange 1: bias, k, v (kernels/cluster/exchange.cuh)

  // Step 4. A warp per query row i0 + i: lane j % 32 holds score j; lanes over t for ctx_h.
  // ATTN == 2: a warp per query row, lane (tq, jg) = (lane / 8, lane % 8) takes the keys jg + 8 m
  // and the quarter tq of the head's columns: each lane reads HQ = HD / 4 columns of its keys' k
  // and v rows and of q (8-byte loads, conflict-free), the quarters' partial scores meet in two
  // shuffles, the softmax reductions run over the 8 key lanes (three), and the partial sums over v
  // meet in a transposed butterfly over the key lanes (lane jg ends with column tq HQ + jg).
  // About 40 % fewer shared-memory wavefronts than a lane per key with q broadcast (a 16-byte
  // load costs four wavefronts whatever the lanes share), and shorter reductions.
  constexpr int HQ = HD / 4, MQ = k::cdiv(N, 8), CV = HQ <= 8 ? 8 : HQ;
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
    constexpr int H2 = k::cdiv(HQ, 2);
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
    constexpr int JL = k::cdiv(N, 32), TL = k::cdiv(HD, 32);
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
  sg_cluster_exchange_wait<C, 2>();  // exchange 2: ctx

  // Step 5. out[i0 + i][h HD + oo] = nodes + ctx[i] · Wout[h HD + oo], rows i = rg + C::RGO q (OUT 0:
  // kernels/cluster/out_proj.cuh).
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
  } else {
    sg_cluster_out_plain<C>(wor, out, b, h, i0, tid, warp);
  }
}

#pragma once
// strategy fused, mapping cluster: the shared-memory layout of sg_cluster (SgClusterLayout) and
// the constants of a variant (SgClusterPlan).
// Part of the scene_graph template (scene_graph.cuh).

#include "../../sizes.cuh"
#include "tune_common.cuh"

namespace tune_kernels {

// Most weights (floats) a thread of sg_cluster keeps in registers.
constexpr int kSgRegWeights = 48;
// Shared memory of sg_cluster, offsets in floats (each a multiple of 4); kBytes is the config's
// `cl_smem`.
template <int N, int D, int H, int P, int R, int KSPLIT = 1>
struct SgClusterLayout {
  static constexpr int S = sg_row_stride(D), RN = cdiv(N, R);
  // Row stride of q_h, k_h, v_h: an odd number of float4s when HD % 4 == 0 (the scores read
  // float4s of 8 rows at once, conflict-free), else an odd number of floats.
  static constexpr int HD = D / H;
  static constexpr int HS = HD % 4 == 0 ? ((HD / 4) % 2 == 1 ? HD : HD + 4) : sg_odd_stride(HD);
  static constexpr int JC = cdiv(N, H);                 // pair columns of one block's relation MLP share
  static constexpr bool kMlpMma = P % 8 == 0;           // relation MLP on the tensor cores
  static constexpr int PS = kMlpMma ? P + 4 : P;        // row stride of W0 and of the staged pair features
  static constexpr int kX = 0;                          // RN x S own node rows (also the residual)
  static constexpr int kXh = kX + RN * S;               // RN x S float2: LayerNorm rows, TF32 (hi, lo)
  static constexpr int kW = kXh + 2 * RN * S;           // 3 HD x S
  static constexpr int kCtx = kW + 3 * (D / H) * S;     // RN x S
  static constexpr int kQ = kCtx + RN * S;              // RN x HS
  static constexpr int kK = kQ + round4(RN * HS);       // N x HS
  static constexpr int kV = kK + round4(N * HS);        // N x HS
  static constexpr int kBias = kV + round4(N * HS);     // RN x N
  static constexpr int kMask = kBias + round4(RN * N);  // RN x N
  static constexpr int kPart = kMask + round4(RN * N);  // KSPLIT > 1: KSPLIT x 3 x RN x HD partial projections
  // (or, as MMA fragments, KSPLIT - 1 partial tiles of 16 x 8 per (matrix, row tile, column tile))
  static constexpr int kPartSize = round4(KSPLIT * 3 * RN * HD) > (KSPLIT - 1) * 3 * cdiv(RN, 16) * cdiv(HD, 8) * 128
                                       ? round4(KSPLIT * 3 * RN * HD)
                                       : (KSPLIT - 1) * 3 * cdiv(RN, 16) * cdiv(HD, 8) * 128;
  static constexpr int kW0 = kPart + (KSPLIT > 1 ? kPartSize : 0);  // P x PS
  static constexpr int kB0 = kW0 + round4(P * PS);                  // P
  static constexpr int kW2 = kB0 + round4(P);                       // H x P, then b2 (H)
  static constexpr int kGB = kW2 + round4(H * P + H);               // 2 D
  static constexpr int kPF = kGB + 2 * round4(D);                   // kMlpMma: RN JC x PS pair features
  // Relation MLP tiles (16 pairs) shared by two warps, half the hidden units each (the partner's
  // sums pass through kMx, the tile's named barrier is 1 + tile): needs P / 8 even and at most 15 tiles.
  static constexpr int kMlpTiles = cdiv(RN * JC, 16);
  static constexpr bool kMlpHalves = kMlpMma && (P / 8) % 2 == 0 && kMlpTiles <= 15;
  static constexpr int kMx = kPF + (kMlpMma ? round4(RN * JC * PS) : 0);    // kMlpHalves: tiles x 16 x H
  static constexpr int kBar = kMx + (kMlpHalves ? kMlpTiles * 16 * H : 0);  // 3 mbarriers (8 bytes each)
  static constexpr int kBytes = 4 * (kBar + 8);
};

// The constants of one sg_cluster variant, shared by its phase functions (kernels/cluster/*.cuh):
// the kernel's template parameters (kN .. kAttn) and what follows from them. The comments at
// their uses in the phases say what each is. OUT is the knob out (problem.json cl_out: 0 fma,
// 1 mma, 2 butterfly), ATTN the knob attention (cl_attn: 0 lanes, 1 quad); a variant that
// problem.json refuses does not compile (static_assert) instead of running another one.
template <int N, int D, int H, int P, int R, int BLOCK, int BULK, int KSPLIT, int ASYNC, int NTILE, int OVERLAP, int OUT,
          int ATTN>
struct SgClusterPlan {
  static_assert(OUT >= 0 && OUT <= 2, "OUT is 0 (out fma), 1 (out mma) or 2 (out butterfly)");
  static_assert(ATTN == 0 || ATTN == 1, "ATTN is 0 (attention lanes) or 1 (attention quad)");
  static_assert(ATTN == 0 || ((D / H) % 4 == 0 && N <= 64), "attention quad needs D / heads a multiple of 4 and N <= 64");
  using L = SgClusterLayout<N, D, H, P, R, KSPLIT>;
  static constexpr int kN = N, kD = D, kH = H, kP = P, kR = R, kBlock = BLOCK, kBulk = BULK, kKsplit = KSPLIT;
  static constexpr int kAsync = ASYNC, kNtile = NTILE, kOverlap = OVERLAP, kOut = OUT, kAttn = ATTN;
  static constexpr int HD = D / H;
  static constexpr int S = L::S, HS = L::HS, RN = L::RN, PS = L::PS, JC = L::JC;
  static constexpr int NW = BLOCK / 32;
  static constexpr int KLO = sg_reg_lanes(HD, D, BLOCK);
  static constexpr int WO4 = D / 4 / KLO;                          // Wout float4s a thread holds
  static constexpr int PAIRS = RN * JC, PPT = cdiv(PAIRS, BLOCK);  // pairs, pairs per thread
  static constexpr int NT = cdiv(HD, 8), MT = cdiv(RN, 16);        // mma tiles of the projections
  static constexpr int KST = D / 8 / KSPLIT;                       // k-steps of one projection task
  // Relation MLP tiles of 16 pairs on the last MW warps (with kMlpHalves two warps per tile, half
  // the hidden units each); the LayerNorm rows on the first LNW warps (all when no warp is free).
  // Projection tasks: NB column tiles of one matrix, one row tile, one k-range each (the A
  // fragments a task loads serve its NB tiles).
  static constexpr int NB = NTILE < NT ? NTILE : NT, NG = cdiv(NT, NB), PW = 3 * MT * NG * KSPLIT;
  static constexpr int UT = cdiv(PAIRS, 16);
  // OVERLAP: the first PW warps take one projection task each and the weight copies; the first
  // LNW warps (see below) take the LayerNorm and meet at a named barrier of their own; the last
  // UT warps run the MLP meanwhile (those among the LayerNorm warps after it).
  static_assert(
      OVERLAP == 0 || (L::kMlpMma && PW + UT <= NW),
      "overlap needs the relation MLP on the tensor cores (P % 8 == 0) and a warp per projection task and MLP tile");
  static constexpr bool kOv = OVERLAP != 0;
  static constexpr bool kMlpHalves = !kOv && L::kMlpHalves && 2 * UT <= NW && UT <= 13;
  static constexpr int MW = L::kMlpMma ? sg_min(kMlpHalves ? 2 * UT : UT, NW) : 0;
  // With kOv the LayerNorm takes the first max(RN, PW) warps (a row each when RN <= NW), which
  // then meet at the projection barrier: the projection warps start once every row is done; the
  // other warps go straight on to the MLP.
  static constexpr int LNW = kOv ? sg_min(NW, RN > PW ? RN : PW) : (NW - MW > 0 ? NW - MW : NW);
  static constexpr int kProjBar = 15;  // named barrier of the projection warps (the MLP halves use 1 .. UT)
  // OUT == 1: out = ctx · Woutᵀ on the tensor cores (3xTF32), KW warps per 16-row tile, a k-range
  // each with its Wout fragments in registers; the partial fragments meet at named barrier 14
  // (through the LayerNorm buffer, free by then) and the tile's last warp adds them in k order.
  static constexpr int KW = 4, KSW = D / 8 / KW, kOutBar = 14;
  static_assert(OUT != 1 || ((D / 8) % KW == 0 && MT * KW <= NW && MT * (KW - 1) * NT * 128 <= 2 * RN * S),
                "out mma needs D % 32 == 0, KW warps per row tile and the partial tiles in the LayerNorm buffer");
  static constexpr bool kOutMma = OUT == 1;
  // OUT == 2: out = ctx · Woutᵀ with FP32 FMAs, a warp per (OPW outputs, RPW = 32 / OPW rows):
  // lane l keeps Wout[o][l + 32 s] (s < KS) of its OPW outputs in registers (coalesced loads),
  // reads ctx[i][l + 32 s] (4-byte loads, no broadcast), and the warp's 32 sums (row OPW + o) over
  // its lanes meet in one transposed butterfly (31 shuffles), after which lane l holds sum l. The
  // row bits need no selects: slot row q of lane l holds ctx row q ^ (l / OPW), so at the levels
  // 16 .. OPW each lane sends its upper slots and its partner's lower slots hold the same sums;
  // the output levels OPW / 2 .. 1 select (2 OPW - 2 selects). The last W5 warps: OPW = 8 when
  // the registers allow (8 KS <= kSgRegWeights), else 4 (D <= 48 KLO <= 384 leaves KS <= 12).
  static constexpr int KS5 = cdiv(D, 32);
  static constexpr int OPW = 8 * KS5 <= kSgRegWeights ? 8 : 4;
  static constexpr int RPW = 32 / OPW, NOG = cdiv(HD, OPW), NRG = cdiv(RN, RPW);
  static constexpr int RGW = sg_min(NRG, NW / NOG > 0 ? NW / NOG : 1), W5 = NOG * RGW;
  static constexpr bool kOutBfly = OUT == 2;
  // OUT == 0, Wout: threads from warp OW0 on, in RGO row groups (as many as the block holds, at
  // most RN): row group rg, column oo of head h, lane ol: float4s ol + KLO s of row h HD + oo.
  static constexpr int RGO = sg_min(RN, BLOCK / (HD * KLO));
  static constexpr int OW0 = (BLOCK - cdiv(RGO * HD * KLO, 32) * 32) / 32;
};

}  // namespace tune_kernels

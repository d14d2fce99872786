#pragma once
// Where the pairs are: a pair's row in pair_repr, the tile a block or warp owns, the pair slot of a
// thread or warp, and the epilogue every strategy ends with (out[b,i,j], and out[b,j,i] of a
// mirrored SYM tile, from one value; the tensor-core strategies' layer 3 from their fragments).
// Part of the contact template (contact.cuh).

#include "tune_common.cuh"

namespace tune_kernels {
namespace contact {

__device__ __forceinline__ long long row_offset(int N, int C, int b, int i, int j) {
  return (static_cast<long long>(b * N + i) * N + j) * C;
}

// The tile of (i,j) a block owns (tile mapping).
struct TileOrigin {
  int b, i0, j0;
  bool mirror;  // SYM off-diagonal tile: also write out[b,j,i]
};

// The tile of index bid: the block's (tile mapping) or the warp's (warp_tile mapping).
template <int N, int TILE_I, int TILE_J, int SYM>
__device__ __forceinline__ TileOrigin tile_origin(int bid = static_cast<int>(blockIdx.x)) {
  constexpr int kTilesI = cdiv(N, TILE_I), kTilesJ = cdiv(N, TILE_J);
  if constexpr (SYM) {
    // Upper triangle ti <= tj, row-major; counted from its end, row r (from the bottom) holds
    // r + 1 tiles, so u = r(r+1)/2 + q with 0 <= q <= r.
    constexpr int T = kTilesI;
    constexpr int M = T * (T + 1) / 2;
    const int b = bid / M;
    const int u = M - 1 - (bid - b * M);
    // sqrtf gives r to within one or two; the integer steps make it exact.
    int r = static_cast<int>((sqrtf(8.0f * static_cast<float>(u) + 1.0f) - 1.0f) * 0.5f);
    while (r > 0 && static_cast<long long>(r) * (r + 1) / 2 > u) --r;
    while (static_cast<long long>(r + 1) * (r + 2) / 2 <= u) ++r;
    const int ti = T - 1 - r;
    const int tj = T - 1 - (u - r * (r + 1) / 2);
    return {b, ti * TILE_I, tj * TILE_J, ti != tj};
  } else {
    const int b = bid / (kTilesI * kTilesJ);
    const int t = bid - b * (kTilesI * kTilesJ);
    const int ti = t / kTilesJ;
    return {b, ti * TILE_I, (t - ti * kTilesJ) * TILE_J, false};
  }
}

// Where pair p of a thread or warp lives and whether (and where) its result is stored.
struct PairSlot {
  int b, i, j;   // clamped into range, so loads stay in bounds even for unused slots
  int tile_row;  // row of tile A (staged)
  bool store;    // inside the problem
};

template <int B, int N>
__device__ __forceinline__ PairSlot linear_slot(long long id) {
  constexpr long long kPairs = static_cast<long long>(B) * N * N;
  const bool store = id < kPairs;
  const int c = static_cast<int>(store ? id : kPairs - 1);
  const int b = c / (N * N), rem = c - b * (N * N);
  const int i = rem / N;
  return {b, i, rem - i * N, 0, store};
}

template <int N, int TILE_I, int TILE_J>
__device__ __forceinline__ PairSlot tile_slot(const TileOrigin& t, int q) {
  constexpr int kRows = TILE_I * TILE_J;
  const bool in_tile = q < kRows;
  const int qc = in_tile ? q : kRows - 1;
  const int ii = qc / TILE_J;
  const int i = t.i0 + ii, j = t.j0 + (qc - ii * TILE_J);
  const bool store = in_tile && i < N && j < N;
  return {t.b, i < N ? i : N - 1, j < N ? j : N - 1, qc, store};
}

// out is float or __nv_bfloat16 (v rounded to nearest even, once).
template <int N, class E>
__device__ __forceinline__ void store_result(E* __restrict__ out, const PairSlot& s, bool mirror, float v) {
  if (s.store) {
    store1(out + (static_cast<long long>(s.b) * N + s.i) * N + s.j, v);
    if (mirror) store1(out + (static_cast<long long>(s.b) * N + s.j) * N + s.i, v);
  }
}

// Layer 3 of the tensor-core strategies from their m16n8 accumulator fragments (TF32 m16n8k8 and
// bfloat16 m16n8k16 lay D out alike): the lane holds columns 2t, 2t+1 of rows g (registers 0, 1)
// and g + 8 (registers 2, 3) of each n-tile of D2. lo, hi = w4 . relu(D2) of rows g and g + 8 of
// 16-pair tile p over the NT n-tiles given, summed over the quad's four lanes.
template <int NT, int P>
__device__ __forceinline__ void fragment_logits(const float (&d2)[NT][P][4], const float (&w4v)[NT][2], int p, float& lo,
                                                float& hi) {
  lo = 0.0f;
  hi = 0.0f;
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) {
    lo = fmaf(w4v[nt][0], fmaxf(d2[nt][p][0], 0.0f), lo);
    lo = fmaf(w4v[nt][1], fmaxf(d2[nt][p][1], 0.0f), lo);
    hi = fmaf(w4v[nt][0], fmaxf(d2[nt][p][2], 0.0f), hi);
    hi = fmaf(w4v[nt][1], fmaxf(d2[nt][p][3], 0.0f), hi);
  }
  lo = group_sum<4>(lo);
  hi = group_sum<4>(hi);
}

// The rows of the tensor-core strategies' A fragments for warp group grp: rows g and g + 8 of each
// of its P 16-pair tiles (the last row of the tile where they run past kRows), from element col
// on, and their tile T rows (t_row0 on: the rows of pair (jj, ii) for LNROW).
template <int TILE_I, int TILE_J, int RS, int P, class E>
__device__ __forceinline__ void fragment_rows(const E* tiles, int grp, int g, int col, int t_row0, const E* (&row_lo)[P],
                                              const E* (&row_hi)[P], const E* (&trow_lo)[P], const E* (&trow_hi)[P]) {
  constexpr int kRows = TILE_I * TILE_J;
#pragma unroll
  for (int p = 0; p < P; ++p) {
    const int m0 = (grp * P + p) * 16;
    const int q_lo = m0 + g < kRows ? m0 + g : kRows - 1, q_hi = m0 + g + 8 < kRows ? m0 + g + 8 : kRows - 1;
    row_lo[p] = tiles + q_lo * RS + col;
    row_hi[p] = tiles + q_hi * RS + col;
    trow_lo[p] = tiles + (t_row0 + (q_lo % TILE_J) * TILE_I + q_lo / TILE_J) * RS + col;
    trow_hi[p] = tiles + (t_row0 + (q_hi % TILE_J) * TILE_I + q_hi / TILE_J) * RS + col;
  }
}

// The epilogue of the tensor-core strategies: the P 16-pair tiles of warp group grp, whose D2 the
// lane (g, t) holds; out = sigmoid(logit + b4) of row g stored by lane t = 0, of row g + 8 by t = 1.
template <int N, int TILE_I, int TILE_J, int SYM, int NT, int P, class E>
__device__ __forceinline__ void store_fragment_logits(E* __restrict__ out, const TileOrigin& tile, int grp, int g, int t,
                                                      const float (&d2)[NT][P][4], const float (&w4v)[NT][2], float bias4) {
#pragma unroll
  for (int p = 0; p < P; ++p) {
    float logit_lo, logit_hi;  // rows g and g + 8
    fragment_logits<NT, P>(d2, w4v, p, logit_lo, logit_hi);
    const int m0 = (grp * P + p) * 16;
    if (t < 2) {
      const PairSlot slot = tile_slot<N, TILE_I, TILE_J>(tile, m0 + g + 8 * t);
      store_result<N>(out, slot, SYM && tile.mirror, sigmoid((t == 0 ? logit_lo : logit_hi) + bias4));
    }
  }
}

}  // namespace contact
}  // namespace tune_kernels

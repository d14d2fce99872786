#pragma once
// Where the pairs are: a pair's row in pair_repr, the tile a block or warp owns, the pair slot of a
// thread or warp, and the epilogue every strategy ends with (out[b,i,j], and out[b,j,i] of a
// mirrored SYM tile, from one value).
// Part of the contact template: contact.cuh includes it after tune_common.cuh.
// (NVRTC finds a header only by the name the including file gives, so the pieces include
// nothing themselves; contact.cuh includes them in order.)

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

}  // namespace contact
}  // namespace tune_kernels

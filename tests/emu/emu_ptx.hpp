// The PTX the contact template declares for host builds (see contact.cuh's #else branch), defined
// on top of emu_cuda.hpp: include after contact.cuh, in one translation unit.
#pragma once
// mma_tf32 follows the fragment layouts of the PTX ISA
// (mma.m16n8k8 .tf32): a0=(g,t) a1=(g+8,t) a2=(g,t+4) a3=(g+8,t+4); b0=(k=t,n=g) b1=(k=t+4,n=g);
// d_q = (row g + 8*(q>>1), col 2t + (q&1)).
#include <cstring>
namespace tune_kernels {
float tf32_trunc(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  u &= ~0x1fffu;
  float r;
  std::memcpy(&r, &u, 4);
  return r;
}
float to_tf32(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  u += 0x1000u;
  u &= ~0x1fffu;
  float r;
  std::memcpy(&r, &u, 4);
  return r;
}
float tf32_round(float x) { return to_tf32(x); }
void mma_tf32(float (&d)[4], const float (&a)[4], float b0, float b1) {
  const unsigned t = threadIdx.x, w = t / 32, l = t % 32;
  float* X = g_emu->mx.data();
  float* me = X + t * 10;
  for (int i = 0; i < 4; ++i) me[i] = a[i];
  me[4] = b0;
  me[5] = b1;
  g_emu->warp_bar[w]->arrive_and_wait();
  auto A = [&](int m, int k) {
    unsigned src = w * 32 + (m % 8) * 4 + (k % 4);
    return tf32_trunc(X[src * 10 + (m >= 8) + 2 * (k >= 4)]);
  };
  auto Bm = [&](int k, int n) {
    unsigned src = w * 32 + n * 4 + (k % 4);
    return tf32_trunc(X[src * 10 + 4 + (k >= 4)]);
  };
  const int g = l >> 2, tq = l & 3;
  float r[4];
  for (int q = 0; q < 4; ++q) {
    const int row = g + (q >> 1) * 8, col = 2 * tq + (q & 1);
    float acc = d[q];
    for (int k = 0; k < 8; ++k) acc += A(row, k) * Bm(k, col);
    r[q] = acc;
  }
  g_emu->warp_bar[w]->arrive_and_wait();
  for (int q = 0; q < 4; ++q) d[q] = r[q];
}
// mma.m16n8k16 .bf16 (PTX ISA fragment layouts): a[r] holds two bfloat16, the lower column in the
// low half: r0 = (g, 2t..2t+1), r1 = (g+8, 2t..2t+1), r2 = (g, 2t+8..2t+9), r3 = (g+8, 2t+8..2t+9);
// b0 = (k = 2t..2t+1, n = g), b1 = (k = 2t+8..2t+9, n = g); d as m16n8k8's. Products exact in float
// (8-bit mantissas), accumulated in float.
void mma_bf16(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  const unsigned t = threadIdx.x, w = t / 32, l = t % 32;
  float* X = g_emu->mx.data();
  float* me = X + t * 10;
  const unsigned regs[6] = {a[0], a[1], a[2], a[3], b0, b1};
  std::memcpy(me, regs, sizeof(regs));
  g_emu->warp_bar[w]->arrive_and_wait();
  auto half = [&](unsigned src, int reg, int hi) {
    unsigned word;
    std::memcpy(&word, X + src * 10 + reg, 4);
    return hi ? __uint_as_float(word & 0xffff0000u) : __uint_as_float(word << 16);
  };
  auto A = [&](int m, int k) { return half(w * 32 + (m % 8) * 4 + (k % 8) / 2, (m >= 8) + 2 * (k >= 8), k % 2); };
  auto Bm = [&](int k, int n) { return half(w * 32 + n * 4 + (k % 8) / 2, 4 + (k >= 8), k % 2); };
  const int g = l >> 2, tq = l & 3;
  float r[4];
  for (int q = 0; q < 4; ++q) {
    const int row = g + (q >> 1) * 8, col = 2 * tq + (q & 1);
    float acc = d[q];
    for (int k = 0; k < 16; ++k) acc += A(row, k) * Bm(k, col);
    r[q] = acc;
  }
  g_emu->warp_bar[w]->arrive_and_wait();
  for (int q = 0; q < 4; ++q) d[q] = r[q];
}
unsigned pack_bf16x2(float lo, float hi) {
  return static_cast<unsigned>(emu_bf16_bits(lo)) | (static_cast<unsigned>(emu_bf16_bits(hi)) << 16);
}
}  // namespace tune_kernels
namespace tune_kernels {
int opaque_zero(int) { return 0; }
}  // namespace tune_kernels
namespace tune_kernels {
// cp.async emulation: copies stay pending (per thread) until a wait retires their group, so a
// read before the wait sees the old (canary) contents.
struct EmuCopy {
  void* dst;
  const void* src;
  int bytes;
  bool valid;
};
inline thread_local std::vector<EmuCopy> g_open;
inline thread_local std::vector<std::vector<EmuCopy>> g_groups;
inline void emu_retire(std::vector<EmuCopy>& g) {
  for (auto& c : g) {
    if (c.valid)
      std::memcpy(c.dst, c.src, c.bytes);
    else
      std::memset(c.dst, 0, c.bytes);
  }
  g.clear();
}
template <int BYTES, class E>
void copy_async(E* dst, const E* src, bool valid) {
  g_open.push_back({dst, src, BYTES, valid});
}
void copy_commit() {
  g_groups.push_back(std::move(g_open));
  g_open.clear();
}
template <int PENDING>
void copy_wait() {
  while ((int)g_groups.size() > PENDING) {
    emu_retire(g_groups.front());
    g_groups.erase(g_groups.begin());
  }
}
void copy_wait_all() {
  copy_commit();
  copy_wait<0>();
}
}  // namespace tune_kernels
namespace tune_kernels {
void assume(bool) {}
}  // namespace tune_kernels
#include <map>
#include <mutex>
#include <tuple>
namespace tune_kernels {
inline std::mutex g_named_mu;
inline std::map<std::tuple<const void*, int, int>, std::unique_ptr<std::barrier<>>> g_named;
void named_barrier(int id, int threads) {
  std::barrier<>* b;
  {
    std::lock_guard<std::mutex> lock(g_named_mu);
    auto& p = g_named[{g_emu, id, threads}];
    if (!p) p = std::make_unique<std::barrier<>>(threads);
    b = p.get();
  }
  b->arrive_and_wait();
}
}  // namespace tune_kernels

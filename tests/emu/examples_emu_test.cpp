// The dtype examples' kernels (examples/rmsnorm, examples/embedding_bag; issue 35) compiled for the
// host and run on emulated CUDA (examples/emu.hpp, host stand-ins for <cuda_bf16.h> and
// <cuda_fp16.h>): each output against the definition computed in double from the kernel's own
// inputs (already of the dtype), within one rounding to the dtype plus float32 arithmetic. The
// configurations cover what the spaces allow: scalar and 16-byte vectors, teams smaller than a warp
// and of several warps, ragged rows, ragged teams, blocks past the last row or bag, D split over
// blocks, an unrolled loop over L with a tail, both weight loads, and the largest index N - 1.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

// clang-format off
#include "emu/examples/emu.hpp"
#include "rmsnorm/kernel.cuh"
#include "embedding_bag/kernel.cuh"
// clang-format on

namespace {

float value(float v) { return v; }
float value(__nv_bfloat16 v) { return __bfloat162float(v); }
float value(__half v) { return __half2float(v); }

template <class T>
T round_to(double v) {
  if constexpr (std::is_same_v<T, float>)
    return static_cast<float>(v);
  else if constexpr (std::is_same_v<T, __half>)
    return __float2half_rn(static_cast<float>(v));
  else
    return __float2bfloat16_rn(static_cast<float>(v));
}

// Half a unit in the last place, relative: one rounding to T.
template <class T>
double unit_roundoff() {
  if constexpr (std::is_same_v<T, float>)
    return 0.0;
  else if constexpr (std::is_same_v<T, __half>)
    return std::ldexp(1.0, -11);
  else
    return std::ldexp(1.0, -8);
}

template <class T, int M, int K, int BLOCK, int VEC, int ROWS>
void check_rmsnorm(double scale) {
  SCOPED_TRACE("rmsnorm_kernel<" + std::to_string(sizeof(T)) + "-byte T, M " + std::to_string(M) + ", K " +
               std::to_string(K) + ", BLOCK " + std::to_string(BLOCK) + ", VEC " + std::to_string(VEC) + ", ROWS " +
               std::to_string(ROWS) + ">");
  std::mt19937 gen(M * 131 + K);
  std::normal_distribution<double> normal;
  std::vector<T> x(M * K), w(K), out(M * K, round_to<T>(-99.0));
  for (auto& v : x) v = round_to<T>(scale * normal(gen));
  for (auto& v : w) v = round_to<T>(1 + 0.2 * normal(gen));
  for (int k = 0; k < K; ++k) x[k] = round_to<T>(0.0);  // a row of zeros: the eps keeps it finite
  emu::launch((M + ROWS - 1) / ROWS, 1, BLOCK,
              [&] { rmsnorm_kernel<T, M, K, BLOCK, VEC, ROWS>(x.data(), w.data(), out.data()); });
  for (int m = 0; m < M; ++m) {
    double ss = 0;
    for (int k = 0; k < K; ++k) ss += double{value(x[m * K + k])} * value(x[m * K + k]);
    const double s = 1 / std::sqrt(ss / K + 1e-6);
    for (int k = 0; k < K; ++k) {
      const double ref = value(x[m * K + k]) * s * value(w[k]);
      const double got = value(out[m * K + k]);
      ASSERT_LE(std::abs(got - ref), (unit_roundoff<T>() + 1e-5) * std::abs(ref) + 1e-7) << "row " << m << ", column " << k;
    }
  }
}

template <class T, int B, int L, int N, int D, int BLOCK, int BAGS, int VEC, int DSPLIT, int UNROLL, int WLOAD>
void check_embedding_bag() {
  SCOPED_TRACE("embedding_bag_kernel<" + std::to_string(sizeof(T)) + "-byte T, B " + std::to_string(B) + ", L " +
               std::to_string(L) + ", D " + std::to_string(D) + ", BLOCK " + std::to_string(BLOCK) + ", BAGS " +
               std::to_string(BAGS) + ", VEC " + std::to_string(VEC) + ", DSPLIT " + std::to_string(DSPLIT) + ", UNROLL " +
               std::to_string(UNROLL) + ", WLOAD " + std::to_string(WLOAD) + ">");
  std::mt19937 gen(B * 131 + D);
  std::normal_distribution<double> normal;
  std::uniform_int_distribution<long long> index(0, N - 1);
  std::vector<T> w(N * D), out(B * D, round_to<T>(-99.0));
  std::vector<long long> idx(B * L);
  for (auto& v : w) v = round_to<T>(normal(gen));
  for (auto& v : idx) v = index(gen);
  for (int b = 0; b < B; ++b) idx[b * L] = N - 1;  // problem.json's parity edit: the last row
  emu::launch((B + BAGS - 1) / BAGS, DSPLIT, BLOCK, [&] {
    embedding_bag_kernel<T, B, L, D, BLOCK, BAGS, VEC, DSPLIT, UNROLL, WLOAD>(idx.data(), w.data(), out.data());
  });
  for (int b = 0; b < B; ++b)
    for (int d = 0; d < D; ++d) {
      double ref = 0, terms = 0;
      for (int l = 0; l < L; ++l) {
        ref += value(w[idx[b * L + l] * D + d]);
        terms += std::abs(value(w[idx[b * L + l] * D + d]));
      }
      const double got = value(out[b * D + d]);
      ASSERT_LE(std::abs(got - ref), unit_roundoff<T>() * std::abs(ref) + 1e-6 * terms) << "bag " << b << ", column " << d;
    }
}

TEST(ExampleKernelsEmu, RmsnormMatchesItsDefinitionInEveryDtype) {
  check_rmsnorm<float, 5, 256, 128, 1, 1>(1);     // the baseline's shape of work
  check_rmsnorm<float, 7, 256, 64, 4, 4>(1);      // teams of 16, the last block past M
  check_rmsnorm<float, 3, 96, 64, 2, 2>(1);       // teams of 32, 48 vectors a row: ragged
  check_rmsnorm<float, 9, 1000, 256, 4, 1>(100);  // a team of 8 warps (shared memory), ragged
  check_rmsnorm<__nv_bfloat16, 5, 256, 128, 2, 1>(1);
  check_rmsnorm<__nv_bfloat16, 6, 256, 256, 8, 4>(1);
  check_rmsnorm<__nv_bfloat16, 3, 4096, 256, 8, 2>(100);
  check_rmsnorm<__nv_bfloat16, 5, 60, 64, 2, 4>(1);
  check_rmsnorm<__half, 5, 256, 64, 8, 2>(100);  // x times 100: the squares are summed in float
  check_rmsnorm<__half, 3, 512, 256, 4, 1>(1);
}

TEST(ExampleKernelsEmu, EmbeddingBagMatchesItsDefinitionInEveryDtype) {
  check_embedding_bag<float, 5, 3, 50, 32, 64, 2, 1, 1, 1, 0>();    // the baseline
  check_embedding_bag<float, 7, 9, 50, 128, 128, 4, 4, 1, 4, 1>();  // unroll 4 and a tail of 1, ldcs
  check_embedding_bag<float, 9, 5, 40, 96, 128, 4, 2, 1, 4, 0>();   // 48 vectors over teams of 32: ragged
  check_embedding_bag<float, 3, 8, 40, 64, 64, 16, 4, 2, 8, 1>();   // D split in two, blocks past B
  check_embedding_bag<float, 33, 4, 20, 16, 64, 16, 1, 1, 2, 0>();  // teams of 4, B % BAGS != 0
  check_embedding_bag<__nv_bfloat16, 5, 3, 50, 32, 64, 4, 2, 1, 1, 0>();
  check_embedding_bag<__nv_bfloat16, 7, 7, 60, 128, 64, 4, 8, 1, 4, 1>();
  check_embedding_bag<__nv_bfloat16, 9, 3, 30, 48, 64, 8, 4, 1, 2, 1>();
  check_embedding_bag<__nv_bfloat16, 8, 4, 50, 32, 64, 16, 2, 2, 4, 0>();
  check_embedding_bag<__nv_bfloat16, 5, 6, 50, 64, 64, 8, 2, 4, 4, 1>();
}

}  // namespace

// sg_phases: where the time of a scene_graph kernel goes, phase by phase, on a cold L2.
// Each warp's lane 0 records %globaltimer and %clock64 at the kernel's phase marks
// (TUNE_SG_MARK in kernel_templates/scene_graph.cuh; sg_cluster: 0 start, 1 loads issued,
// 2 first copies landed, 3 LayerNorm, pair bias and weights done, 4 q/k/v and the cluster's
// first barrier done, 5 (same), 6 attention done, 7 cluster barrier, 8 end). Per variant: the
// cold event time (L2 flushed before every launch, as tune measures), then per mark, over the
// warps of one cold launch, the median and latest time since the first warp started (ns,
// globaltimer) and the median cycles since the warp's own start (clock64).
//   sg_phases [--samples N]      (prints a table; B=4 N=24 D=96 heads=4 P=16)
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

constexpr int kMarks = 9;
__device__ unsigned long long* g_marks;  // [warp][mark][2]: globaltimer, clock64

#define TUNE_SG_MARK(mark)                                                                         \
  do {                                                                                             \
    if ((threadIdx.x & 31) == 0 && g_marks) {                                                      \
      unsigned long long gt, ck;                                                                   \
      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(gt));                                       \
      asm volatile("mov.u64 %0, %%clock64;" : "=l"(ck));                                           \
      const unsigned w = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;                        \
      g_marks[(w * kMarks + (mark)) * 2] = gt;                                                     \
      g_marks[(w * kMarks + (mark)) * 2 + 1] = ck;                                                 \
    }                                                                                              \
  } while (0)

#include "scene_graph.cuh"

namespace {

constexpr int B = 4, N = 24, D = 96, H = 4, P = 16;

#define CHECK(x)                                                                                   \
  do {                                                                                             \
    cudaError_t e = (x);                                                                           \
    if (e != cudaSuccess) {                                                                        \
      std::fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e));                                 \
      std::exit(1);                                                                                \
    }                                                                                              \
  } while (0)

using Kernel = void (*)(const float*, const float*, const float*, const float*, const float*, const float*,
                        const float*, const float*, const float*, const float*, const float*, const float*,
                        const float*, float*);

struct Variant {
  std::string name;
  Kernel kernel;
  int grid, block, smem;
  bool marks;
};

template <int R, int BLOCK, int BULK>
Variant cluster() {
  return {"cluster rsplit=" + std::to_string(R) + " block=" + std::to_string(BLOCK) + (BULK ? " bulk" : ""),
          sg_cluster<B, N, D, H, P, R, BLOCK, BULK>,
          B * H * R, BLOCK, tune_kernels::SgClusterLayout<N, D, H, P, R>::kBytes, true};
}

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(q * (v.size() - 1) + 0.5)];
}

}  // namespace

int main(int argc, char** argv) {
  int samples = 200;
  for (int a = 1; a + 1 < argc; ++a)
    if (std::string(argv[a]) == "--samples") samples = std::atoi(argv[a + 1]);
  const std::vector<Variant> variants = {
      {"qtile qrows=1 block=512 (fused)", sg_fused<B, N, D, H, P, 1, 512, 0, 0, 0>, B * N, 512,
       tune_kernels::sg_attention_smem_bytes(N, D, H, 1, 0), false},
      cluster<1, 512, 0>(), cluster<2, 256, 0>(), cluster<2, 512, 0>(), cluster<2, 512, 1>(), cluster<2, 1024, 0>(),
      cluster<2, 1024, 1>(),
  };
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("%s, %d SMs, L2 %d MiB; B=%d N=%d D=%d heads=%d P=%d, %d cold samples per variant\n", prop.name,
              prop.multiProcessorCount, prop.l2CacheSize >> 20, B, N, D, H, P, samples);

  std::mt19937 rng(7);
  std::normal_distribution<float> nd;
  auto upload = [&](std::size_t n, float scale, float shift) {
    std::vector<float> h(n);
    for (auto& e : h) e = shift + scale * nd(rng);
    float* d;
    CHECK(cudaMalloc(&d, n * 4));
    CHECK(cudaMemcpy(d, h.data(), n * 4, cudaMemcpyHostToDevice));
    return d;
  };
  float* nodes = upload(std::size_t{B} * N * D, 1, 0);
  float* pf = upload(std::size_t{B} * N * N * P, 1, 0);
  std::vector<float> mask(std::size_t{B} * N * N);
  std::bernoulli_distribution edge(0.7);
  for (auto& m : mask) m = edge(rng) ? 1.0f : 0.0f;
  float* msk;
  CHECK(cudaMalloc(&msk, mask.size() * 4));
  CHECK(cudaMemcpy(msk, mask.data(), mask.size() * 4, cudaMemcpyHostToDevice));
  float *g = upload(D, 0.2f, 1), *be = upload(D, 0.2f, 0);
  const float ws = 1.0f / std::sqrt(float(D));
  float *wq = upload(D * D, ws, 0), *wk = upload(D * D, ws, 0), *wv = upload(D * D, ws, 0), *wo = upload(D * D, ws, 0);
  float *w0 = upload(P * P, 0.25f, 0), *b0 = upload(P, 0.1f, 0), *w2 = upload(H * P, 0.25f, 0), *b2 = upload(H, 0.1f, 0);
  float* out;
  CHECK(cudaMalloc(&out, std::size_t{B} * N * D * 4));
  const std::size_t flush_bytes = std::max<std::size_t>(2 * prop.l2CacheSize, 8 << 20);
  void* flush;
  CHECK(cudaMalloc(&flush, flush_bytes));
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));

  for (const Variant& v : variants) {
    CHECK(cudaFuncSetAttribute(v.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, v.smem));
    unsigned long long* marks = nullptr;
    auto launch = [&] {
      v.kernel<<<v.grid, v.block, v.smem>>>(nodes, pf, msk, g, be, wq, wk, wv, w0, b0, w2, b2, wo, out);
      CHECK(cudaGetLastError());
    };
    CHECK(cudaMemcpyToSymbol(g_marks, &marks, sizeof marks));
    std::vector<double> cold;
    for (int s = 0; s < samples + 5; ++s) {
      CHECK(cudaMemsetAsync(flush, s & 0xff, flush_bytes));
      CHECK(cudaEventRecord(e0));
      launch();
      CHECK(cudaEventRecord(e1));
      CHECK(cudaEventSynchronize(e1));
      float ms;
      CHECK(cudaEventElapsedTime(&ms, e0, e1));
      if (s >= 5) cold.push_back(ms * 1000.0);
    }
    std::printf("\n%-36s cold median %.3f us (q10 %.3f, q90 %.3f), grid %d x %d\n", v.name.c_str(), quantile(cold, 0.5),
                quantile(cold, 0.1), quantile(cold, 0.9), v.grid, v.block);
    if (!v.marks) continue;
    const int warps = v.grid * v.block / 32;
    const std::size_t words = std::size_t(warps) * kMarks * 2;
    CHECK(cudaMalloc(&marks, words * 8));
    CHECK(cudaMemcpyToSymbol(g_marks, &marks, sizeof marks));
    std::vector<std::vector<double>> at(kMarks), cyc(kMarks);
    for (int rep = 0; rep < 20; ++rep) {  // 20 cold launches, marks pooled over their warps
      CHECK(cudaMemset(marks, 0, words * 8));
      CHECK(cudaMemsetAsync(flush, rep & 0xff, flush_bytes));
      launch();
      CHECK(cudaDeviceSynchronize());
      std::vector<unsigned long long> m(words);
      CHECK(cudaMemcpy(m.data(), marks, words * 8, cudaMemcpyDeviceToHost));
      unsigned long long t0 = ~0ull;
      for (int w = 0; w < warps; ++w)
        if (m[w * kMarks * 2]) t0 = std::min(t0, m[w * kMarks * 2]);
      for (int w = 0; w < warps; ++w) {
        const unsigned long long* r = &m[std::size_t(w) * kMarks * 2];
        for (int k = 0; k < kMarks; ++k) {
          if (!r[k * 2]) continue;  // a warp that skips this mark
          at[k].push_back(double(r[k * 2] - t0));
          cyc[k].push_back(double(r[k * 2 + 1] - r[1]));
        }
      }
    }
    CHECK(cudaFree(marks));
    marks = nullptr;
    CHECK(cudaMemcpyToSymbol(g_marks, &marks, sizeof marks));
    std::printf("  mark  warps  ns since first start: q50    max | cycles since own start: q50    q90\n");
    for (int k = 0; k < kMarks; ++k)
      std::printf("  %4d %6zu %27.0f %6.0f | %30.0f %6.0f\n", k, at[k].size() / 20, quantile(at[k], 0.5),
                  quantile(at[k], 1.0), quantile(cyc[k], 0.5), quantile(cyc[k], 0.9));
  }
  return 0;
}

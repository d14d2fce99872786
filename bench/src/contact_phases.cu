// contact_phases: where the time of a contact kernel goes, phase by phase, on a cold L2.
// Each warp's lane 0 records %globaltimer and %clock64 at the kernel's phase marks
// (TUNE_CONTACT_MARK in kernel_templates/contact/contact.cuh: 0 start, 1 loads landed, 2 LayerNorm done,
// 3 MLP done). Per variant: the cold event time (L2 flushed before every launch, as tune measures),
// then, over the warps of one cold launch, the quantiles of each phase's length (clock64 cycles)
// and of the times at which warps start and finish (globaltimer, from the first warp's start).
//   contact_phases [--samples N]      (prints a table; B=4 N=64 C=64 H=32)
#include <random>
#include <string>

#include "phases.hpp"

#define TUNE_CONTACT_MARK(phase) phases_mark<4>(phase)

#include "contact/contact.cuh"

namespace {

constexpr int B = 4, N = 64, C = 64, H = 32;

#define CHECK(x) PHASES_CHECK(x)

using Kernel = void (*)(const float*, const float*, const float*, const float*, const float*, const float*, const float*,
                        const float*, const float*, float*);

struct Variant {
  const char* name;
  Kernel kernel;
  int grid, block, smem;
};

// SmemLayout gives the bytes; the grid follows configs/contact/problem.json.
template <int STRATEGY, int MAPPING, int BLOCK, int TI, int TJ, int SMEM_W, int PAIRS, int NSPLIT, int PREC, int LNROW = 0>
Variant make(const char* name) {
  using L = tune_kernels::contact::SmemLayout<float, C, H, STRATEGY, MAPPING, BLOCK, TI, TJ, 1, SMEM_W, PAIRS>;
  constexpr int T = (N + TI - 1) / TI, tiles = B * T * (T + 1) / 2;
  const int grid = MAPPING == 2 ? (tiles + BLOCK / 32 * PAIRS - 1) / (BLOCK / 32 * PAIRS) : tiles;
  return {name,
          contact_kernel<float, B, N, C, H, STRATEGY, MAPPING, BLOCK, TI, TJ, 1, SMEM_W, PAIRS, 1, 1, NSPLIT, PREC, LNROW>,
          grid, BLOCK, L::kBytes};
}

}  // namespace

int main(int argc, char** argv) {
  int samples = 200;
  for (int a = 1; a + 1 < argc; ++a)
    if (std::string(argv[a]) == "--samples") samples = std::atoi(argv[a + 1]);
  const std::vector<Variant> variants = {
      make<2, 1, 256, 8, 8, 1, 1, 1, 1>("tile 8x8 block256 smem_w (the committed winner)"),
      make<2, 1, 256, 8, 8, 1, 1, 1, 1, 1>("tile 8x8 block256 smem_w ln=row"),
      make<2, 1, 128, 8, 8, 1, 1, 1, 1, 1>("tile 8x8 block128 smem_w ln=row"),
      make<2, 1, 32, 4, 4, 1, 1, 1, 1, 1>("tile 4x4 block32 smem_w ln=row"),
      make<2, 2, 128, 4, 4, 1, 1, 1, 1>("warp_tile 4x4 block128 smem_w"),
      make<2, 2, 256, 4, 4, 1, 1, 1, 1>("warp_tile 4x4 block256 smem_w"),
      make<2, 2, 64, 4, 4, 1, 1, 1, 1, 1>("warp_tile 4x4 block64 smem_w ln=row"),
      make<2, 2, 128, 4, 4, 1, 1, 1, 1, 1>("warp_tile 4x4 block128 smem_w ln=row"),
      make<2, 2, 256, 4, 4, 1, 1, 1, 1, 1>("warp_tile 4x4 block256 smem_w ln=row"),
      make<2, 2, 128, 4, 4, 1, 2, 1, 1, 1>("warp_tile 4x4 block128 pairs2 smem_w ln=row"),
      make<2, 2, 64, 8, 8, 1, 1, 1, 1, 1>("warp_tile 8x8 block64 smem_w ln=row"),
  };
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("%s, %d SMs, L2 %d MiB; B=%d N=%d C=%d H=%d, %d cold samples per variant\n", prop.name,
              prop.multiProcessorCount, prop.l2CacheSize >> 20, B, N, C, H, samples);

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
  float* x = upload(static_cast<std::size_t>(B) * N * N * C, 1, 0);
  float *g = upload(C, 0.2f, 1), *be = upload(C, 0.2f, 0);
  float *w0 = upload(H * C, 0.125f, 0), *b0 = upload(H, 0.1f, 0), *w2 = upload(H * H, 0.17f, 0);
  float *b2 = upload(H, 0.1f, 0), *w4 = upload(H, 0.17f, 0), *b4 = upload(1, 0.1f, 0);
  float* out;
  CHECK(cudaMalloc(&out, static_cast<std::size_t>(B) * N * N * 4));
  const std::size_t flush_bytes = std::max<std::size_t>(2 * prop.l2CacheSize, 8 << 20);
  void* flush;
  CHECK(cudaMalloc(&flush, flush_bytes));

  std::printf("%-48s %8s %6s | %-26s | %-26s | %-26s | %-26s | %s\n", "variant", "cold us", "grid",
              "load cycles q10/q50/q90", "LN cycles q10/q50/q90", "MLP cycles q10/q50/q90", "warp start ns q50/q90/max",
              "warp end ns q10/q50/max");
  for (const Variant& v : variants) {
    CHECK(cudaFuncSetAttribute(v.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, v.smem));
    unsigned long long* marks = nullptr;
    auto launch = [&] { v.kernel<<<v.grid, v.block, v.smem>>>(x, g, be, w0, b0, w2, b2, w4, b4, out); };
    CHECK(cudaMemcpyToSymbol(g_marks, &marks, sizeof marks));
    const std::vector<double> cold = event_times(launch, samples, flush, flush_bytes);
    const int warps = v.grid * v.block / 32;
    CHECK(cudaMalloc(&marks, static_cast<std::size_t>(warps) * 8 * 8));
    CHECK(cudaMemset(marks, 0, static_cast<std::size_t>(warps) * 8 * 8));
    CHECK(cudaMemcpyToSymbol(g_marks, &marks, sizeof marks));
    CHECK(cudaMemsetAsync(flush, 1, flush_bytes));
    launch();
    CHECK(cudaDeviceSynchronize());
    std::vector<unsigned long long> m(static_cast<std::size_t>(warps) * 8);
    CHECK(cudaMemcpy(m.data(), marks, m.size() * 8, cudaMemcpyDeviceToHost));
    CHECK(cudaFree(marks));
    marks = nullptr;
    CHECK(cudaMemcpyToSymbol(g_marks, &marks, sizeof marks));
    std::vector<double> load, ln, mlp, start, end;
    unsigned long long t0 = ~0ull;
    for (int w = 0; w < warps; ++w)
      if (m[w * 8 + 7]) t0 = std::min(t0, m[w * 8]);
    for (int w = 0; w < warps; ++w) {
      const unsigned long long* r = &m[w * 8];
      if (!r[7] || !r[3]) continue;  // a warp with no work (past the last tile)
      load.push_back(double(r[3] - r[1]));
      ln.push_back(double(r[5] - r[3]));
      mlp.push_back(double(r[7] - r[5]));
      start.push_back(double(r[0] - t0));
      end.push_back(double(r[6] - t0));
    }
    auto q3 = [](const std::vector<double>& a, double x, double y, double z) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%8.0f %8.0f %8.0f", quantile(a, x), quantile(a, y), quantile(a, z));
      return std::string(buf);
    };
    std::printf("%-48s %8.3f %6d | %s | %s | %s | %s | %s\n", v.name, quantile(cold, 0.5), v.grid,
                q3(load, 0.1, 0.5, 0.9).c_str(), q3(ln, 0.1, 0.5, 0.9).c_str(), q3(mlp, 0.1, 0.5, 0.9).c_str(),
                q3(start, 0.5, 0.9, 1.0).c_str(), q3(end, 0.1, 0.5, 1.0).c_str());
  }
  return 0;
}

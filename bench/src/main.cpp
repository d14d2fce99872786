// tune_bench: the tuned kernels of the merged headers against their baselines, on this GPU.
#include <cstdio>
#include <random>
#include <string>

#include "bench.hpp"

namespace tune_bench {

namespace {
Gpu g_gpu;
}

const Gpu& gpu() { return g_gpu; }

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

std::vector<float> seeded_data(const std::string& name, long long elements, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f), unit(0.0f, 1.0f);
  std::vector<float> v(static_cast<std::size_t>(elements));
  const bool mask = name.find("mask") != std::string::npos;
  for (float& x : v) x = mask ? (unit(rng) < 0.7f ? 1.0f : 0.0f) : uniform(rng);
  return v;
}

}  // namespace tune_bench

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  try {
    auto& g = tune_bench::g_gpu;
    cudaDeviceProp prop{};
    TUNE_BENCH_CUDA(cudaGetDeviceProperties(&prop, g.ordinal));
    TUNE_BENCH_CUDA(cudaSetDevice(g.ordinal));
    g.name = prop.name;
    g.arch = prop.major * 10 + prop.minor;
    g.l2_bytes = static_cast<std::size_t>(prop.l2CacheSize);
    int driver = 0, runtime = 0;
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    benchmark::AddCustomContext("gpu", g.name);
    std::string uuid = "GPU-";
    for (int i = 0; i < 16; ++i) {
      char hex[3];
      std::snprintf(hex, sizeof hex, "%02x", static_cast<unsigned char>(prop.uuid.bytes[i]));
      uuid += hex;
      if (i == 3 || i == 5 || i == 7 || i == 9) uuid += '-';
    }
    benchmark::AddCustomContext("gpu_uuid", uuid);
    benchmark::AddCustomContext("gpu_arch", "sm_" + std::to_string(g.arch));
    benchmark::AddCustomContext("gpu_sm_count", std::to_string(prop.multiProcessorCount));
    benchmark::AddCustomContext("gpu_l2_bytes", std::to_string(g.l2_bytes));
    benchmark::AddCustomContext("cuda_driver", std::to_string(driver));
    benchmark::AddCustomContext("cuda_runtime", std::to_string(runtime));
    benchmark::AddCustomContext("timing", "CUDA events around the launches; L2 flushed (2x its size) before every iteration");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tune_bench: no usable CUDA device: %s\n", e.what());
    return 3;
  }
  tune_bench::register_contact();
  tune_bench::register_scene_graph();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

// The bench's shared helpers: the device, seeded inputs, the table of both builds, tune's NVRTC
// build of every entry (declared in bench.hpp; main.cpp runs them).
#include <cstdio>
#include <deque>
#include <random>
#include <string>

#include "bench.hpp"

namespace tune_bench {

namespace {
Gpu g_gpu;
}

const Gpu& gpu() { return g_gpu; }

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

std::vector<float> seeded_data(const std::string& name, long long elements, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f), unit(0.0f, 1.0f);
  std::vector<float> v(static_cast<std::size_t>(elements));
  const bool mask = name.find("mask") != std::string::npos;
  for (float& x : v) x = mask ? (unit(rng) < 0.7f ? 1.0f : 0.0f) : uniform(rng);
  return v;
}

std::vector<PairRow>& pair_rows() {
  static std::vector<PairRow> rows;
  return rows;
}

void print_pair_table() {
  if (pair_rows().empty()) return;
  std::printf("\nnvcc and NVRTC builds side by side (medians, us; tuned: tune's record, NVRTC build, strict re-measure)\n");
  std::printf("%-44s %10s %10s %10s %12s\n", "entry", "tuned", "nvcc", "nvrtc", "nvrtc/nvcc");
  for (const PairRow& r : pair_rows()) {
    if (r.nvcc_us <= 0 && r.nvrtc_us <= 0) continue;  // filtered out
    const double ratio = r.nvcc_us > 0 && r.nvrtc_us > 0 ? r.nvrtc_us / r.nvcc_us : 0;
    std::printf("%-44s %10.3f %10.3f %10.3f %12.3f\n", r.name.c_str(), r.tuned_us, r.nvcc_us, r.nvrtc_us, ratio);
  }
}

namespace {
std::deque<RtcProgram>& programs() {
  static std::deque<RtcProgram> p;
  return p;
}
}  // namespace

RtcProgram& new_program(const RtcSources& sources, std::vector<std::string> expressions, std::vector<std::string> options) {
  RtcProgram& p = programs().emplace_back();
  p.sources = sources;
  p.name_expressions = std::move(expressions);
  p.options = std::move(options);
  return p;
}

void compile_programs() {
  std::vector<RtcProgram*> pending;
  for (RtcProgram& p : programs()) pending.push_back(&p);
  if (pending.empty()) return;
  std::fprintf(stderr, "tune_bench: %s compiling %zu programs (tune's build of every entry)...\n", nvrtc_version().c_str(),
               pending.size());
  nvrtc_compile(pending);
  for (const RtcProgram* p : pending) {
    std::string opts;
    for (const auto& o : p->options) opts += " " + o;
    std::fprintf(stderr, "  %s%s [%.1f s]%s%s\n", p->name_expressions.empty() ? "?" : p->name_expressions.front().c_str(),
                 p->name_expressions.size() > 1 ? " ..." : "", p->seconds, opts.c_str(),
                 p->error.empty() ? "" : ("\n    FAILED: " + p->error).c_str());
  }
}

const CUfunction* program_functions(RtcProgram& p, bool twin) {
  if (!p.error.empty()) throw std::runtime_error("NVRTC: " + p.error.substr(0, 200));
  if (twin) {
    nvrtc_load_twin(p);
    return p.twin_functions.data();
  }
  nvrtc_load(p);
  return p.functions.data();
}

bool aa_mode() {
  const char* aa = std::getenv("TUNE_BENCH_AA");
  return aa && *aa;
}

// The device, read once at start-up, and the context of every benchmark; 0, or 3 (with one line on
// stderr) when there is no usable CUDA device.
int open_gpu() {
  try {
    auto& g = g_gpu;
    cudaDeviceProp prop{};
    TUNE_BENCH_CUDA(cudaGetDeviceProperties(&prop, g.ordinal));
    TUNE_BENCH_CUDA(cudaSetDevice(g.ordinal));
    TUNE_BENCH_CUDA(cudaFree(nullptr));  // the primary context, current: the NVRTC build is loaded into it
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
    benchmark::AddCustomContext("timing",
                                "CUDA events around the launches; L2 flushed (2x its size) before every iteration");
    benchmark::AddCustomContext("builds",
                                "nvcc: the header's instantiations compiled ahead of time (cudaLaunchKernel); nvrtc: "
                                "the same name expressions compiled at start-up by " +
                                    nvrtc_version() +
                                    " with the results file's context.compile_options (cuModuleLoadData, cuLaunchKernel)" +
                                    (aa_mode() ? "; TUNE_BENCH_AA: the nvcc column is a second module of "
                                                 "the NVRTC build's CUBIN (an A/A comparison)"
                                               : ""));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tune_bench: no usable CUDA device: %s\n", e.what());
    return 3;
  }
  return 0;
}

}  // namespace tune_bench

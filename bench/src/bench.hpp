#pragma once
// Times the entries of a merged tuned header (tune header) with Google Benchmark: every entry's
// winner and baseline, launched from their ahead-of-time (nvcc) instantiations through the CUDA
// runtime. Manual time from CUDA events around the launches; L2 flushed before every iteration
// by writing twice its size, as tune's own cold samples do.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

namespace tune_bench {

// The device the bench runs on, read once in main.
struct Gpu {
  int ordinal = 0;
  int arch = 0;  // major * 10 + minor
  std::string name;
  std::size_t l2_bytes = 0;
};
const Gpu& gpu();

void check(cudaError_t e, const char* what);
#define TUNE_BENCH_CUDA(call) ::tune_bench::check((call), #call)

// A device allocation that frees itself.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) { TUNE_BENCH_CUDA(cudaMalloc(&ptr_, std::max<std::size_t>(bytes, 16))); }
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) { o.ptr_ = nullptr; }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(DeviceBuffer&&) = delete;
  ~DeviceBuffer() {
    if (ptr_) cudaFree(ptr_);
  }
  [[nodiscard]] void* get() const { return ptr_; }
  [[nodiscard]] std::size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

// A stream and two events that destroy themselves (non-throwing), for one benchmark's timing.
class Timer {
 public:
  Timer() {
    TUNE_BENCH_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    TUNE_BENCH_CUDA(cudaEventCreate(&start_));
    TUNE_BENCH_CUDA(cudaEventCreate(&stop_));
  }
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;
  ~Timer() {
    if (stop_) cudaEventDestroy(stop_);
    if (start_) cudaEventDestroy(start_);
    if (stream_) cudaStreamDestroy(stream_);
  }
  [[nodiscard]] cudaStream_t stream() const { return stream_; }
  [[nodiscard]] cudaEvent_t start() const { return start_; }
  [[nodiscard]] cudaEvent_t stop() const { return stop_; }

 private:
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

// Seeded data of the right sizes: masks (names containing "mask") 1 with probability 0.7, as
// tune's timing inputs; everything else uniform in [-1, 1).
std::vector<float> seeded_data(const std::string& name, long long elements, std::uint64_t seed);

// The device buffers of one variant, filled once and kept while Google Benchmark calls the same
// benchmark again (it does, while it settles the iteration count): the inputs can be 0.5 GB.
struct Workspace {
  std::vector<DeviceBuffer> buffers;
  std::vector<void*> pointers;
};

template <class Variant>
Workspace& workspace(const Variant& v) {
  static const Variant* key = nullptr;
  static std::unique_ptr<Workspace> ws;
  if (key != &v || !ws) {
    ws.reset();
    key = nullptr;
    auto fresh = std::make_unique<Workspace>();
    for (int b = 0; b < v.buffer_count; ++b) {
      const auto data = seeded_data(v.buffers[b].name, v.buffers[b].elements, 1234u + static_cast<unsigned>(b));
      fresh->buffers.emplace_back(data.size() * sizeof(float));
      TUNE_BENCH_CUDA(cudaMemcpy(fresh->buffers.back().get(), data.data(), data.size() * sizeof(float),
                                 cudaMemcpyHostToDevice));
      fresh->pointers.push_back(fresh->buffers.back().get());
    }
    ws = std::move(fresh);
    key = &v;
  }
  return *ws;
}

// Times the launches (kernels[l] with launches[l]'s geometry) of one variant; returns the median
// of the iterations in microseconds (0 when it failed).
template <class Variant>
double time_variant(benchmark::State& state, const Variant& v, const void* const* kernels) {
  try {
    std::vector<void*>& pointers = workspace(v).pointers;
    std::vector<std::vector<void*>> args(v.launch_count);
    for (int l = 0; l < v.launch_count; ++l) {
      for (int a = 0; a < v.launches[l].arg_count; ++a) args[l].push_back(&pointers[v.launches[l].args[a]]);
      if (v.launches[l].dynamic_smem_bytes > 48 * 1024)
        TUNE_BENCH_CUDA(cudaFuncSetAttribute(kernels[l], cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             static_cast<int>(v.launches[l].dynamic_smem_bytes)));
    }
    DeviceBuffer flush(std::max<std::size_t>(2 * gpu().l2_bytes, 8u << 20));
    const Timer timer;
    cudaStream_t stream = timer.stream();
    cudaEvent_t start = timer.start(), stop = timer.stop();
    const auto launch_all = [&] {
      for (int l = 0; l < v.launch_count; ++l) {
        const auto& L = v.launches[l];
        TUNE_BENCH_CUDA(cudaLaunchKernel(kernels[l], dim3(L.grid[0], L.grid[1], L.grid[2]),
                                         dim3(L.block[0], L.block[1], L.block[2]), args[l].data(),
                                         L.dynamic_smem_bytes, stream));
      }
    };
    // Output pre-filled with NaN (all bits set): the check after the timing sees any element not written.
    for (int b = 0; b < v.buffer_count; ++b)
      if (std::string(v.buffers[b].name) == "out")
        TUNE_BENCH_CUDA(cudaMemsetAsync(pointers[b], 0xFF, static_cast<std::size_t>(v.buffers[b].elements) * sizeof(float), stream));
    for (int warm = 0; warm < 3; ++warm) launch_all();
    TUNE_BENCH_CUDA(cudaStreamSynchronize(stream));
    std::vector<double> samples_us;
    for (auto _ : state) {
      TUNE_BENCH_CUDA(cudaMemsetAsync(flush.get(), 0, flush.bytes(), stream));
      TUNE_BENCH_CUDA(cudaEventRecord(start, stream));
      launch_all();
      TUNE_BENCH_CUDA(cudaEventRecord(stop, stream));
      TUNE_BENCH_CUDA(cudaEventSynchronize(stop));
      float ms = 0;
      TUNE_BENCH_CUDA(cudaEventElapsedTime(&ms, start, stop));
      state.SetIterationTime(ms / 1e3);
      samples_us.push_back(ms * 1e3);
    }
    TUNE_BENCH_CUDA(cudaGetLastError());
    // The output must be finite: a wrong instantiation or a launch that skips work shows here, not as a fast time.
    for (int b = 0; b < v.buffer_count; ++b) {
      if (std::string(v.buffers[b].name) != "out") continue;
      std::vector<float> out(static_cast<std::size_t>(v.buffers[b].elements));
      TUNE_BENCH_CUDA(cudaMemcpy(out.data(), pointers[b], out.size() * sizeof(float), cudaMemcpyDeviceToHost));
      const auto bad = std::count_if(out.begin(), out.end(), [](float x) { return !std::isfinite(x); });
      if (bad) state.SkipWithError((std::to_string(bad) + " non-finite output elements").c_str());
    }
    if (!samples_us.empty()) {
      std::sort(samples_us.begin(), samples_us.end());
      const std::size_t n = samples_us.size();
      const double median = n % 2 ? samples_us[n / 2] : (samples_us[n / 2 - 1] + samples_us[n / 2]) / 2;
      state.counters["median_us"] = median;
      state.counters["tuned_median_us"] = v.median_us;  // what tune measured (NVRTC build)
      state.counters["median_vs_tuned"] = median / v.median_us;
      return median;
    }
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
  return 0;
}

// Registers "<problem>/<shape>/winner" and ".../baseline" for every entry of this GPU's arch.
template <class Entry, int kEntries, int kLaunches>
void register_problem(const char* problem, const Entry (&entries)[kEntries],
                      const void* const (&winner_kernels)[kEntries][kLaunches],
                      const void* const (&baseline_kernels)[kEntries][kLaunches]) {
  for (int i = 0; i < kEntries; ++i) {
    const Entry& e = entries[i];
    if (e.arch != gpu().arch) continue;
    const std::string base = std::string(problem) + "/" + e.shape_name + "/";
    // The winner runs first; the baseline's "speedup" is its median over the winner's, as tune reports it.
    auto winner_median = std::make_shared<double>(0.0);
    benchmark::RegisterBenchmark((base + "winner").c_str(),
                                 [&e, k = winner_kernels[i], winner_median](benchmark::State& s) {
                                   *winner_median = time_variant(s, e.winner, k);
                                 })
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark((base + "baseline").c_str(),
                                 [&e, k = baseline_kernels[i], winner_median](benchmark::State& s) {
                                   const double median = time_variant(s, e.baseline, k);
                                   if (median > 0 && *winner_median > 0) s.counters["speedup"] = median / *winner_median;
                                 })
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
  }
}

void register_contact();
void register_scene_graph();

}  // namespace tune_bench

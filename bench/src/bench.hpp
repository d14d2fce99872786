#pragma once
// Times the entries of a merged tuned header (tune header) with Google Benchmark: every entry's
// winner and baseline, launched from their ahead-of-time (nvcc) instantiations through the CUDA
// runtime, and beside each tune's NVRTC build of the same instantiation through the driver API. Manual time from CUDA events around the launches; L2 flushed before every iteration
// by writing twice its size, as tune's own cold samples do.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include "nvrtc.hpp"

namespace tune_bench {

// The device the bench runs on, read once by open_gpu at start-up.
struct Gpu {
  int ordinal = 0;
  int arch = 0;  // major * 10 + minor
  std::string name;
  std::size_t l2_bytes = 0;
};
const Gpu& gpu();
int open_gpu();  // 0, or 3 when there is no usable CUDA device (said on stderr)

void check(cudaError_t e, const char* what);
#define TUNE_BENCH_CUDA(call) ::tune_bench::check((call), #call)

// A device allocation that frees itself.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
    TUNE_BENCH_CUDA(cudaMalloc(&ptr_, std::max<std::size_t>(bytes, 16)));
  }
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
      TUNE_BENCH_CUDA(
          cudaMemcpy(fresh->buffers.back().get(), data.data(), data.size() * sizeof(float), cudaMemcpyHostToDevice));
      fresh->pointers.push_back(fresh->buffers.back().get());
    }
    // A pageable cudaMemcpy returns with its last staged chunk possibly still in flight on the
    // legacy stream, which the timer's non-blocking stream does not wait for.
    TUNE_BENCH_CUDA(cudaDeviceSynchronize());
    ws = std::move(fresh);
    key = &v;
  }
  return *ws;
}

// The kernels of one variant's launches, from one of the two builds: nvcc's instantiations
// (launched with cudaLaunchKernel) or tune's NVRTC build (CUfunctions, launched with cuLaunchKernel,
// as tune launches them). Everything else about the timing is the same.
struct Kernels {
  const void* const* runtime = nullptr;  // nvcc
  const CUfunction* driver = nullptr;    // NVRTC
};

template <class Launch>
void allow_smem(const Kernels& k, int l, const Launch& L) {
  if (L.dynamic_smem_bytes <= 48 * 1024) return;
  if (k.driver)
    TUNE_BENCH_CU(cuFuncSetAttribute(k.driver[l], CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                     static_cast<int>(L.dynamic_smem_bytes)));
  else
    TUNE_BENCH_CUDA(cudaFuncSetAttribute(k.runtime[l], cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         static_cast<int>(L.dynamic_smem_bytes)));
}

template <class Launch>
void launch(const Kernels& k, int l, const Launch& L, void** args, cudaStream_t stream) {
  if (k.driver)
    TUNE_BENCH_CU(cuLaunchKernel(k.driver[l], static_cast<unsigned>(L.grid[0]), static_cast<unsigned>(L.grid[1]),
                                 static_cast<unsigned>(L.grid[2]), static_cast<unsigned>(L.block[0]),
                                 static_cast<unsigned>(L.block[1]), static_cast<unsigned>(L.block[2]),
                                 static_cast<unsigned>(L.dynamic_smem_bytes), stream, args, nullptr));
  else
    TUNE_BENCH_CUDA(cudaLaunchKernel(k.runtime[l], dim3(L.grid[0], L.grid[1], L.grid[2]),
                                     dim3(L.block[0], L.block[1], L.block[2]), args, L.dynamic_smem_bytes, stream));
}

inline double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Fills the outputs with NaN (all bits set): check_outputs after the timing sees any element not written.
template <class Variant>
void poison_outputs(const Variant& v, const std::vector<void*>& pointers, cudaStream_t stream) {
  for (int b = 0; b < v.buffer_count; ++b)
    if (std::string(v.buffers[b].name) == "out")
      TUNE_BENCH_CUDA(
          cudaMemsetAsync(pointers[b], 0xFF, static_cast<std::size_t>(v.buffers[b].elements) * sizeof(float), stream));
}

// The output must be finite: a wrong instantiation or a launch that skips work shows here, not as a fast time.
template <class Variant>
void check_outputs(benchmark::State& state, const Variant& v, const std::vector<void*>& pointers) {
  for (int b = 0; b < v.buffer_count; ++b) {
    if (std::string(v.buffers[b].name) != "out") continue;
    std::vector<float> out(static_cast<std::size_t>(v.buffers[b].elements));
    TUNE_BENCH_CUDA(cudaMemcpy(out.data(), pointers[b], out.size() * sizeof(float), cudaMemcpyDeviceToHost));
    const auto bad = std::count_if(out.begin(), out.end(), [](float x) { return !std::isfinite(x); });
    if (bad) state.SkipWithError((std::to_string(bad) + " non-finite output elements").c_str());
  }
}

// Times the launches (kernels' l-th with launches[l]'s geometry) of one variant; returns the median
// of the iterations in microseconds (0 when it failed).
template <class Variant>
double time_variant(benchmark::State& state, const Variant& v, const Kernels& kernels) {
  try {
    std::vector<void*>& pointers = workspace(v).pointers;
    std::vector<std::vector<void*>> args(v.launch_count);
    for (int l = 0; l < v.launch_count; ++l) {
      for (int a = 0; a < v.launches[l].arg_count; ++a) args[l].push_back(&pointers[v.launches[l].args[a]]);
      allow_smem(kernels, l, v.launches[l]);
    }
    // TUNE_BENCH_NVCC_VIA_DRIVER=1: the nvcc build's kernels launched as the NVRTC build's are, with
    // cuLaunchKernel on their CUfunctions (cudaGetFuncBySymbol), so that the two builds differ in
    // their modules alone (issue 21: is the launch path what the remaining gap is?).
    std::vector<CUfunction> via_driver;
    Kernels use = kernels;
    if (kernels.runtime && std::getenv("TUNE_BENCH_NVCC_VIA_DRIVER")) {
      for (int l = 0; l < v.launch_count; ++l) {
        cudaFunction_t f = nullptr;
        TUNE_BENCH_CUDA(cudaGetFuncBySymbol(&f, kernels.runtime[l]));
        via_driver.push_back(reinterpret_cast<CUfunction>(f));
      }
      use = Kernels{nullptr, via_driver.data()};
    }
    DeviceBuffer flush(std::max<std::size_t>(2 * gpu().l2_bytes, 8u << 20));
    const Timer timer;
    cudaStream_t stream = timer.stream();
    cudaEvent_t start = timer.start(), stop = timer.stop();
    const auto launch_all = [&] {
      for (int l = 0; l < v.launch_count; ++l) launch(use, l, v.launches[l], args[l].data(), stream);
    };
    poison_outputs(v, pointers, stream);
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
    check_outputs(state, v, pointers);
    if (!samples_us.empty()) {
      const double median = median_of(samples_us);
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

template <class Variant>
double time_variant(benchmark::State& state, const Variant& v, const void* const* kernels) {
  return time_variant(state, v, Kernels{kernels, nullptr});
}

// The side-by-side table printed after the run: one row per (entry, role), the median of each build.
struct PairRow {
  std::string name;  // <problem>/<shape>/<role>
  double tuned_us = 0, nvcc_us = 0, nvrtc_us = 0;
};
std::vector<PairRow>& pair_rows();
void print_pair_table();

// tune's NVRTC programs of the bench, compiled all at once (in parallel) before the benchmarks run.
RtcProgram& new_program(const RtcSources& sources, std::vector<std::string> expressions, std::vector<std::string> options);
void compile_programs();  // prints one line per program and what failed
// The NVRTC build's kernels of a program, loaded on first use (twin: from a second module of the
// same CUBIN); throws what failed.
const CUfunction* program_functions(RtcProgram& p, bool twin = false);
// TUNE_BENCH_AA set (not empty): the "nvcc" benchmarks time a second module of the NVRTC build's CUBIN instead,
// so that the two columns differ in nothing but the module: the noise floor of the comparison.
bool aa_mode();

// The options of the results file `shape_name` (context.compile_options), empty when unknown.
template <class Record, int kRecords>
const Record* record_of(const Record (&records)[kRecords], const char* shape_name) {
  for (const Record& r : records)
    if (std::string(r.shape_name) == shape_name) return &r;
  return nullptr;
}

template <class Record>
std::vector<std::string> options_of(const Record* r) {
  std::vector<std::string> o;
  if (r)
    for (int i = 0; i < r->option_count; ++i) o.emplace_back(r->options[i]);
  return o;
}

template <class Variant>
std::vector<std::string> expressions_of(const Variant& v) {
  std::vector<std::string> e;
  for (int l = 0; l < v.launch_count; ++l) e.emplace_back(v.launches[l].name_expression);
  return e;
}

// Registers "<problem>/<shape>/{winner,baseline}/{nvcc,nvrtc}" for every entry of this GPU's arch:
// nvcc's instantiations (the header's kernels) and tune's NVRTC build of the same name expressions
// with the options the entry's results file records, timed alike, one after the other.
template <class Entry, int kEntries, int kLaunches, class Record, int kRecords>
void register_problem(const char* problem, const Entry (&entries)[kEntries],
                      const void* const (&winner_kernels)[kEntries][kLaunches],
                      const void* const (&baseline_kernels)[kEntries][kLaunches], const RtcSources& sources,
                      const Record (&records)[kRecords]) {
  for (int i = 0; i < kEntries; ++i) {
    const Entry& e = entries[i];
    if (e.arch != gpu().arch) continue;
    const std::string base = std::string(problem) + "/" + e.shape_name + "/";
    const std::vector<std::string> options = options_of(record_of(records, e.shape_name));
    // The winner runs first; the baseline's "speedup" is its median over the winner's, as tune reports it.
    auto winner_median = std::make_shared<double>(0.0);
    for (const bool is_winner : {true, false}) {
      const auto& v = is_winner ? e.winner : e.baseline;
      const void* const* nvcc = is_winner ? winner_kernels[i] : baseline_kernels[i];
      const std::string role = is_winner ? "winner" : "baseline";
      pair_rows().push_back({base + role, v.median_us, 0, 0});
      const std::size_t row = pair_rows().size() - 1;
      RtcProgram* rtc = options.empty() ? nullptr : &new_program(sources, expressions_of(v), options);
      benchmark::RegisterBenchmark((base + role + "/nvcc").c_str(),
                                   [&v, nvcc, rtc, winner_median, is_winner, row](benchmark::State& s) {
                                     double median = 0;
                                     if (aa_mode() && rtc) {
                                       try {
                                         median = time_variant(s, v, Kernels{nullptr, program_functions(*rtc, true)});
                                       } catch (const std::exception& ex) {
                                         s.SkipWithError(ex.what());
                                         return;
                                       }
                                     } else {
                                       median = time_variant(s, v, Kernels{nvcc, nullptr});
                                     }
                                     if (is_winner)
                                       *winner_median = median;
                                     else if (median > 0 && *winner_median > 0)
                                       s.counters["speedup"] = median / *winner_median;
                                     pair_rows()[row].nvcc_us = median;
                                   })
          ->UseManualTime()
          ->Unit(benchmark::kMicrosecond);
      benchmark::RegisterBenchmark((base + role + "/nvrtc").c_str(),
                                   [&v, rtc, row](benchmark::State& s) {
                                     if (!rtc) {
                                       s.SkipWithError("the results file records no compile_options");
                                       return;
                                     }
                                     double median = 0;
                                     try {
                                       median = time_variant(s, v, Kernels{nullptr, program_functions(*rtc)});
                                     } catch (const std::exception& ex) {
                                       s.SkipWithError(ex.what());
                                       return;
                                     }
                                     pair_rows()[row].nvrtc_us = median;
                                     const double nvcc = pair_rows()[row].nvcc_us;
                                     if (median > 0 && nvcc > 0) s.counters["nvrtc_vs_nvcc"] = median / nvcc;
                                   })
          ->UseManualTime()
          ->Unit(benchmark::kMicrosecond);
    }
  }
}

// The interleave mode: tune's strict re-measure of one results file reproduced. Its finalists (the
// variants the results file re-measured, fastest search median first, as tune orders them) are
// loaded and warmed; then in every iteration one cold sample (L2 flushed, events around the
// launches, synchronised) of each finalist in turn, round-robin, as
// tune's strict re-measure took them before it timed in rounds of blocks; the iteration's time is the focus variant's (the
// baseline) sample. "alone" takes only the focus variant's samples the same way. Both builds:
// nvcc's instantiations and tune's NVRTC build. The finalists' kernels take the baseline's buffers
// (one kernel of the same signature: contact).
template <class Finalist, class Variant>
void time_interleaved(benchmark::State& state, const Finalist* finalists, int count, int focus, bool interleave,
                      const Variant& baseline, const std::vector<Kernels>& kernels) {
  try {
    std::vector<void*>& pointers = workspace(baseline).pointers;
    std::vector<std::vector<std::vector<void*>>> args(count);
    for (int f = 0; f < count; ++f) {
      if (finalists[f].launch_count != baseline.launch_count)
        throw std::runtime_error(std::string("finalist ") + finalists[f].name +
                                 " has another launch count than the baseline");
      args[f].resize(finalists[f].launch_count);
      for (int l = 0; l < finalists[f].launch_count; ++l) {
        for (int a = 0; a < baseline.launches[l].arg_count; ++a)
          args[f][l].push_back(&pointers[baseline.launches[l].args[a]]);
        allow_smem(kernels[f], l, finalists[f].launches[l]);
      }
    }
    DeviceBuffer flush(std::max<std::size_t>(2 * gpu().l2_bytes, 8u << 20));
    const Timer timer;
    cudaStream_t stream = timer.stream();
    cudaEvent_t start = timer.start(), stop = timer.stop();
    const auto launch_all = [&](int f) {
      for (int l = 0; l < finalists[f].launch_count; ++l)
        launch(kernels[f], l, finalists[f].launches[l], args[f][l].data(), stream);
    };
    const auto cold_sample = [&](int f) {
      TUNE_BENCH_CUDA(cudaMemsetAsync(flush.get(), 0, flush.bytes(), stream));
      TUNE_BENCH_CUDA(cudaEventRecord(start, stream));
      launch_all(f);
      TUNE_BENCH_CUDA(cudaEventRecord(stop, stream));
      TUNE_BENCH_CUDA(cudaEventSynchronize(stop));
      float ms = 0;
      TUNE_BENCH_CUDA(cudaEventElapsedTime(&ms, start, stop));
      return static_cast<double>(ms) * 1e3;
    };
    for (int f = 0; f < count; ++f) {
      if (!interleave && f != focus) continue;
      for (int warm = 0; warm < 3; ++warm) launch_all(f);
    }
    TUNE_BENCH_CUDA(cudaStreamSynchronize(stream));
    std::vector<std::vector<double>> samples(count);
    for (auto _ : state) {
      for (int f = 0; f < count; ++f) {
        if (!interleave && f != focus) continue;
        const double us = cold_sample(f);
        samples[f].push_back(us);
        if (f == focus) state.SetIterationTime(us / 1e6);
      }
    }
    TUNE_BENCH_CUDA(cudaGetLastError());
    state.counters["median_us"] = median_of(samples[focus]);
    state.counters["strict_median_us"] = finalists[focus].strict_median_us;  // tune, interleaved
    state.counters["search_median_us"] = finalists[focus].search_median_us;  // tune, alone
    if (interleave)
      for (int f = 0; f < count; ++f)
        if (f != focus) state.counters["f" + std::to_string(f) + "_median_us"] = median_of(samples[f]);
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

// Registers "<problem>/<shape>/strict/{alone,interleaved}/{nvcc,nvrtc}" for every results file that
// lists finalists (bench/CMakeLists.txt: TUNE_BENCH_INTERLEAVE) and has an entry of this GPU's arch.
template <class Entry, int kEntries, class Record, int kRecords, class NvccKernel, int kNvcc>
void register_interleave(const char* problem, const Entry (&entries)[kEntries], const Record (&records)[kRecords],
                         const NvccKernel (&nvcc_kernels)[kNvcc], int nvcc_count, const RtcSources& sources) {
  for (const Record& r : records) {
    if (r.finalist_count < 2) continue;
    const Entry* entry = nullptr;
    for (const Entry& e : entries)
      if (e.arch == gpu().arch && std::string(e.shape_name) == r.shape_name) entry = &e;
    if (!entry) continue;
    int focus = -1;
    for (int f = 0; f < r.finalist_count; ++f)
      if (r.finalists[f].baseline) focus = f;
    if (focus < 0) continue;
    // nvcc: the instantiations the generated header lists, by name expression.
    auto nvcc = std::make_shared<std::vector<std::vector<const void*>>>();
    bool all = true;
    for (int f = 0; f < r.finalist_count; ++f) {
      nvcc->emplace_back();
      for (int l = 0; l < r.finalists[f].launch_count; ++l) {
        const void* k = nullptr;
        for (int n = 0; n < nvcc_count; ++n)
          if (std::string(nvcc_kernels[n].name_expression) == r.finalists[f].launches[l].name_expression)
            k = nvcc_kernels[n].kernel;
        all = all && k;
        nvcc->back().push_back(k);
      }
    }
    std::vector<RtcProgram*> rtc;
    for (int f = 0; f < r.finalist_count; ++f) {
      std::vector<std::string> e;
      for (int l = 0; l < r.finalists[f].launch_count; ++l) e.emplace_back(r.finalists[f].launches[l].name_expression);
      rtc.push_back(&new_program(sources, e, options_of(&r)));
    }
    const std::string base = std::string(problem) + "/" + r.shape_name + "/strict/";
    for (const bool interleave : {false, true})
      for (const bool use_nvrtc : {false, true}) {
        const std::string name = base + (interleave ? "interleaved/" : "alone/") + (use_nvrtc ? "nvrtc" : "nvcc");
        benchmark::RegisterBenchmark(name.c_str(),
                                     [&r, entry, focus, interleave, use_nvrtc, nvcc, all, rtc](benchmark::State& s) {
                                       std::vector<Kernels> k;
                                       try {
                                         for (int f = 0; f < r.finalist_count; ++f)
                                           k.push_back(use_nvrtc ? Kernels{nullptr, program_functions(*rtc[f])}
                                                                 : Kernels{(*nvcc)[f].data(), nullptr});
                                       } catch (const std::exception& ex) {
                                         s.SkipWithError(ex.what());
                                         return;
                                       }
                                       if (!use_nvrtc && !all) {
                                         s.SkipWithError("a finalist has no nvcc instantiation");
                                         return;
                                       }
                                       time_interleaved(s, r.finalists, r.finalist_count, focus, interleave, entry->baseline,
                                                        k);
                                     })
            ->UseManualTime()
            ->Unit(benchmark::kMicrosecond);
      }
  }
}

void register_contact();
void register_scene_graph();

}  // namespace tune_bench

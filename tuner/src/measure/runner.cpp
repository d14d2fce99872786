#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <thread>

#include <fmt/format.h>
#include "cuda/driver.hpp"
#include "cuda/owners.hpp"
#include "measure/loaded_variant.hpp"
#include "tune/errors.hpp"
#include "tune/measure.hpp"

namespace tune {

using device_run::BoundArgs;
using device_run::BufferSet;
using device_run::LoadedVariant;
using device_run::upload;

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

constexpr std::uint32_t kNanBits = 0x7fc00000u;
constexpr std::uint8_t kFillByte = 0xFF;  // every other dtype's output fill
constexpr unsigned kDefaultSmemLimit = 48 * 1024;

using device_run::Output;

}  // namespace

struct DeviceRunner::Impl {
  DeviceInfo device;
  const Problem& problem;
  Shape shape;
  ProblemData timing_data, parity_data;
  OutputValues parity_reference;
  std::uint64_t parity_seed;
  std::optional<double> parity_module_error;  // the module's own error on the parity data
  TensorSpec out_spec;
  cuda::Context ctx;
  std::optional<cuda::Stream> stream;
  std::optional<cuda::Event> start, stop;
  std::optional<cuda::DeviceBuffer> flush;
  BufferSet timing_set, parity_set;
  std::string phase;
  int item = 0;  // the variant of remeasure_in_rounds's list in hand (-1: all of them)
  DeviceRunner::PhaseListener listener;

  void set_phase(const char* name) {
    phase = name;
    if (listener) listener(phase, item);
  }

  Impl(const DeviceInfo& d, const Problem& p, const Shape& s, ProblemData t, ProblemData par, OutputValues ref,
       std::uint64_t seed, std::optional<double> module_err)
      : device(d),
        problem(p),
        shape(s),
        timing_data(std::move(t)),
        parity_data(std::move(par)),
        parity_reference(std::move(ref)),
        parity_seed(seed),
        parity_module_error(module_err),
        out_spec(p.output_spec(s)),
        ctx(d.ordinal) {
    // In this context, before anything is allocated: one context per worker (under a sanitizer a
    // context takes seconds to create; a probe context of its own doubled that, issue 37).
    std::size_t free_bytes = 0, total = 0;
    TUNE_CU(cuMemGetInfo(&free_bytes, &total));
    if (std::string why = DeviceRunner::memory_shortfall(p, s, d, free_bytes); !why.empty()) throw DeviceError(why);
    build();
  }

  void build() {
    stream.emplace();
    start.emplace();
    stop.emplace();
    timing_set = upload(timing_data, out_spec);
    parity_set = upload(parity_data, out_spec);
  }

  // After a sticky error every handle of the context is dead: drop them, reset, rebuild.
  void recover() {
    timing_set = {};
    parity_set = {};
    flush.reset();
    start.reset();
    stop.reset();
    stream.reset();
    ctx.reset();
    build();
  }

  LoadedVariant load(const CompileResult& compiled, const Lowered& lowered) {
    set_phase("load");
    LoadedVariant v;
    v.module = cuda::Module(compiled.cubin);
    v.launches = lowered.launches;
    for (std::size_t i = 0; i < lowered.launches.size(); ++i) {
      const KernelLaunch& l = lowered.launches[i];
      CUfunction fn = v.module.function(compiled.lowered_names.at(i));
      if (l.dynamic_smem > kDefaultSmemLimit)
        TUNE_CU(cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, static_cast<int>(l.dynamic_smem)));
      v.functions.push_back(fn);
    }
    for (const TensorSpec& s : lowered.scratch) v.scratch.emplace(s.name, cuda::DeviceBuffer(s.bytes()));
    return v;
  }

  // Why the driver would refuse a launch, checked before launching (threads, shared memory).
  std::string launch_limits(const LoadedVariant& v) const {
    for (std::size_t i = 0; i < v.launches.size(); ++i) {
      const auto& l = v.launches[i];
      int max_threads = 0, static_smem = 0;
      TUNE_CU(cuFuncGetAttribute(&max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, v.functions[i]));
      TUNE_CU(cuFuncGetAttribute(&static_smem, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, v.functions[i]));
      const unsigned threads = l.block[0] * l.block[1] * l.block[2];
      if (std::string z = block_z_refusal(l); !z.empty()) return z;
      if (threads > static_cast<unsigned>(max_threads))
        return fmt::format("{} needs {} threads per block but its registers allow {}", l.kernel, threads, max_threads);
      if (static_smem + l.dynamic_smem > device.max_smem_per_block_optin)
        return fmt::format("{} needs {} bytes of shared memory, the device allows {}", l.kernel,
                           static_smem + l.dynamic_smem, device.max_smem_per_block_optin);
    }
    return {};
  }

  void enqueue(const LoadedVariant& v, const BufferSet& set) {
    BoundArgs& args = v.bind(set);
    for (std::size_t i = 0; i < v.launches.size(); ++i) {
      const KernelLaunch& l = v.launches[i];
      TUNE_CU(cuLaunchKernel(v.functions[i], l.grid[0], l.grid[1], l.grid[2], l.block[0], l.block[1], l.block[2],
                             l.dynamic_smem, stream->get(), args.params[i].data(), nullptr));
    }
  }

  void poison(const LoadedVariant& v, BufferSet& set, std::uint8_t fill = kFillByte) {
    // The output poisoned in its dtype: float32 a quiet NaN; other dtypes every byte `fill`, by
    // default 0xFF (NaN in bfloat16, float16 and float64, -1 or 255 in integers, no bool).
    const CUdeviceptr out = set.buffers.at(out_spec.name).get();
    if (out_spec.dtype == DType::kFloat32)
      TUNE_CU(cuMemsetD32Async(out, kNanBits, set.out_elements, stream->get()));
    else
      TUNE_CU(cuMemsetD8Async(out, fill, set.out_elements * dtype_size(out_spec.dtype), stream->get()));
    for (const auto& [name, b] : v.scratch) TUNE_CU(cuMemsetD32Async(b.get(), kNanBits, b.bytes() / 4, stream->get()));
  }

  ParityRecord run_parity(const LoadedVariant& v, BufferSet& set, const OutputValues& ref, std::uint64_t seed,
                          std::optional<double> module_err, double* launch_ms) {
    set_phase("parity");
    return parity_launch(v, set, ref, seed, module_err, launch_ms);
  }

  // The parity of one launch. An integer output's fill (-1, or 255 in uint8) is a value its
  // reference may hold (an index not found), so an element the kernel left unwritten there would
  // match it. Where an element reads the fill and its reference is that value, the variant runs
  // again on an output of zero bytes: an unwritten element then differs from its reference in one
  // of the two launches, and a written one matches in both. (A float output's fill is NaN, and a
  // bool's 0xFF byte is no bool: neither ever passes.)
  ParityRecord parity_launch(const LoadedVariant& v, BufferSet& set, const OutputValues& ref, std::uint64_t seed,
                             std::optional<double> module_err, double* launch_ms) {
    const Output out = launch_once(v, set, false, launch_ms);
    ParityRecord p = parity_of(out, ref, seed, module_err);
    if (!parity_passed(p) || !fill_may_match(out, ref)) return p;
    ParityRecord again = parity_of(launch_once(v, set, false, nullptr, 0x00), ref, seed, module_err);
    return parity_passed(again) ? p : again;
  }

  // Whether an element of an integer output holds the fill where its reference is the fill's value.
  [[nodiscard]] bool fill_may_match(const Output& out, const OutputValues& ref) const {
    if (is_floating(out_spec.dtype) || out_spec.dtype == DType::kBool) return false;
    std::vector<std::byte> fill_bytes(dtype_size(out_spec.dtype), std::byte{kFillByte});
    const double fill = decode(out_spec.dtype, fill_bytes.data());
    // int64's fill is -1, which its doubles hold exactly; an element past 2^53 is never the fill.
    for (std::size_t i = 0; i < out.values.size() && i < ref.size(); ++i)
      if (out.values.values()[i] == fill && ref.values()[i] == fill) return true;
    return false;
  }

  // An output against its float64 reference by the rules of its dtype's tolerance (and the
  // module's error where known), with its seed and hash.
  ParityRecord parity_of(const Output& out, const OutputValues& ref, std::uint64_t seed,
                         std::optional<double> module_err) const {
    ParityRecord p = judge_output(out.values, ref, problem.tolerance(out_spec.dtype), module_err);
    p.seed = seed;
    p.output_hash = output_hash(out.bytes);
    return p;
  }

  // Zeroes a buffer of twice the L2 size, allocated at first use: a worker that only launches under
  // a sanitizer never flushes, and memcheck and initcheck track every byte allocated (issue 37).
  void flush_l2_cache() {
    if (!flush) flush.emplace(static_cast<std::size_t>(std::max<std::int64_t>(device.l2_bytes * 2, 8 << 20)));
    TUNE_CU(cuMemsetD8Async(flush->get(), 0, flush->bytes(), stream->get()));
  }

  // The output of one launch on `set` (poisoned first, with `fill` bytes unless it is float32; the
  // L2 flushed first when `flush_l2`).
  // *launch_ms: the launch alone, from the enqueue to its completion.
  Output launch_once(const LoadedVariant& v, BufferSet& set, bool flush_l2, double* launch_ms = nullptr,
                     std::uint8_t fill = kFillByte) {
    if (flush_l2) flush_l2_cache();
    poison(v, set, fill);
    if (launch_ms) stream->synchronize();
    const auto t = Clock::now();
    enqueue(v, set);
    TUNE_CU(cuCtxSynchronize());
    if (launch_ms) *launch_ms = seconds_since(t) * 1e3;
    std::vector<std::byte> bytes(set.out_elements * dtype_size(out_spec.dtype));
    set.buffers.at(out_spec.name).download(bytes.data(), bytes.size());
    return Output::of(out_spec.dtype, std::move(bytes));
  }

  double cold_sample(const LoadedVariant& v) {
    flush_l2_cache();
    start->record(*stream);
    enqueue(v, timing_set);
    stop->record(*stream);
    return static_cast<double>(cuda::Event::elapsed_ms(*start, *stop)) * 1e3;
  }

  // Back-to-back launches on the stream between one event pair: what a pipeline of launches sees,
  // host launch cost included. Median of 5 repetitions.
  double batch_mean(const LoadedVariant& v, int launches) {
    std::vector<double> reps;
    for (int r = 0; r < 5; ++r) {
      start->record(*stream);
      for (int k = 0; k < launches; ++k) enqueue(v, timing_set);
      stop->record(*stream);
      reps.push_back(static_cast<double>(cuda::Event::elapsed_ms(*start, *stop)) * 1e3 / launches);
    }
    std::sort(reps.begin(), reps.end());
    return reps[reps.size() / 2];
  }

  // The same launches captured once in a CUDA graph and replayed: GPU time per call without the
  // host's launch cost. Median of 5 replays.
  double graph_mean(const LoadedVariant& v, int launches) {
    const cuda::GraphExec graph = cuda::GraphExec::capture(*stream, [&] {
      for (int k = 0; k < launches; ++k) enqueue(v, timing_set);
    });
    graph.launch(*stream);
    stream->synchronize();
    std::vector<double> reps;
    for (int r = 0; r < 5; ++r) {
      start->record(*stream);
      graph.launch(*stream);
      stop->record(*stream);
      reps.push_back(static_cast<double>(cuda::Event::elapsed_ms(*start, *stop)) * 1e3 / launches);
    }
    std::sort(reps.begin(), reps.end());
    return reps[reps.size() / 2];
  }

  void warm(const LoadedVariant& v, int launches) {
    set_phase("warm-up");
    for (int k = 0; k < launches; ++k) enqueue(v, timing_set);
    stream->synchronize();
  }

  static ClockRecord clocks(const ClockSample& a, const ClockSample& b) {
    ClockRecord c;
    c.available = a.available && b.available;
    c.sm_mhz_start = a.sm_mhz;
    c.sm_mhz_end = b.sm_mhz;
    ClockSample both = a;
    both.reasons |= b.reasons;
    c.reasons = both.reason_names();
    c.throttled = a.throttled() || b.throttled();
    return c;
  }

  // A measurement whose clocks show throttling (power, thermal, ...) is taken again after a pause,
  // up to twice; the record keeps the count and is still flagged if the last attempt throttled.
  TimingRecord time(const LoadedVariant& v, const DeviceRunner::Options& o) {
    constexpr int kThrottleRetries = 2;
    TimingRecord r = time_once(v, o);
    for (int retry = 1; r.clocks.throttled && retry <= kThrottleRetries; ++retry) {
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
      r = time_once(v, o);
      r.throttle_retries = retry;
    }
    return r;
  }

  TimingRecord time_once(const LoadedVariant& v, const DeviceRunner::Options& o) {
    auto t = Clock::now();
    auto lap = [&t] {
      const double ms = seconds_since(t) * 1e3;
      t = Clock::now();
      return ms;
    };
    TimingRecord r;
    warm(v, o.warmup_launches);
    r.warmup_ms = lap();
    set_phase("timing");
    const ClockSample before = sample_clocks(device.uuid);
    r.clocks_ms = lap();
    SampleSet set;
    const auto t0 = Clock::now();
    std::string why;
    while ((why = set.stop_reason(o.rule, seconds_since(t0))).empty()) set.add(cold_sample(v));
    set.summarize(r);
    r.cold_ms = lap();
    r.profile = o.rule.profile;
    r.stop_reason = why;
    r.batch_launches = o.batch_launches;
    r.batch_mean_us = batch_mean(v, o.batch_launches);
    r.batch_ms = lap();
    r.graph_mean_us = graph_mean(v, o.batch_launches);
    r.graph_ms = lap();
    r.clocks = clocks(before, sample_clocks(device.uuid));
    r.clocks_ms += lap();
    return r;
  }

  // The harness's own floor: an empty kernel through the same cold, batch and graph methods.
  HarnessFloor measure_floor() {
    CompileRequest req{"template <int I> __global__ void tune_empty() {}",
                       "tune_empty.cu",
                       {"tune_empty<0>"},
                       default_options(device.compute_capability())};
    const CompileResult compiled = compile(req);
    if (!compiled.ok) throw std::runtime_error("the empty calibration kernel did not compile: " + compiled.log);
    Lowered lowered;
    lowered.launches.push_back({"tune_empty", "tune_empty<0>", {1, 1, 1}, {32, 1, 1}, 0, {}});
    LoadedVariant v = load(compiled, lowered);
    warm(v, 10);
    SampleSet set;
    for (int i = 0; i < 200; ++i) set.add(cold_sample(v));
    TimingRecord t;
    set.summarize(t);
    return {t.median_us, batch_mean(v, 100), graph_mean(v, 100)};
  }

  void fill_throughput(VariantRecord& rec) const {
    if (!rec.timing || rec.timing->median_us <= 0) return;
    const WorkCounts w = problem.counts(shape);
    rec.gbytes_per_s = w.bytes / (rec.timing->median_us * 1e-6) / 1e9;
    rec.gflop_per_s = w.flop / (rec.timing->median_us * 1e-6) / 1e9;
  }
};

DeviceRunner::DeviceRunner(const DeviceInfo& device, const Problem& problem, const Shape& shape,
                           const ProblemData& timing_data, const ProblemData& parity_data, OutputValues parity_reference,
                           std::uint64_t parity_seed, std::optional<double> parity_module_error) {
  impl_ = std::make_unique<Impl>(device, problem, shape, timing_data, parity_data, std::move(parity_reference), parity_seed,
                                 parity_module_error);
}

DeviceRunner::~DeviceRunner() = default;

HarnessFloor DeviceRunner::measure_floor() { return impl_->measure_floor(); }

void DeviceRunner::on_phase(PhaseListener listener) { impl_->listener = std::move(listener); }

void DeviceRunner::evaluate(const CompileResult& compiled, const Lowered& lowered, VariantRecord& record,
                            const Options& options) {
  Impl& s = *impl_;
  s.item = 0;
  s.phase = "load";
  // The module is unloaded when the evaluation ends, however it ends; that time is recorded too.
  std::optional<LoadedVariant> loaded;
  struct Unload {
    std::optional<LoadedVariant>& v;
    VariantRecord& r;
    ~Unload() {
      const auto t = Clock::now();
      v.reset();
      r.unload_ms = seconds_since(t) * 1e3;
    }
  } unload{loaded, record};
  try {
    const auto t = Clock::now();
    loaded.emplace(s.load(compiled, lowered));
    const LoadedVariant& v = *loaded;
    record.load_seconds = seconds_since(t);
    // NVRTC's ptxas report occasionally lacks a kernel; the loaded function knows its resources.
    for (std::size_t i = 0; i < v.functions.size(); ++i) {
      const std::string& name = compiled.lowered_names.at(i);
      if (auto it = record.resources.find(name); it != record.resources.end() && it->second.registers >= 0) continue;
      Resources r;
      r.source = "driver";
      TUNE_CU(cuFuncGetAttribute(&r.registers, CU_FUNC_ATTRIBUTE_NUM_REGS, v.functions[i]));
      TUNE_CU(cuFuncGetAttribute(&r.static_smem_bytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, v.functions[i]));
      TUNE_CU(cuFuncGetAttribute(&r.stack_frame_bytes, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, v.functions[i]));
      record.resources[name] = r;
    }
    if (std::string why = s.launch_limits(v); !why.empty()) {
      record.status = Status::kLaunchFailed;
      record.reason = why;
      return;
    }
    if (options.check_parity || !record.parity) {
      const auto tp = Clock::now();
      record.parity =
          s.run_parity(v, s.parity_set, s.parity_reference, s.parity_seed, s.parity_module_error, &record.first_launch_ms);
      record.parity_ms = seconds_since(tp) * 1e3;
    }
    if (!parity_passed(*record.parity)) {
      record.status = Status::kIncorrect;
      record.reason = parity_failure(*record.parity);
      return;
    }
    record.timing = s.time(v, options);
    record.status = Status::kPassed;
    s.fill_throughput(record);
  } catch (const cuda::CudaError& e) {
    loaded.reset();  // before any context reset, as when it went out of scope with the try block
    record.status = e.sticky() ? Status::kCrashed : Status::kLaunchFailed;
    record.reason = fmt::format("{} during {}", e.name(), s.phase);
    if (e.sticky()) {
      record.fault = FaultRecord{FaultKind::kCudaError, "", e.name(), s.phase, 0, 0};
      // The driver may refuse a fresh context in this process after a sticky error; the fault is
      // recorded either way (the worker process that runs this exits and is replaced).
      try {
        s.recover();
      } catch (const std::exception& again) {
        record.reason += fmt::format("; no fresh context in this process ({})", again.what());
      }
    }
  }
}

void DeviceRunner::remeasure_in_rounds(const std::vector<const CompileResult*>& compiled,
                                       const std::vector<Lowered>& lowered, const std::vector<VariantRecord*>& records,
                                       const Options& options) {
  Impl& s = *impl_;
  std::vector<LoadedVariant> loaded;
  std::vector<SampleSet> sets(records.size());
  std::vector<std::string> done(records.size());
  std::vector<ClockSample> before(records.size());
  try {
    for (std::size_t i = 0; i < records.size(); ++i) {
      s.item = static_cast<int>(i);
      loaded.push_back(s.load(*compiled[i], lowered[i]));
      s.warm(loaded.back(), options.warmup_launches);
      before[i] = sample_clocks(s.device.uuid);
    }
    s.item = -1;
    s.set_phase("strict timing");
    const auto t0 = Clock::now();
    // Rounds of blocks: in each round every unfinished variant runs one untimed launch and then a
    // block of cold samples, so that drift hits all of them alike while each is timed as the
    // search timed it and as a user's benchmark does: after a launch of its own. One cold sample
    // of each in turn (the earlier scheme) times a kernel whose code the others' evicted from
    // the SM's instruction caches: on the H200 the contact B4 N64 baseline (92 KB of code) took
    // 25.0 us so against 17.5 us alone, in both the nvcc and the NVRTC build (bench, strict/*).
    for (bool any = true; any;) {
      any = false;
      for (std::size_t i = 0; i < records.size(); ++i) {
        if (!done[i].empty()) continue;
        s.enqueue(loaded[i], s.timing_set);
        for (int k = 0; k < kStrictBlock && done[i].empty(); ++k) {
          done[i] = sets[i].stop_reason(options.rule, seconds_since(t0));
          if (done[i].empty()) sets[i].add(s.cold_sample(loaded[i]));
        }
        any = any || done[i].empty();
      }
    }
    for (std::size_t i = 0; i < records.size(); ++i) {
      TimingRecord r;
      sets[i].summarize(r);
      r.profile = options.rule.profile + "-rounds";
      r.stop_reason = done[i];
      r.batch_launches = options.batch_launches;
      r.batch_mean_us = s.batch_mean(loaded[i], options.batch_launches);
      r.graph_mean_us = s.graph_mean(loaded[i], options.batch_launches);
      r.clocks = Impl::clocks(before[i], sample_clocks(s.device.uuid));
      records[i]->search_timing = records[i]->timing;
      records[i]->timing = r;
      s.fill_throughput(*records[i]);
    }
  } catch (const cuda::CudaError& e) {
    // Every variant here passed before; a fault now is recorded on all of them, and nothing is lost.
    for (auto* r : records) r->reason = fmt::format("strict re-measure stopped: {} during {}", e.name(), s.phase);
    loaded.clear();  // their handles belong to the context about to be reset
    if (e.sticky()) s.recover();
  }
}

void DeviceRunner::gate(const std::vector<const CompileResult*>& compiled, const std::vector<Lowered>& lowered,
                        const std::vector<GateRecord*>& gates, const std::vector<std::string>& known_hashes,
                        const std::vector<GateInput>& inputs, int rounds, bool deterministic) {
  Impl& s = *impl_;
  std::vector<LoadedVariant> loaded;
  for (std::size_t i = 0; i < compiled.size(); ++i) {
    s.item = static_cast<int>(i);
    loaded.push_back(s.load(*compiled[i], lowered[i]));
  }
  // Parity on each further input: one buffer set at a time (an input may be large).
  s.item = -1;
  s.set_phase("gate inputs");
  for (const GateInput& in : inputs) {
    BufferSet set = upload(*in.data, s.out_spec);
    for (std::size_t i = 0; i < loaded.size(); ++i) {
      gates[i]->inputs.push_back(
          {in.name, s.parity_launch(loaded[i], set, *in.reference, in.seed, in.module_error, nullptr)});
      loaded[i].unbind(set);
    }
  }
  // Determinism: the parity data, `rounds` rounds of one launch of each variant in turn (the L2
  // flushed before each), against the first round and against the bits of the search's context.
  s.set_phase("gate determinism");
  std::vector<Output> first(loaded.size());
  std::vector<std::string> changed(loaded.size());
  for (int r = 0; r < rounds; ++r)
    for (std::size_t i = 0; i < loaded.size(); ++i) {
      Output out = s.launch_once(loaded[i], s.parity_set, true);
      if (r == 0) {
        const std::string h = output_hash(out.bytes);
        if (deterministic && i < known_hashes.size() && !known_hashes[i].empty() && h != known_hashes[i])
          changed[i] = fmt::format("the output's bits in a fresh context (XXH3 {}) differ from the search's ({})", h,
                                   known_hashes[i]);
        // Outputs that may differ between launches have no bits to compare with the search's: the
        // fresh context's output is held to the search's reference instead, as a further input.
        if (!deterministic)
          gates[i]->inputs.push_back(
              {kFreshContextInput, s.parity_of(out, s.parity_reference, s.parity_seed, s.parity_module_error)});
        first[i] = std::move(out);
        continue;
      }
      if (!changed[i].empty()) continue;
      if (deterministic) {
        if (out.bytes == first[i].bytes) continue;
        const std::size_t width = dtype_size(s.out_spec.dtype);
        std::size_t k = 0;
        std::size_t differ = 0;
        for (std::size_t e = 0; e < out.values.size(); ++e)
          if (std::memcmp(&out.bytes[e * width], &first[i].bytes[e * width], width) != 0) {
            if (differ++ == 0) k = e;
          }
        changed[i] = fmt::format("launch {} of {} changed {} of {} output elements (first at index {}: {}, then {})", r + 1,
                                 rounds, differ, out.values.size(), k, first[i].values.element(k), out.values.element(k));
      } else {
        const Tolerance tol = s.problem.tolerance(s.out_spec.dtype);
        const ParityRecord p = compare_output(out.values, first[i].values, tol.atol, tol.rtol);
        if (p.mismatches > 0)
          changed[i] = fmt::format(
              "launch {} of {} moved {} of {} output elements beyond atol={:g} rtol={:g} of the first "
              "launch (max abs change {:.3g})",
              r + 1, rounds, p.mismatches, p.elements, tol.atol, tol.rtol, p.max_abs_error);
      }
    }
  for (std::size_t i = 0; i < loaded.size(); ++i) {
    gates[i]->launches = rounds + 1;  // and the search's launch in its own context
    gates[i]->deterministic = changed[i].empty();
    gates[i]->determinism =
        changed[i].empty() ? fmt::format(
                                 "{} over {} launches (L2 flushed, the other finalists launched between) and the search's "
                                 "context",
                                 deterministic ? "bitwise identical" : "within tolerance", rounds)
                           : changed[i];
  }
}

std::string DeviceRunner::launch_for_sanitizer(const CompileResult& compiled, const Lowered& lowered, int item) {
  Impl& s = *impl_;
  s.item = item;
  const LoadedVariant v = s.load(compiled, lowered);
  s.set_phase("sanitize");
  return output_hash(s.launch_once(v, s.parity_set, false).bytes);
}

ParityRecord DeviceRunner::check(const CompileResult& compiled, const Lowered& lowered, const ProblemData& data,
                                 const OutputValues& reference, std::uint64_t seed,
                                 std::optional<double> module_max_abs_error) {
  Impl& s = *impl_;
  LoadedVariant v = s.load(compiled, lowered);
  BufferSet set = upload(data, s.out_spec);
  return s.run_parity(v, set, reference, seed, module_max_abs_error, nullptr);
}

}  // namespace tune

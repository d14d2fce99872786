#pragma once
// Parity against the float64 reference, and timing with CUDA events (docs/design.md).
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tune/compile.hpp"
#include "tune/device.hpp"
#include "tune/problem.hpp"
#include "tune/record.hpp"
#include "tune/space.hpp"

namespace tune {

// When a measurement stops (the stop rule, docs/design.md).
struct StopRule {
  std::string profile;
  int min_samples = 10;
  int max_samples = 100000;
  double max_noise = 0.02;        // stop once stddev/mean is at most this
  double min_gpu_seconds = 0;     // or once this much GPU time was sampled (0: not a criterion)
  double wall_cap_seconds = 0.1;  // stop regardless after this much wall time
  static StopRule search();       // >= 10 samples, noise <= 2 %, 0.1 s cap
  static StopRule strict();       // >= 10 samples, >= 0.5 s GPU time or noise <= 0.5 %, 2 s cap
  static StopRule screen();       // --search halving's first round: >= 5 samples, noise <= 5 %, 0.02 s cap
};

// Incremental statistics of one variant's samples, and the rule's verdict.
class SampleSet {
 public:
  void add(double us) {
    samples_.push_back(us);
    sum_ += us;
  }
  [[nodiscard]] const std::vector<double>& samples() const { return samples_; }
  // Empty while the rule wants more samples, else why it stopped.
  [[nodiscard]] std::string stop_reason(const StopRule& rule, double wall_seconds) const;
  // Fills the sample statistics of a timing record (quantiles by linear interpolation).
  void summarize(TimingRecord& out) const;

 private:
  std::vector<double> samples_;
  double sum_ = 0;
};

// The seed of the parity inputs: fresh data, not the timing buffers.
inline std::uint64_t parity_seed_of(std::uint64_t seed) { return seed * 0x9E3779B97F4A7C15ull + 1; }

// XXH3-64 of the output's device bytes (its dtype's encoding), 16 hex digits (ParityRecord::output_hash).
std::string output_hash(std::span<const std::byte> out);

// The elementwise rule on doubles (a float output's values): sets tolerance_passed; exact when
// atol = rtol = 0; a NaN or Inf never passes. An output's values are compared through the
// OutputValues overload, which picks the rule of their dtype.
ParityRecord compare_output(const std::vector<double>& out, const std::vector<double>& ref, double atol, double rtol);
// The same rule for an int64 output in its own integers: as doubles, neighbouring integers past
// 2^53 read as one and an error of one there passes unseen. The difference is taken exactly;
// worst_value and worst_reference are the nearest doubles, worst_*_exact the integers.
ParityRecord compare_output_int64(std::span<const std::int64_t> out, std::span<const std::int64_t> ref, double atol,
                                  double rtol);
// The elementwise rule chosen from the dtype of `ref` (the output's): an int64 output in its
// integers (compare_output_int64), every other in its doubles; an integer or bool output's worst
// element is recorded exactly too. Throws std::logic_error when `out` is of another dtype (a bug).
ParityRecord compare_output(const OutputValues& out, const OutputValues& ref, double atol, double rtol);
// max |module - ref| (the module's own error in its dtype); nullopt when `module` is empty or of
// another size, or not finite.
[[nodiscard]] std::optional<double> module_error(const std::vector<double>& module, const std::vector<double>& ref);
// The judge: the elementwise rule at tol's atol/rtol (compare_output of the values, by their
// dtype) and, when the output is low precision and the module's error is known, the module rule
// (docs/design.md "Parity").
ParityRecord judge_output(const OutputValues& out, const OutputValues& ref, const Tolerance& tol,
                          std::optional<double> module_max_abs_error);
// One line: which rule failed and by how much ("3 of 4096 outputs outside atol=1e-05 rtol=0.016 (0 not
// finite); max abs error 0.02", and/or "max abs error 0.02 > 2 x module error 0.004 + 1e-05").
[[nodiscard]] std::string parity_failure(const ParityRecord& p);
// Whether the record passes every rule that applies: the elementwise one unless the rule is
// "module" and the module rule was applied; the module rule when it was applied and the rule is
// not "tolerance". Nothing compared, or a non-finite output, never passes.
[[nodiscard]] inline bool parity_passed(const ParityRecord& p) {
  if (p.elements <= 0 || p.non_finite > 0) return false;
  const bool elementwise_ok = p.mismatches == 0;
  const bool module_applies = p.module_passed.has_value() && p.rule != "tolerance";
  const bool elementwise_applies = !(module_applies && p.rule == "module");
  return (!elementwise_applies || elementwise_ok) && (!module_applies || *p.module_passed);
}

// One device, one problem shape: buffers for timing and for parity, a stream, events and an L2
// flush buffer. Runs variants one at a time.
class DeviceRunner {
 public:
  struct Options {
    StopRule rule = StopRule::search();
    int warmup_launches = 3;
    int batch_launches = 100;
    // false: the record's parity is already known to pass (a second timing pass); only time it.
    bool check_parity = true;
  };
  // Throws DeviceError when the shape does not fit in the device's free memory.
  DeviceRunner(const DeviceInfo& device, const Problem& problem, const Shape& shape, const ProblemData& timing_data,
               const ProblemData& parity_data, OutputValues parity_reference, std::uint64_t parity_seed,
               std::optional<double> parity_module_error = std::nullopt);
  DeviceRunner(const DeviceRunner&) = delete;
  DeviceRunner& operator=(const DeviceRunner&) = delete;
  ~DeviceRunner();

  // Loads, checks parity and (when correct) times one compiled variant; fills the record's
  // status, reason, load and first-launch times, parity and timing. Never throws for what a
  // variant does: a crash is recorded and the runner continues in a fresh context.
  void evaluate(const CompileResult& compiled, const Lowered& lowered, VariantRecord& record, const Options& options);
  // Re-times already-passed variants in rounds (each round, each variant: one untimed launch, then
  // a block of kStrictBlock cold samples) under the rule; replaces each record's timing and keeps
  // the first pass as search_timing.
  static constexpr int kStrictBlock = 8;
  void remeasure_in_rounds(const std::vector<const CompileResult*>& compiled, const std::vector<Lowered>& lowered,
                           const std::vector<VariantRecord*>& records, const Options& options);
  // The gate's checks (issue 20) on variants that passed: parity on each further input (`inputs`,
  // each with its float64 reference), and the output on the parity data over `rounds` rounds of one
  // launch of each variant in turn, the L2 flushed before each: bitwise identical to the first round
  // and to `known_hashes` (the search context's ParityRecord::output_hash; empty: unknown), or, when
  // the problem is not deterministic, within its tolerance. Fills inputs, launches, deterministic and
  // determinism of each GateRecord. Throws cuda::CudaError when a launch faults.
  // The name of the gate's further input that is the search's own data launched in the gate's fresh
  // context: held to the search's reference where a problem's outputs may differ between launches.
  static constexpr const char* kFreshContextInput = "the search's input in a fresh context";
  struct GateInput {
    std::string name;
    std::uint64_t seed = 0;
    const ProblemData* data = nullptr;
    const OutputValues* reference = nullptr;
    std::optional<double> module_error;  // the module's own error on this input (module_error())
  };
  void gate(const std::vector<const CompileResult*>& compiled, const std::vector<Lowered>& lowered,
            const std::vector<GateRecord*>& gates, const std::vector<std::string>& known_hashes,
            const std::vector<GateInput>& inputs, int rounds, bool deterministic);
  // One launch on the parity data, for a run under compute-sanitizer (no timing, no comparison):
  // returns the output's hash. Announces the phases with `item`.
  std::string launch_for_sanitizer(const CompileResult& compiled, const Lowered& lowered, int item);
  // Checks one compiled variant against arbitrary data and its reference (tune verify), judged by
  // judge_output at the shape's tolerance.
  ParityRecord check(const CompileResult& compiled, const Lowered& lowered, const ProblemData& data,
                     const OutputValues& reference, std::uint64_t seed,
                     std::optional<double> module_max_abs_error = std::nullopt);
  // An empty kernel timed by the same methods: the harness's floor on this device.
  HarnessFloor measure_floor();
  // Called as each phase begins ("load", "parity", "warm-up", "timing", "strict timing"), with
  // the position of the variant in remeasure_in_rounds's list (0 in evaluate; -1 when the
  // phase covers them all). The worker process announces phases through it.
  using PhaseListener = std::function<void(const std::string& phase, int item)>;
  void on_phase(PhaseListener listener);
  // Bytes the runner needs on the device for this shape.
  static std::size_t required_bytes(const Problem& problem, const Shape& shape, const DeviceInfo& device);
  // Empty when those bytes fit in free_bytes, else the one-line refusal that says what to do.
  static std::string memory_shortfall(const Problem& problem, const Shape& shape, const DeviceInfo& device,
                                      std::uint64_t free_bytes);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Why a card of `limits` would refuse to launch a compiled variant, from its geometry and the ptxas
// report alone (`resources`, by lowered name): a block past 1024 x 1024 x 64 or of more threads
// than `limits.max_threads_per_block`, more registers than a block has (64K, allocated per warp in
// 256s), static plus dynamic shared memory past `limits.max_smem_per_block`. Empty when it fits.
// The compile-only sweep and the fake worker judge so what the device's own check (the loaded
// function's attributes) finds on a card.
std::string launch_refusal(const Lowered& lowered, const std::vector<std::string>& lowered_names,
                           const std::map<std::string, Resources>& resources, const DeviceLimits& limits);
// The part of that a launch's block alone decides: block.z past 64 (a hardware limit no function
// attribute gives: cuLaunchKernel's INVALID_VALUE). Empty when it fits; the device checks it too.
std::string block_z_refusal(const KernelLaunch& launch);

}  // namespace tune

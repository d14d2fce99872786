// Compiled (g++ and nvcc) and run by header_merge_test.cpp against the header merged (with
// --allow-synthetic) from the fixtures in tests/fixtures/merge/devices: made-up results recorded as
// if measured on two sm_90 devices of different names (NVIDIA H100 80GB HBM3 at B4 N64 and B2 N512,
// NVIDIA H200 at B4 N64) and two synthetic (fake-GPU) results: Synthetic GPU A (sm_90) and
// Synthetic GPU B (sm_80), both at B4 N64. Table order (arch, device name, shape): [0] B sm_80,
// [1] H100 B2 N512, [2] H100 B4 N64, [3] H200 B4 N64, [4] A sm_90. Every check is a
// static_assert: select() is usable at compile time. Shape is {B, N, C, H, T}: T is contact's dtype
// variable (issue 35).
#include "contact_tuned.hpp"

namespace t = tune_tuned::contact;

constexpr t::Device kH200{"NVIDIA H200", 90, 132};
constexpr t::Device kH100{"NVIDIA H100 80GB HBM3", 90, 132};
constexpr t::Device kA100{"NVIDIA A100-SXM4-80GB", 80, 108};
constexpr t::Shape kB4N64{4, 64, 64, 32, t::DType::float32};

constexpr bool picks(const t::Device& d, t::Shape shape, int index, t::Match match) {
  return t::select(d, shape).index == index && t::select(d, shape).match == match && t::select(d, shape).geometry.ok;
}

static_assert(t::kEntryCount == 5, "five fixtures");
static_assert(t::kEntries[0].synthetic && t::kEntries[4].synthetic && !t::kEntries[3].synthetic, "synthetic marks");
// 1. exact: the device by name, not the first entry of its arch.
static_assert(picks(kH200, kB4N64, 3, t::Match::kExact), "H200 gets the H200 entry");
static_assert(picks(kH100, kB4N64, 2, t::Match::kExact), "H100 gets the H100 entry");
// Any device of the arch: a measured entry, never the synthetic one (the fake entry won before).
static_assert(picks({nullptr, 90, 0}, kB4N64, 2, t::Match::kExact), "arch only: measured");
static_assert(t::select(90, kB4N64).index == 2, "select(arch, shape) is the same");
// A synthetic entry stands for the device it names only.
static_assert(picks({"Synthetic GPU A (fixture)", 90, 132}, kB4N64, 4, t::Match::kExact), "synthetic, named");
// An SM count that differs is another device.
static_assert(picks({"NVIDIA H200", 90, 114}, kB4N64, 2, t::Match::kSameArch), "same name, other SM count");
// 2. the shape on another device of the arch.
static_assert(picks(kH200, {2, 512, 64, 32, t::DType::float32}, 1, t::Match::kSameArch), "H200 at B2 N512: the H100's");
// 3. nearest work, the device's own entries first.
static_assert(picks(kH200, {1, 100, 64, 32, t::DType::float32}, 3, t::Match::kNearestWork), "H200's own entry");
static_assert(picks(kH100, {4, 400, 64, 32, t::DType::float32}, 1, t::Match::kNearestWork), "H100: B2 N512 is nearer");
// 4. no measured entry of the arch: the shape on the nearest arch (not the synthetic sm_80 entry).
static_assert(picks(kA100, kB4N64, 2, t::Match::kNearestArch), "A100: the sm_90 entry");
// Every fixture predates contact's dtype variable T (no "T" in its shape): each is an entry of T's
// default, float32. select() never crosses dtypes: in bfloat16 no entry is taken at any step, only
// the portable configuration or the baseline, whose geometry is bfloat16's.
static_assert(t::kEntries[0].shape.T == t::DType::float32 && t::kEntries[3].shape.T == t::DType::float32, "T's default");
constexpr auto kBf16 = t::select(kH200, t::DType::bfloat16, kB4N64);
static_assert(kBf16.index == -1 && (kBf16.match == t::Match::kPortable || kBf16.match == t::Match::kDefault),
              "no float32 entry");
static_assert(kBf16.geometry.ok && kBf16.geometry.launches[0].template_args[0] == static_cast<long long>(t::DType::bfloat16),
              "bfloat16's geometry");
static_assert(t::select(90, t::DType::bfloat16, {2, 512, 64, 32, t::DType::float32}).index == -1, "nor at another shape");
static_assert(t::select(kA100, t::DType::bfloat16, kB4N64).index == -1, "nor on another arch");
static_assert(t::select(kH200, t::DType::float32, kB4N64).index == 3, "float32 said in the call: the H200 entry");
// 5, 6. a shape where no tuned winner is valid (tile 8 > N = 7): the portable configuration when it
// is valid there, else the baseline; either way with a launchable geometry.
constexpr auto kOdd = t::select(kA100, {3, 7, 64, 32, t::DType::float32});
static_assert(kOdd.index == -1 && kOdd.geometry.ok, "a fallback with geometry");
static_assert(kOdd.match == t::Match::kDefault && kOdd.params.block == t::kDefaultParams.block, "the baseline");
static_assert(kOdd.geometry.launch_count == 1 && kOdd.geometry.launches[0].grid[0] > 0, "its launch");
// The exact entry's computed geometry is the one tune recorded.
constexpr auto kExact = t::select(kH200, kB4N64);
static_assert(kExact.geometry.launches[0].grid[0] == t::kEntries[3].winner.launches[0].grid[0], "grid");
static_assert(kExact.geometry.launches[0].block[0] == t::kEntries[3].winner.launches[0].block[0], "block");
static_assert(kExact.geometry.launches[0].dynamic_smem_bytes == t::kEntries[3].winner.launches[0].dynamic_smem_bytes,
              "smem");
// 7. nothing valid: a shape no configuration supports.
static_assert(t::select(kH200, {0, 0, 0, 0, t::DType::float32}).match == t::Match::kNone &&
                  !t::select(kH200, {0, 0, 0, 0, t::DType::float32}).geometry.ok,
              "none");
// The tuned values as template arguments for a shape known at compile time.
template <int Block, int Strategy>
struct Instantiation {
  static constexpr int kBlock = Block, kStrategy = Strategy;
};
using Tuned = Instantiation<kExact.params.block, kExact.params.strategy>;
static_assert(Tuned::kBlock == t::kEntries[3].winner.params.block, "template arguments");
static_assert(t::kEntries[3].winner.launch_count == 1 && t::kEntries[3].winner.launches[0].block[0] == 256u, "launches");

int main() {
  // The same at run time, for dispatch on a device and shape known only then.
  volatile int arch = 86;
  const auto s = t::select(t::Device{"NVIDIA GeForce RTX 3090", arch, 82}, kB4N64);
  return s.index == 2 && s.match == t::Match::kNearestArch && s.geometry.ok ? 0 : 1;
}

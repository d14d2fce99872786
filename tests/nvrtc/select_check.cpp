// Compiled (g++ and nvcc) and run by header_test.cpp against the header merged from the synthetic
// results in tests/fixtures/merge/contact: Synthetic GPU A (sm_90) at B4 N64 and B2 N512, and
// Synthetic GPU B (sm_80) at B4 N64. Table order: [0] B sm_80 B4 N64, [1] A sm_90 B2 N512,
// [2] A sm_90 B4 N64. Every check is a static_assert: select() is usable at compile time.
#include "contact_tuned.hpp"

namespace t = tune_tuned::contact;

constexpr bool picks(int arch, t::Shape shape, int index, t::Match match) {
  return t::select(arch, shape).index == index && t::select(arch, shape).match == match;
}

static_assert(t::kEntryCount == 3, "three synthetic results");
static_assert(t::kEntries[0].arch == 80 && t::kEntries[1].arch == 90 && t::kEntries[2].arch == 90, "table order");
// 1. exact (arch, shape).
static_assert(picks(90, {4, 64, 64, 32}, 2, t::Match::kExact), "exact, sm_90");
static_assert(picks(80, {4, 64, 64, 32}, 0, t::Match::kExact), "exact, sm_80");
// 2. same arch, nearest work B*N*N: 10000 is nearer 16384 than 524288; 640000 nearer 524288.
static_assert(picks(90, {1, 100, 64, 32}, 2, t::Match::kNearestWork), "nearest work, small");
static_assert(picks(90, {4, 400, 64, 32}, 1, t::Match::kNearestWork), "nearest work, large");
static_assert(picks(80, {2, 512, 64, 32}, 0, t::Match::kNearestWork), "the only sm_80 entry");
// 3. no entry for the arch: nearest arch with that shape; a tie goes to the lower arch.
static_assert(picks(86, {4, 64, 64, 32}, 2, t::Match::kNearestArch), "sm_86: sm_90 is nearer than sm_80");
static_assert(picks(85, {4, 64, 64, 32}, 0, t::Match::kNearestArch), "sm_85: tie, the lower arch");
// 4. nothing fits: the config's baseline.
static_assert(picks(86, {3, 7, 64, 32}, -1, t::Match::kDefault), "default");
static_assert(t::select(86, {3, 7, 64, 32}).params.block == t::kDefaultParams.block, "default params");
// The tuned values as template arguments for a shape known at compile time.
template <int Block, int Strategy>
struct Instantiation {
  static constexpr int kBlock = Block, kStrategy = Strategy;
};
constexpr auto kPick = t::select(90, {4, 64, 64, 32});
using Tuned = Instantiation<kPick.params.block, kPick.params.strategy>;
static_assert(Tuned::kBlock == t::kEntries[2].winner.params.block, "template arguments");
static_assert(t::kEntries[2].winner.launch_count == 1 && t::kEntries[2].winner.launches[0].block[0] == 256u, "launches");

int main() {
  // The same at run time, for dispatch on a shape known only then.
  volatile int arch = 86;
  const auto s = t::select(arch, {4, 64, 64, 32});
  return s.index == 2 && s.match == t::Match::kNearestArch ? 0 : 1;
}

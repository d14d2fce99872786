// Built against the installed package (tests/consumer/CMakeLists.txt): contact_tuned.hpp is
// merged at build time from three synthetic results (GPU A, sm_90: B4 N64 and B2 N512; GPU B,
// sm_80: B4 N64), in table order [0] B sm_80 B4 N64, [1] A sm_90 B2 N512, [2] A sm_90 B4 N64.
#include "contact_tuned.hpp"

// tune::kernels: the templates the tuned instantiations are compiled from (by nvcc; bench/ does).
#if !__has_include("contact/contact.cuh")
#error "tune::kernels gives no kernel templates"
#endif

namespace t = tune_tuned::contact;

static_assert(t::kEntryCount == 3, "the three results merged into one header");
// The results are synthetic: select() takes each only for the device it names.
constexpr t::Device kA{"Synthetic GPU A (fixture)", 90, 0};
static_assert(t::select(kA, {4, 64, 64, 32}).index == 2 && t::select(kA, {4, 64, 64, 32}).match == t::Match::kExact,
              "exact (device, shape) at compile time");
// A tuned value as a template argument.
template <int Block>
struct Launch {
  static constexpr int kBlock = Block;
};
static_assert(Launch<t::select(kA, {4, 64, 64, 32}).params.block>::kBlock == t::kEntries[2].winner.params.block);

int second_unit_index(int arch);

int main() {
  // At run time, for a device known only then.
  volatile int arch = 80;
  const auto s = t::select(t::Device{"Synthetic GPU B (fixture)", arch, 0}, {4, 64, 64, 32});
  return s.index == 0 && s.match == t::Match::kExact && second_unit_index(arch) == 0 ? 0 : 1;
}

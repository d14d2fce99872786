// Whether a compiled variant's launches fit a card's limits, judged without one (launch_refusal,
// tune/measure.hpp).
#include <algorithm>

#include <fmt/format.h>

#include "tune/measure.hpp"

namespace tune {
namespace {

// Every CUDA card since sm_50: 64K registers a block, given to each warp in units of 256.
constexpr std::int64_t kRegistersPerBlock = 65536;
constexpr std::int64_t kRegisterUnit = 256;

// The most threads a block may have at `registers` a thread (whole warps), at most `most`.
std::int64_t threads_allowed(int registers, std::int64_t most) {
  const std::int64_t per_warp = (registers * 32 + kRegisterUnit - 1) / kRegisterUnit * kRegisterUnit;
  return std::min(most, kRegistersPerBlock / per_warp * 32);
}

}  // namespace

std::string block_z_refusal(const KernelLaunch& l) {
  const auto& b = l.block;
  return b[2] > 64 ? fmt::format("{} has a block of {}x{}x{} threads; block.z is at most 64", l.kernel, b[0], b[1], b[2])
                   : std::string();
}

std::string launch_refusal(const Lowered& lowered, const std::vector<std::string>& lowered_names,
                           const std::map<std::string, Resources>& resources, const DeviceLimits& limits) {
  for (std::size_t i = 0; i < lowered.launches.size(); ++i) {
    const KernelLaunch& l = lowered.launches[i];
    const auto& b = l.block;
    if (std::string z = block_z_refusal(l); !z.empty()) return z;
    const std::int64_t threads = std::int64_t{b[0]} * b[1] * b[2];
    if (threads > limits.max_threads_per_block)
      return fmt::format("{} has a block of {}x{}x{} = {} threads; the device allows {}", l.kernel, b[0], b[1], b[2],
                         threads, limits.max_threads_per_block);
    // The ptxas report may lack a kernel (the device reads its attributes then): its dynamic
    // shared memory is still known.
    const auto r = i < lowered_names.size() ? resources.find(lowered_names[i]) : resources.end();
    const bool reported = r != resources.end();
    if (const int regs = reported ? r->second.registers : 0; regs > 0) {
      if (const std::int64_t most = threads_allowed(regs, limits.max_threads_per_block); threads > most)
        return fmt::format("{} needs {} threads per block but its registers allow {} ({} registers a thread)", l.kernel,
                           threads, most, regs);
    }
    const std::int64_t smem = (reported ? std::int64_t{r->second.static_smem_bytes} : 0) + l.dynamic_smem;
    if (smem > limits.max_smem_per_block)
      return fmt::format("{} needs {} bytes of shared memory, the device allows {}", l.kernel, smem,
                         limits.max_smem_per_block);
  }
  return {};
}

}  // namespace tune

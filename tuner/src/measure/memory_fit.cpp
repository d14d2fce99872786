// Whether a shape's buffers fit the device (DeviceRunner::memory_shortfall and required_bytes,
// tune/measure.hpp): what a worker checks before it allocates, and what a run plans with.
#include <fmt/format.h>

#include "tune/measure.hpp"
#include "tune/problem.hpp"

namespace tune {

std::string DeviceRunner::memory_shortfall(const Problem& problem, const Shape& shape, const DeviceInfo& device,
                                           std::uint64_t free_bytes) {
  const std::size_t need = required_bytes(problem, shape, device);
  if (need <= free_bytes) return {};
  // The tensor that takes most, by name: "--B or --N" named contact's dimensions for every problem.
  TensorSpec largest = problem.output_spec(shape);
  for (const auto& specs : {problem.param_specs(shape), problem.input_specs(shape)})
    for (const auto& t : specs)
      if (t.bytes() > largest.bytes()) largest = t;
  constexpr double kGiB = 1073741824.0;
  return fmt::format(
      "shape {} needs about {:.2f} GiB on {} (its tensors for timing and for parity, the L2 flush and scratch room; "
      "the largest tensor, '{}', has {} elements, {:.2f} GiB) but it has {:.2f} GiB free; pass a smaller shape",
      shape.describe(), static_cast<double>(need) / kGiB, device.name, largest.name, largest.elements(),
      static_cast<double>(largest.bytes()) / kGiB, static_cast<double>(free_bytes) / kGiB);
}

std::size_t DeviceRunner::required_bytes(const Problem& problem, const Shape& shape, const DeviceInfo& device) {
  std::size_t set = problem.output_spec(shape).bytes();
  for (const auto& t : problem.param_specs(shape)) set += t.bytes();
  for (const auto& t : problem.input_specs(shape)) set += t.bytes();
  // Two buffer sets (timing, parity), the L2 flush buffer, and room for scratch buffers.
  return 2 * set + static_cast<std::size_t>(device.l2_bytes * 2) + set + (64u << 20);
}

}  // namespace tune

#pragma once
// The CUDA device a tune runs on, as the results describe it.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tune/space.hpp"

namespace tune {

struct DeviceInfo {
  int ordinal = 0;
  std::string name;  // "NVIDIA H200"
  std::string uuid;  // "GPU-xxxxxxxx-..."
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  int max_threads_per_block = 0;
  std::int64_t max_smem_per_block_optin = 0;
  std::int64_t l2_bytes = 0;
  std::int64_t memory_bytes = 0;
  int sm_clock_khz = 0;      // maximum SM clock
  int memory_clock_khz = 0;  // peak memory clock
  int memory_bus_bits = 0;
  std::string driver_version;  // CUDA version the driver supports, "13.0"

  [[nodiscard]] int compute_capability() const { return cc_major * 10 + cc_minor; }
  [[nodiscard]] DeviceLimits limits() const;
  // "h200" from "NVIDIA H200": the results folder of this GPU.
  [[nodiscard]] std::string slug() const;
};

// "h200" from "NVIDIA H200", "rtx-4090" from "NVIDIA GeForce RTX 4090".
std::string device_slug(const std::string& name);

// The CUDA devices the driver sees; 0, with the reason, when there is no usable driver.
int device_count(std::string* why);

// Nullopt, with the reason, when there is no usable CUDA device.
std::optional<DeviceInfo> query_device(int ordinal, std::string* why);

// SM clock and throttle reasons from NVML, when NVML is there.
struct ClockSample {
  bool available = false;
  int sm_mhz = 0;
  std::uint64_t reasons = 0;             // NVML clocks-event reason bits
  [[nodiscard]] bool throttled() const;  // power, thermal or hardware slowdown
  [[nodiscard]] std::vector<std::string> reason_names() const;
};
ClockSample sample_clocks(const std::string& uuid);
std::string nvml_driver_version();
// Free device memory (NVML, no context needed); the device's total memory without NVML.
std::uint64_t device_free_bytes(const DeviceInfo& device);

}  // namespace tune

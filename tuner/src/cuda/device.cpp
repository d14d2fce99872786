#include <dlfcn.h>

#include <cctype>
#include <map>
#include <mutex>
#include <string>

#include <fmt/format.h>

#include "cuda/driver.hpp"
#include "tune/device.hpp"

namespace tune {

DeviceLimits DeviceInfo::limits() const {
  DeviceLimits l;
  l.max_threads_per_block = max_threads_per_block;
  l.max_smem_per_block = max_smem_per_block_optin;
  l.sm_count = sm_count;
  l.compute_capability = compute_capability();
  return l;
}

std::string device_slug(const std::string& name) {
  std::string s;
  for (char c : name) s += static_cast<char>(std::isalnum(static_cast<unsigned char>(c)) ? std::tolower(c) : '-');
  for (const char* drop : {"nvidia-", "geforce-", "tesla-", "quadro-"}) {
    const auto pos = s.find(drop);
    if (pos == 0) s.erase(0, std::string(drop).size());
  }
  std::string out;
  for (char c : s)
    if (!(c == '-' && (out.empty() || out.back() == '-'))) out += c;
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "gpu" : out;
}

std::string DeviceInfo::slug() const { return device_slug(name); }

int device_count(std::string* why) {
  if (!cuda::driver_available(why)) return 0;
  try {
    int count = 0;
    TUNE_CU(cuDeviceGetCount(&count));
    if (count == 0 && why) *why = "the driver reports no CUDA device";
    return count;
  } catch (const std::exception& e) {
    if (why) *why = e.what();
    return 0;
  }
}

std::optional<DeviceInfo> query_device(int ordinal, std::string* why) {
  if (!cuda::driver_available(why)) return std::nullopt;
  try {
    int count = 0;
    TUNE_CU(cuDeviceGetCount(&count));
    if (ordinal < 0 || ordinal >= count) {
      if (why) *why = fmt::format("device {} does not exist (this machine has {})", ordinal, count);
      return std::nullopt;
    }
    CUdevice dev = 0;
    TUNE_CU(cuDeviceGet(&dev, ordinal));
    DeviceInfo d;
    d.ordinal = ordinal;
    char name[256] = {};
    TUNE_CU(cuDeviceGetName(name, sizeof(name), dev));
    d.name = name;
    CUuuid uuid{};
    TUNE_CU(cuDeviceGetUuid(&uuid, dev));
    const auto* u = reinterpret_cast<const unsigned char*>(uuid.bytes);
    d.uuid = fmt::format(
        "GPU-{:02x}{:02x}{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}{:02x}{:02x}{:02x}{:02x}", u[0],
        u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
    auto attr = [&](CUdevice_attribute a) {
      int v = 0;
      TUNE_CU(cuDeviceGetAttribute(&v, a, dev));
      return v;
    };
    d.cc_major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
    d.cc_minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    d.sm_count = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    d.max_threads_per_block = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    d.max_smem_per_block_optin = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
    d.l2_bytes = attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
    d.sm_clock_khz = attr(CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
    d.memory_clock_khz = attr(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
    d.memory_bus_bits = attr(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
    std::size_t total = 0;
    TUNE_CU(cuDeviceTotalMem(&total, dev));
    d.memory_bytes = static_cast<std::int64_t>(total);
    int version = 0;
    TUNE_CU(cuDriverGetVersion(&version));
    d.driver_version = fmt::format("{}.{}", version / 1000, (version % 1000) / 10);
    return d;
  } catch (const std::exception& e) {
    if (why) *why = e.what();
    return std::nullopt;
  }
}

// NVML, loaded at run time like the driver: only the few calls tune needs, with the C ABI of
// nvml.h (the toolkit on the build machines ships no NVML header).
namespace {

using NvmlDevice = struct nvmlDevice_st*;
using NvmlReturn = int;
constexpr int kNvmlClockSm = 1;

struct Nvml {
  NvmlReturn (*init)() = nullptr;
  NvmlReturn (*by_uuid)(const char*, NvmlDevice*) = nullptr;
  NvmlReturn (*clock)(NvmlDevice, int, unsigned*) = nullptr;
  NvmlReturn (*reasons)(NvmlDevice, unsigned long long*) = nullptr;
  NvmlReturn (*driver)(char*, unsigned) = nullptr;
  struct Memory {
    unsigned long long total, free, used;
  };
  NvmlReturn (*memory)(NvmlDevice, Memory*) = nullptr;
  bool ok = false;
};

const Nvml& nvml() {
  static const Nvml instance = [] {
    Nvml n;
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) return n;
    n.init = reinterpret_cast<decltype(n.init)>(dlsym(lib, "nvmlInit_v2"));
    n.by_uuid = reinterpret_cast<decltype(n.by_uuid)>(dlsym(lib, "nvmlDeviceGetHandleByUUID"));
    n.memory = reinterpret_cast<decltype(n.memory)>(dlsym(lib, "nvmlDeviceGetMemoryInfo"));
    n.clock = reinterpret_cast<decltype(n.clock)>(dlsym(lib, "nvmlDeviceGetClockInfo"));
    n.reasons = reinterpret_cast<decltype(n.reasons)>(dlsym(lib, "nvmlDeviceGetCurrentClocksEventReasons"));
    if (n.reasons == nullptr)
      n.reasons = reinterpret_cast<decltype(n.reasons)>(dlsym(lib, "nvmlDeviceGetCurrentClocksThrottleReasons"));
    n.driver = reinterpret_cast<decltype(n.driver)>(dlsym(lib, "nvmlSystemGetDriverVersion"));
    n.ok = n.init && n.by_uuid && n.clock && n.reasons && n.driver && n.init() == 0;
    return n;
  }();
  return instance;
}

// nvml.h clocks-event reason bits.
constexpr std::pair<std::uint64_t, const char*> kReasons[] = {{0x1, "gpu_idle"},
                                                              {0x2, "applications_clocks_setting"},
                                                              {0x4, "sw_power_cap"},
                                                              {0x8, "hw_slowdown"},
                                                              {0x10, "sync_boost"},
                                                              {0x20, "sw_thermal_slowdown"},
                                                              {0x40, "hw_thermal_slowdown"},
                                                              {0x80, "hw_power_brake_slowdown"},
                                                              {0x100, "display_clock_setting"}};
constexpr std::uint64_t kThrottleBits = 0x4 | 0x8 | 0x20 | 0x40 | 0x80;

// The NVML handle of a UUID, looked up once (the lookup walks the devices); null without NVML.
NvmlDevice nvml_handle(const std::string& uuid) {
  const Nvml& n = nvml();
  if (!n.ok) return nullptr;
  static std::mutex mutex;
  static std::map<std::string, NvmlDevice> handles;
  const std::lock_guard lock(mutex);
  if (auto it = handles.find(uuid); it != handles.end()) return it->second;
  NvmlDevice dev = nullptr;
  if (n.by_uuid(uuid.c_str(), &dev) != 0) return nullptr;
  return handles.emplace(uuid, dev).first->second;
}

}  // namespace

bool ClockSample::throttled() const { return available && (reasons & kThrottleBits) != 0; }

std::vector<std::string> ClockSample::reason_names() const {
  std::vector<std::string> out;
  for (const auto& [bit, name] : kReasons)
    if (reasons & bit) out.emplace_back(name);
  return out;
}

ClockSample sample_clocks(const std::string& uuid) {
  ClockSample s;
  const Nvml& n = nvml();
  const NvmlDevice dev = nvml_handle(uuid);
  if (dev == nullptr) return s;
  unsigned mhz = 0;
  unsigned long long reasons = 0;
  if (n.clock(dev, kNvmlClockSm, &mhz) != 0 || n.reasons(dev, &reasons) != 0) return s;
  s.available = true;
  s.sm_mhz = static_cast<int>(mhz);
  s.reasons = reasons;
  return s;
}

std::uint64_t device_free_bytes(const DeviceInfo& device) {
  const Nvml& n = nvml();
  const NvmlDevice dev = nvml_handle(device.uuid);
  Nvml::Memory m{};
  if (dev != nullptr && n.memory && n.memory(dev, &m) == 0) return m.free;
  return static_cast<std::uint64_t>(device.memory_bytes);
}

std::string nvml_driver_version() {
  const Nvml& n = nvml();
  char buf[96] = {};
  if (!n.ok || n.driver(buf, sizeof(buf)) != 0) return {};
  return buf;
}

}  // namespace tune

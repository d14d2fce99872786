// select() of a merged header: the entry, fallback or default configuration for a device and shape,
// as constexpr C++ over kEntries and geometry().
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "ship/header_parts.hpp"
#include "ship/header_text.hpp"

namespace tune::header_parts {
namespace {

using header_text::comment_safe;
using header_text::identifier;

constexpr const char* kSelectCode =
    R"(// The device select() chooses for: name as cudaDeviceProp::name (nullptr: any measured device of the
// arch), arch = major * 10 + minor, sm_count = multiProcessorCount (0: any), max_smem =
// sharedMemPerBlockOptin (0: the arch's, limits_for_arch).
struct Device {
  const char* name;
  int arch;
  int sm_count;
  long long max_smem = 0;
};

enum class Match : int { kExact, kSameArch, kNearestWork, kNearestArch, kPortable, kDefault, kNone };

struct Selection {
  int index;  // into kEntries; -1 for kPortable, kDefault and kNone
  Match match;
  Params params;
  Geometry geometry;  // at the requested shape
};

constexpr bool same_text(const char* a, const char* b) {
  if (a == nullptr || b == nullptr) return false;
  for (; *a != '\0' && *a == *b; ++a, ++b) {
  }
  return *a == *b;
}

// An entry of that device: its arch, its name (or any measured one for a nullptr name), its SMs.
constexpr bool same_device(const Entry& e, const Device& d) {
  return e.arch == d.arch && (d.name == nullptr ? !e.synthetic : same_text(e.device, d.name)) &&
         (d.sm_count == 0 || e.sm_count == d.sm_count);
}

// A synthetic entry stands only for the device it names.
constexpr bool usable(const Entry& e, const Device& d) { return !e.synthetic || same_text(e.device, d.name); }

constexpr double work_ratio(long long a, long long b) {
  return a > b ? static_cast<double>(a) / static_cast<double>(b > 0 ? b : 1)
               : static_cast<double>(b) / static_cast<double>(a > 0 ? a : 1);
}

constexpr int arch_distance(int a, int b) { return a > b ? a - b : b - a; }

constexpr Selection select(const Device& d, const Shape& shape, const Limits& limits) {
  // 1, 2: exactly this shape, on this device, then on another of its arch.
  for (int step = 0; step < 2; ++step)
    for (int i = 0; i < kEntryCount; ++i) {
      const Entry& e = kEntries[i];
      const bool device_ok = step == 0 ? same_device(e, d) : (usable(e, d) && e.arch == d.arch);
      if (!device_ok || !same_shape(e.shape, shape)) continue;
      const Geometry g = geometry(shape, e.winner.params, limits);
      if (g.ok) return {i, step == 0 ? Match::kExact : Match::kSameArch, e.winner.params, g};
    }
  // 3: nearest in work, this device's entries first, then its arch's.
  for (int step = 0; step < 2; ++step) {
    int best = -1;
    Geometry best_g{};
    for (int i = 0; i < kEntryCount; ++i) {
      const Entry& e = kEntries[i];
      const bool device_ok = step == 0 ? same_device(e, d) : (usable(e, d) && e.arch == d.arch);
      if (!device_ok) continue;
      const Geometry g = geometry(shape, e.winner.params, limits);
      if (!g.ok) continue;
      if (best >= 0) {
        const double r = work_ratio(work(e.shape), work(shape)), r_best = work_ratio(work(kEntries[best].shape), work(shape));
        if (r > r_best || (r == r_best && work(e.shape) >= work(kEntries[best].shape))) continue;
      }
      best = i;
      best_g = g;
    }
    if (best >= 0) return {best, Match::kNearestWork, kEntries[best].winner.params, best_g};
  }
  // 4: exactly this shape on the nearest arch.
  int best = -1;
  Geometry best_g{};
  for (int i = 0; i < kEntryCount; ++i) {
    const Entry& e = kEntries[i];
    if (!usable(e, d) || !same_shape(e.shape, shape)) continue;
    if (best >= 0 && arch_distance(e.arch, d.arch) >= arch_distance(kEntries[best].arch, d.arch)) continue;
    const Geometry g = geometry(shape, e.winner.params, limits);
    if (!g.ok) continue;
    best = i;
    best_g = g;
  }
  if (best >= 0) return {best, Match::kNearestArch, kEntries[best].winner.params, best_g};
  // 5, 6: the portable configuration, the baseline.
  if (kHasPortable) {
    const Geometry g = geometry(shape, kPortableParams, limits);
    if (g.ok) return {-1, Match::kPortable, kPortableParams, g};
  }
  const Geometry g = geometry(shape, kDefaultParams, limits);
  return {-1, g.ok ? Match::kDefault : Match::kNone, kDefaultParams, g};
}

// With the device's limits where given (its SM count and shared memory: as tune lowers for the device
// it runs on), else those of its arch (limits_for_arch).
constexpr Selection select(const Device& d, const Shape& shape) {
  Limits l = limits_for_arch(d.arch);
  if (d.sm_count > 0) l.sm_count = d.sm_count;
  if (d.max_smem > 0) l.max_smem = d.max_smem;
  return select(d, shape, l);
}

// Any measured device of the arch.
constexpr Selection select(int arch, const Shape& shape) { return select(Device{nullptr, arch, 0}, shape); }

)";

}  // namespace

// select(): kSelectCode; with dtype variables, step 3 takes only entries of the shape's dtypes, and
// with one, select(device, dtype, shape) says it in the call.
std::string select_code(const Shape& shape0) {
  std::string code = kSelectCode;
  if (shape0.dtypes().empty()) return code;
  const std::string step3 =
      "      if (!device_ok) continue;\n      const Geometry g = geometry(shape, e.winner.params, limits);\n"
      "      if (!g.ok) continue;\n      if (best >= 0) {";
  const auto at = code.find(step3);
  if (at == std::string::npos) throw std::logic_error("select_code: step 3 of kSelectCode not found");
  code.replace(at, std::string("      if (!device_ok) continue;").size(),
               "      if (!device_ok || !same_dtypes(e.shape, shape)) continue;");
  if (shape0.dtypes().size() == 1) {
    const std::string var = identifier(shape0.dtypes().front().first);
    code += fmt::format(
        "// select(device, dtype, shape): the shape with its dtype variable {0} = dtype, as in\n"
        "// select(Device{{\"NVIDIA H200\", 90, 132}}, DType::bfloat16, Shape{{...}}).\n"
        "constexpr Selection select(const Device& d, DType dtype, Shape shape) {{\n"
        "  shape.{1} = dtype;\n  return select(d, shape);\n}}\n\n"
        "constexpr Selection select(int arch, DType dtype, Shape shape) {{\n"
        "  shape.{1} = dtype;\n  return select(arch, shape);\n}}\n\n",
        comment_safe(shape0.dtypes().front().first), var);
  }
  return code;
}

}  // namespace tune::header_parts

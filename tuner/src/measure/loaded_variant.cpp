#include "measure/loaded_variant.hpp"

#include <atomic>
#include <cstring>

#include <fmt/format.h>

#include "tune/errors.hpp"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace tune {

std::string output_hash(std::span<const std::byte> out) {
  return fmt::format("{:016x}", XXH3_64bits(out.data(), out.size()));
}

}  // namespace tune

namespace tune::device_run {

Output Output::of(DType t, std::vector<std::byte> bytes) {
  Output o;
  o.values = OutputValues::of_bytes(t, bytes);
  o.bytes = std::move(bytes);
  return o;
}

BufferSet upload(const ProblemData& data, const TensorSpec& out) {
  static std::atomic<std::uint64_t> uploads{0};
  BufferSet s;
  s.id = ++uploads;
  for (const auto* list : {&data.params, &data.inputs}) {
    for (const auto& t : *list) {
      cuda::DeviceBuffer b(t.spec.bytes());
      const std::vector<std::byte> bytes = encode_all(t.spec.dtype, t.data);
      b.upload(bytes.data(), bytes.size());
      s.buffers.emplace(t.spec.name, std::move(b));
    }
  }
  s.buffers.emplace(out.name, cuda::DeviceBuffer(out.bytes()));
  s.out_elements = static_cast<std::size_t>(out.elements());
  return s;
}

BoundArgs& LoadedVariant::bind(const BufferSet& set) const {
  auto [it, fresh] = bound.try_emplace(set.id);
  BoundArgs& b = it->second;
  if (!fresh) return b;
  for (const KernelLaunch& l : launches) {
    auto& values = b.values.emplace_back();
    for (const auto& name : l.args) {
      if (auto s = set.buffers.find(name); s != set.buffers.end()) {
        values.push_back(s->second.get());
      } else if (auto t = scratch.find(name); t != scratch.end()) {
        values.push_back(t->second.get());
      } else {
        bound.erase(it);
        throw InputError(
            fmt::format("launch '{}' names buffer '{}', which is neither a parameter, an input, "
                        "'out' nor a scratch buffer of this configuration",
                        l.kernel, name));
      }
    }
  }
  // Only now, with every values vector complete, take pointers into them.
  for (auto& values : b.values) {
    auto& params = b.params.emplace_back();
    for (auto& value : values) params.push_back(&value);
  }
  return b;
}

}  // namespace tune::device_run

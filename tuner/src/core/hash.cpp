// tune/hash.hpp: content_hash.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "tune/hash.hpp"

#include <fmt/format.h>

namespace tune {

std::string content_hash(const std::vector<std::string>& texts) {
  std::string blob;
  for (const auto& t : texts) blob += std::to_string(t.size()) + ':' + t;
  return fmt::format("{:016x}", XXH3_64bits(blob.data(), blob.size()));
}

}  // namespace tune

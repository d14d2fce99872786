#pragma once
// A representative subset of a space: one configuration per combination of its categorical
// parameters (strings and booleans: strategy, mapping, caching mode, ...), the first in
// enumeration order. The NVRTC and device tiers compile this subset instead of the whole space.
#include <map>
#include <vector>

#include "tune/space.hpp"

namespace tune::test {

inline std::vector<Config> representatives(const Space& space, const std::vector<Config>& configs) {
  std::map<std::vector<std::size_t>, Config> firsts;
  for (const Config& c : configs) {
    std::vector<std::size_t> key;
    for (std::size_t p = 0; p < space.parameters().size(); ++p) {
      const auto& v = space.parameters()[p].values.front();
      if (v.is_string() || v.is_boolean()) key.push_back(c.choice[p]);
    }
    firsts.try_emplace(key, c);
  }
  std::vector<Config> out;
  for (auto& [k, c] : firsts) out.push_back(c);
  return out;
}

}  // namespace tune::test

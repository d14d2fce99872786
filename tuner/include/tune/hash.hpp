#pragma once
// The identity hashes that records and caches keep (the run's identity, a problem's reference, a
// space's sources): below every stage, so that any of them may stamp what it read.
#include <string>
#include <vector>

namespace tune {

// XXH3-64 of the texts, length-prefixed, as 16 hex digits: the identity's hash of the template
// source and the search space.
std::string content_hash(const std::vector<std::string>& texts);

}  // namespace tune

#pragma once
// Where the golden cases are: $TUNE_GOLDEN_DIR when set (a GPU machine gets a copy), else the
// shared/golden folder beside the checkout, fixed at configure time.
#include <cstdlib>
#include <string>

namespace tune::test {

inline std::string golden_dir() {
  const char* env = std::getenv("TUNE_GOLDEN_DIR");
  return env && *env ? env : TUNE_GOLDEN_DIR;
}

}  // namespace tune::test

#pragma once
// tune verify: the CPU reference, and on a GPU the tuned variants, against golden files.
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace tune {

struct VerifyOptions {
  std::vector<std::string> golden;
  std::filesystem::path results_dir = "results";
  bool all = false;  // every variant of the matching results file, not only baseline and winner
  int device = 0;
  // The correctness gate (tune/gate.hpp) on the variants whose golden parity passed: its sanitizer
  // runs ("off", "winner", "finalists": every variant checked).
  std::string sanitize = "finalists";
  std::function<void(const std::string&)> log;
};

// True when every check passed. Throws InputError for unreadable or malformed files.
bool run_verify(const VerifyOptions& options);

}  // namespace tune

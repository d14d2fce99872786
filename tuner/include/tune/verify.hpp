#pragma once
// tune verify: the CPU reference, and on a GPU the tuned variants, against golden files.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tune/sanitize_mode.hpp"
#include "tune/space.hpp"
#include "tune/tune.hpp"

namespace tune {

struct VerifyOptions {
  std::vector<std::string> golden;
  std::filesystem::path results_dir = "results";
  bool all = false;  // golden parity on every variant of the matching results file, not only baseline and winner
  // The gate (tune/gate.hpp: more inputs, determinism, sanitizers) on every variant whose parity
  // passed; without it only the baseline and the winner are gated (--all: seconds of parity for
  // every variant, minutes of gate for two).
  bool gate_all = false;
  int device = 0;
  // The correctness gate (tune/gate.hpp) on the variants whose golden parity passed: its sanitizer
  // runs (off, winner, or finalists: every variant checked).
  SanitizeMode sanitize = SanitizeMode::kFinalists;
  // The variants compile as a tune's do: on --jobs threads (0: one per hardware thread), through
  // the compile cache (--cache-dir, default CompileCache::default_dir(); --no-cache: none).
  int jobs = 0;
  std::optional<std::filesystem::path> cache_dir;
  bool no_cache = false;
  int arch = 90;  // the synthetic device's (TUNE_WORKER_FAKE)
  // --all without a results file enumerates the problem's space: refused past this many
  // configurations, or this many valid ones.
  std::uint64_t max_space = kDefaultMaxSpace;
  std::size_t max_variants = kDefaultMaxVariants;
  std::function<void(const std::string&)> log;
};

// True when every check passed. Throws InputError for unreadable or malformed files.
bool run_verify(const VerifyOptions& options);

}  // namespace tune

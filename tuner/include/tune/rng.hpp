#pragma once
// Seeded generator that gives the same numbers on every machine and standard library:
// std::mt19937_64 is fully specified, the distributions on top of it are ours (the
// standard's distributions are implementation-defined).
#include <cstdint>
#include <random>

namespace tune {

class Rng {
 public:
  explicit Rng(std::uint64_t seed) : engine_(seed) {}
  // Uniform in [0, 1) with 53 random bits.
  double uniform01() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform01(); }
  // Standard normal, Box-Muller.
  double normal();
  // Advance as n calls of uniform01() or of normal() would, drawing from the engine only (no
  // transcendental functions): where a parallel draw starts a chunk.
  void skip_uniforms(std::uint64_t n) { engine_.discard(n); }
  void skip_normals(std::uint64_t n);

 private:
  std::mt19937_64 engine_;
  bool has_spare_ = false;
  double spare_ = 0.0;
};

}  // namespace tune

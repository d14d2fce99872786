#pragma once
// Seeded initialisation shared by the problems (docs/problem-format.md, "tensors"),
// and the C++ fast paths of the built-in problems' references.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tune/rng.hpp"
#include "tune/shape.hpp"
#include "tune/tensor.hpp"

namespace tune::init {

// Each draws a float32 value as always (the same data for every dtype's generator position) and
// rounds it to the tensor's dtype. Standard normal entries.
HostTensor normal(const TensorSpec& spec, Rng& rng);
// nn.Linear: uniform in (-1/sqrt(fan_in), 1/sqrt(fan_in)).
HostTensor linear(const TensorSpec& spec, std::int64_t fan_in, Rng& rng);
// LayerNorm affine: gamma = 1 + 0.2 N(0,1), beta = 0.2 N(0,1).
HostTensor layernorm_weight(const TensorSpec& spec, Rng& rng);
HostTensor layernorm_bias(const TensorSpec& spec, Rng& rng);

// One tensor's draw with everything the shape decides resolved, so that it runs without the
// problem's expressions (and their lock). a, b: normal's mean and std, uniform's low and high
// (linear: -bound, bound), constant's value, integers' low and high, bernoulli's p, index's high.
struct Draw {
  enum class Kind { kNormal, kUniform, kConstant, kIndex, kIntegers, kBernoulli };
  Kind kind = Kind::kConstant;
  DType dtype = DType::kFloat32;
  double a = 0, b = 0;
};
// LayerNorm's weight and bias as PyTorch-style tests draw them: normal(1, 0.2) and normal(0, 0.2)
// (a + b * normal(), the same arithmetic as the kNormal draw: 0.0 + x is x).
inline Draw layernorm_weight_draw(DType t) { return {Draw::Kind::kNormal, t, 1.0, 0.2}; }
inline Draw layernorm_bias_draw(DType t) { return {Draw::Kind::kNormal, t, 0.0, 0.2}; }
// The next out.size() values of `rng`, in order.
void fill(const Draw& d, Rng& rng, std::span<double> out);
// Advances `rng` as fill() of n values would, without computing them (the engine's draws only).
void skip(const Draw& d, Rng& rng, std::int64_t n);
// The tensors in order from one generator seeded `seed`, bit for bit as fill() one after another:
// cut into chunks of `chunk` values, each started from the generator's state there, on all cores.
void fill_all(std::uint64_t seed, const std::vector<Draw>& draws, const std::vector<std::span<double>>& out,
              std::int64_t chunk = std::int64_t{1} << 18);

// Float64 LayerNorm of one row (eps 1e-5, biased variance), as torch.nn.LayerNorm.
void layernorm_row(const double* x, const double* gamma, const double* beta, std::int64_t n, double* out);

}  // namespace tune::init

namespace tune {

// A C++ reference: the float64 output of a problem from its data, as its reference.py.
using BuiltinReference = std::vector<double> (*)(const Shape& shape, const ProblemData& data);
// nullptr for an unknown name.
BuiltinReference builtin_reference(const std::string& name);
std::vector<std::string> builtin_reference_names();

// Each built-in reference file defines one of these.
std::vector<double> contact_reference(const Shape& shape, const ProblemData& data);
std::vector<double> scene_graph_reference(const Shape& shape, const ProblemData& data);

}  // namespace tune

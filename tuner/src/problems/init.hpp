#pragma once
// Seeded initialisation shared by the problems (docs/problem-format.md, "tensors"),
// and the C++ fast paths of the built-in problems' references.
#include <cstdint>
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

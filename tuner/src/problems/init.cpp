#include "problems/init.hpp"

#include <cmath>

namespace tune::init {

HostTensor normal(const TensorSpec& spec, Rng& rng) {
  HostTensor t{spec, std::vector<double>(static_cast<std::size_t>(spec.elements()))};
  for (double& v : t.data) v = round_to(spec.dtype, static_cast<float>(rng.normal()));
  return t;
}

HostTensor linear(const TensorSpec& spec, std::int64_t fan_in, Rng& rng) {
  const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
  HostTensor t{spec, std::vector<double>(static_cast<std::size_t>(spec.elements()))};
  for (double& v : t.data) v = round_to(spec.dtype, static_cast<float>(rng.uniform(-bound, bound)));
  return t;
}

HostTensor layernorm_weight(const TensorSpec& spec, Rng& rng) {
  HostTensor t{spec, std::vector<double>(static_cast<std::size_t>(spec.elements()))};
  for (double& v : t.data) v = round_to(spec.dtype, static_cast<float>(1.0 + 0.2 * rng.normal()));
  return t;
}

HostTensor layernorm_bias(const TensorSpec& spec, Rng& rng) {
  HostTensor t{spec, std::vector<double>(static_cast<std::size_t>(spec.elements()))};
  for (double& v : t.data) v = round_to(spec.dtype, static_cast<float>(0.2 * rng.normal()));
  return t;
}

void layernorm_row(const double* x, const double* gamma, const double* beta, std::int64_t n, double* out) {
  double mean = 0;
  for (std::int64_t c = 0; c < n; ++c) mean += x[c];
  mean /= static_cast<double>(n);
  double var = 0;
  for (std::int64_t c = 0; c < n; ++c) var += (x[c] - mean) * (x[c] - mean);
  var /= static_cast<double>(n);
  const double inv = 1.0 / std::sqrt(var + 1e-5);
  for (std::int64_t c = 0; c < n; ++c) out[c] = (x[c] - mean) * inv * gamma[c] + beta[c];
}

}  // namespace tune::init

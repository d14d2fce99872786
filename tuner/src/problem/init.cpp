#include "problem/init.hpp"

#include <atomic>
#include <cmath>
#include <optional>
#include <thread>

#include "problem/parallel.hpp"

namespace tune::init {

// Each kind's expression is the one the serial draw always used: the data never change.
void fill(const Draw& d, Rng& rng, std::span<double> out) {
  const DType t = d.dtype;
  switch (d.kind) {
    case Draw::Kind::kNormal:
      for (double& v : out) v = round_to(t, static_cast<float>(d.a + d.b * rng.normal()));
      break;
    case Draw::Kind::kUniform:
      for (double& v : out) v = round_to(t, static_cast<float>(rng.uniform(d.a, d.b)));
      break;
    case Draw::Kind::kConstant:  // a float constant as float32 first; an integer one exactly
      for (double& v : out) v = round_to(t, is_floating(t) ? static_cast<float>(d.a) : d.a);
      break;
    case Draw::Kind::kIndex:
      for (double& v : out) v = std::floor(rng.uniform01() * d.a);
      break;
    case Draw::Kind::kIntegers:
      for (double& v : out) v = d.a + std::floor(rng.uniform01() * (d.b - d.a));
      break;
    case Draw::Kind::kBernoulli:
      for (double& v : out) v = rng.uniform01() < d.a ? 1.0 : 0.0;
      break;
  }
}

void skip(const Draw& d, Rng& rng, std::int64_t n) {
  const auto count = static_cast<std::uint64_t>(std::max<std::int64_t>(n, 0));
  switch (d.kind) {
    case Draw::Kind::kNormal:
      return rng.skip_normals(count);
    case Draw::Kind::kConstant:
      return;
    default:  // one uniform01() a value
      return rng.skip_uniforms(count);
  }
}

void fill_all(std::uint64_t seed, const std::vector<Draw>& draws, const std::vector<std::span<double>>& out,
              std::int64_t chunk) {
  struct Piece {
    std::size_t tensor;
    std::size_t begin, size;
  };
  std::vector<Piece> pieces;
  const auto step = static_cast<std::size_t>(std::max<std::int64_t>(chunk, 1));
  for (std::size_t t = 0; t < out.size(); ++t)
    for (std::size_t b = 0; b < out[t].size(); b += step) pieces.push_back({t, b, std::min(step, out[t].size() - b)});
  Rng rng(seed);
  if (pieces.size() <= 1) {
    for (std::size_t t = 0; t < out.size(); ++t) fill(draws[t], rng, out[t]);
    return;
  }
  // One thread walks the generator from chunk to chunk (engine draws only) and publishes where each
  // starts; the others fill the chunks as their starts appear.
  std::vector<std::optional<Rng>> starts(pieces.size());
  std::atomic<std::size_t> ready{0};
  std::jthread walker([&] {
    for (std::size_t i = 0; i < pieces.size(); ++i) {
      starts[i] = rng;
      ready.store(i + 1, std::memory_order_release);
      ready.notify_all();
      skip(draws[pieces[i].tensor], rng, static_cast<std::int64_t>(pieces[i].size));
    }
  });
  parallel_for(static_cast<std::int64_t>(pieces.size()), [&](std::int64_t i) {
    const auto k = static_cast<std::size_t>(i);
    for (std::size_t r = ready.load(std::memory_order_acquire); r <= k; r = ready.load(std::memory_order_acquire))
      ready.wait(r, std::memory_order_acquire);
    Rng local = *starts[k];
    fill(draws[pieces[k].tensor], local, out[pieces[k].tensor].subspan(pieces[k].begin, pieces[k].size));
  });
}

namespace {

HostTensor drawn(const TensorSpec& spec, const Draw& d, Rng& rng) {
  HostTensor t{spec, std::vector<double>(static_cast<std::size_t>(spec.elements()))};
  fill(d, rng, t.data);
  return t;
}

}  // namespace

HostTensor normal(const TensorSpec& spec, Rng& rng) { return drawn(spec, {Draw::Kind::kNormal, spec.dtype, 0.0, 1.0}, rng); }

HostTensor linear(const TensorSpec& spec, std::int64_t fan_in, Rng& rng) {
  const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
  return drawn(spec, {Draw::Kind::kUniform, spec.dtype, -bound, bound}, rng);
}

HostTensor layernorm_weight(const TensorSpec& spec, Rng& rng) { return drawn(spec, layernorm_weight_draw(spec.dtype), rng); }

HostTensor layernorm_bias(const TensorSpec& spec, Rng& rng) { return drawn(spec, layernorm_bias_draw(spec.dtype), rng); }

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

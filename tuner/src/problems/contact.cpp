// Problem `contact`: the contact-map head (PROBLEMS.md, models.py ContactMapHead).
#include <cmath>
#include <fmt/format.h>

#include "problems/init.hpp"
#include "problems/parallel.hpp"
#include "tune/errors.hpp"
#include "tune/problem.hpp"

namespace tune {
namespace {

class Contact final : public Problem {
 public:
  std::string_view name() const override { return "contact"; }
  std::vector<std::string> dims() const override { return {"B", "N", "C", "H"}; }

  std::vector<TensorSpec> param_specs(const Shape& s) const override {
    const auto C = s.at("C"), H = s.at("H");
    return {{"layer_norm.weight", {C}}, {"layer_norm.bias", {C}}, {"mlp.0.weight", {H, C}}, {"mlp.0.bias", {H}},
            {"mlp.2.weight", {H, H}},   {"mlp.2.bias", {H}},      {"mlp.4.weight", {1, H}}, {"mlp.4.bias", {1}}};
  }
  std::vector<TensorSpec> input_specs(const Shape& s) const override {
    return {{"pair_repr", {s.at("B"), s.at("N"), s.at("N"), s.at("C")}}};
  }
  TensorSpec output_spec(const Shape& s) const override { return {"out", {s.at("B"), s.at("N"), s.at("N")}}; }

  // Draw order: parameters in param_specs order, then pair_repr. Parity data is drawn the same
  // way (from its own seed): the contact head has no masked or degenerate cases to add.
  ProblemData make_data(const Shape& s, std::uint64_t seed, DataPurpose) const override {
    Rng rng(seed);
    const auto p = param_specs(s);
    const auto C = s.at("C"), H = s.at("H");
    ProblemData d;
    d.params = {init::layernorm_weight(p[0], rng), init::layernorm_bias(p[1], rng), init::linear(p[2], C, rng),
                init::linear(p[3], C, rng),        init::linear(p[4], H, rng),      init::linear(p[5], H, rng),
                init::linear(p[6], H, rng),        init::linear(p[7], H, rng)};
    d.inputs = {init::normal(input_specs(s)[0], rng)};
    return d;
  }

  std::vector<double> reference(const Shape& s, const ProblemData& d) const override {
    const auto B = s.at("B"), N = s.at("N"), C = s.at("C"), H = s.at("H");
    const float* x = d.get("pair_repr").data.data();
    const float* g = d.get("layer_norm.weight").data.data();
    const float* be = d.get("layer_norm.bias").data.data();
    const float* w0 = d.get("mlp.0.weight").data.data();
    const float* b0 = d.get("mlp.0.bias").data.data();
    const float* w2 = d.get("mlp.2.weight").data.data();
    const float* b2 = d.get("mlp.2.bias").data.data();
    const float* w4 = d.get("mlp.4.weight").data.data();
    const float* b4 = d.get("mlp.4.bias").data.data();
    std::vector<double> out(static_cast<std::size_t>(B * N * N));
    // s_ij = s_ji, so each unordered pair is computed once and written to both places.
    parallel_for(B * N, [&](std::int64_t bi) {
      const auto b = bi / N, i = bi % N;
      std::vector<double> xa(C), xb(C), sym(C), h1(H), h2(H);
      for (std::int64_t j = i; j < N; ++j) {
        init::layernorm_row(x + ((b * N + i) * N + j) * C, g, be, C, xa.data());
        init::layernorm_row(x + ((b * N + j) * N + i) * C, g, be, C, xb.data());
        for (std::int64_t c = 0; c < C; ++c) sym[c] = (xa[c] + xb[c]) / 2.0;
        for (std::int64_t h = 0; h < H; ++h) {
          double acc = b0[h];
          for (std::int64_t c = 0; c < C; ++c) acc += static_cast<double>(w0[h * C + c]) * sym[c];
          h1[h] = acc > 0 ? acc : 0;
        }
        for (std::int64_t h = 0; h < H; ++h) {
          double acc = b2[h];
          for (std::int64_t k = 0; k < H; ++k) acc += static_cast<double>(w2[h * H + k]) * h1[k];
          h2[h] = acc > 0 ? acc : 0;
        }
        double logit = b4[0];
        for (std::int64_t h = 0; h < H; ++h) logit += static_cast<double>(w4[h]) * h2[h];
        const double y = 1.0 / (1.0 + std::exp(-logit));
        out[(b * N + i) * N + j] = y;
        out[(b * N + j) * N + i] = y;
      }
    });
    return out;
  }

  WorkCounts counts(const Shape& s) const override {
    const double B = s.at("B"), N = s.at("N"), C = s.at("C"), H = s.at("H");
    const double pairs = B * N * N;
    const double params = 2 * C + H * C + H + H * H + H + H + 1;
    return {2 * pairs * (C * H + H * H + H), 4 * (pairs * C + pairs + params)};
  }
};

}  // namespace

const Problem& contact_problem() {
  static const Contact instance;
  return instance;
}

}  // namespace tune

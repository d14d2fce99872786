// The contact-map head's float64 reference (configs/contact/reference.py), the C++
// fast path of the built-in problem `contact`.
#include <cmath>

#include "problem/init.hpp"
#include "problem/parallel.hpp"

namespace tune {

std::vector<double> contact_reference(const Shape& s, const ProblemData& d) {
  const auto B = s.at("B"), N = s.at("N"), C = s.at("C"), H = s.at("H");
  const double* x = d.get("pair_repr").data.data();
  const double* g = d.get("layer_norm.weight").data.data();
  const double* be = d.get("layer_norm.bias").data.data();
  const double* w0 = d.get("mlp.0.weight").data.data();
  const double* b0 = d.get("mlp.0.bias").data.data();
  const double* w2 = d.get("mlp.2.weight").data.data();
  const double* b2 = d.get("mlp.2.bias").data.data();
  const double* w4 = d.get("mlp.4.weight").data.data();
  const double* b4 = d.get("mlp.4.bias").data.data();
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

}  // namespace tune

// The float64 reference of `scene_graph`: pre-LN multi-head attention over graph nodes with a
// pair-feature MLP bias and an edge mask (configs/scene_graph/reference.py), the C++ fast path.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "problem/init.hpp"
#include "tune/errors.hpp"
#include "tune/rng.hpp"

namespace tune {
namespace {

struct Dims {
  std::int64_t B, N, D, heads, P;
};

Dims dims_of(const Shape& shape) { return {shape.at("B"), shape.at("N"), shape.at("D"), shape.at("heads"), shape.at("P")}; }

std::size_t size(std::int64_t n) { return static_cast<std::size_t>(n); }

// The tensor `name` of `data`, after checking that it holds as many elements as `shape` says:
// a ProblemData made for another shape must not be read out of bounds.
const std::vector<double>& tensor(const ProblemData& data, const std::string& name, std::int64_t elements) {
  const HostTensor& t = data.get(name);
  if (t.data.size() != size(elements)) {
    throw InputError("scene_graph: tensor '" + name + "' has " + std::to_string(t.data.size()) +
                     " elements, the shape needs " + std::to_string(elements) +
                     "; make the data for the same shape as the reference");
  }
  return t.data;
}

using Vec = std::vector<double>;

// bias[hh][i][j] = (W2 silu(W0 pair[b,i,j,:] + b0) + b2)[hh] for the batch b (hidden: P scratch).
void relation_bias(const Dims& d, std::int64_t b, const Vec& pair, const Vec& w0, const Vec& b0, const Vec& w2,
                   const Vec& b2, Vec& hidden, Vec& bias) {
  const std::int64_t N = d.N, P = d.P, H = d.heads;
  for (std::int64_t i = 0; i < N; ++i) {
    for (std::int64_t j = 0; j < N; ++j) {
      const double* x = &pair[size(((b * N + i) * N + j) * P)];
      for (std::int64_t o = 0; o < P; ++o) {
        double a = b0[size(o)];
        for (std::int64_t c = 0; c < P; ++c) a += static_cast<double>(w0[size(o * P + c)]) * x[c];
        hidden[size(o)] = a / (1.0 + std::exp(-a));
      }
      for (std::int64_t hh = 0; hh < H; ++hh) {
        double a = b2[size(hh)];
        for (std::int64_t c = 0; c < P; ++c) a += w2[size(hh * P + c)] * hidden[size(c)];
        bias[size((hh * N + i) * N + j)] = a;
      }
    }
  }
}

// ctx = per head, softmax(q k^T * scale + bias, edge mask) v for the batch b (p: N scratch).
void masked_attention(const Dims& d, std::int64_t b, const Vec& q, const Vec& k, const Vec& v, const Vec& bias,
                      const Vec& mask, Vec& p, Vec& ctx) {
  const std::int64_t N = d.N, D = d.D, H = d.heads, hd = D / H;
  const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
  for (std::int64_t hh = 0; hh < H; ++hh) {
    const std::int64_t f0 = hh * hd;  // this head's features [f0, f0 + hd)
    for (std::int64_t i = 0; i < N; ++i) {
      double mx = -std::numeric_limits<double>::infinity();
      for (std::int64_t j = 0; j < N; ++j) {
        if (mask[size((b * N + i) * N + j)] < 0.5f) {
          p[size(j)] = -std::numeric_limits<double>::infinity();
          continue;
        }
        double s = 0;
        for (std::int64_t t = 0; t < hd; ++t) s += q[size(i * D + f0 + t)] * k[size(j * D + f0 + t)];
        p[size(j)] = s * scale + bias[size((hh * N + i) * N + j)];
        mx = std::max(mx, p[size(j)]);
      }
      // A fully masked row gives attention 0 (torch: softmax NaN -> nan_to_num -> 0).
      double sum = 0;
      for (std::int64_t j = 0; j < N; ++j) {
        p[size(j)] = std::isinf(mx) ? 0.0 : std::exp(p[size(j)] - mx);
        sum += p[size(j)];
      }
      for (std::int64_t t = 0; t < hd; ++t) {
        double acc = 0;
        if (sum > 0) {
          for (std::int64_t j = 0; j < N; ++j) acc += p[size(j)] / sum * v[size(j * D + f0 + t)];
        }
        ctx[size(i * D + f0 + t)] = acc;
      }
    }
  }
}

}  // namespace

// Float64, step by step as SceneGraphRelation.forward.
std::vector<double> scene_graph_reference(const Shape& shape, const ProblemData& data) {
  const Dims d = dims_of(shape);
  if (d.heads <= 0 || d.D % d.heads != 0)
    throw ShapeError(fmt::format("scene_graph: D={} is not a multiple of heads={}", d.D, d.heads));
  const std::int64_t B = d.B, N = d.N, D = d.D, H = d.heads, P = d.P;
  const auto& gamma = tensor(data, "norm.weight", D);
  const auto& beta = tensor(data, "norm.bias", D);
  const auto& wq = tensor(data, "q_proj.weight", D * D);
  const auto& wk = tensor(data, "k_proj.weight", D * D);
  const auto& wv = tensor(data, "v_proj.weight", D * D);
  const auto& w0 = tensor(data, "rel_mlp.0.weight", P * P);
  const auto& b0 = tensor(data, "rel_mlp.0.bias", P);
  const auto& w2 = tensor(data, "rel_mlp.2.weight", H * P);
  const auto& b2 = tensor(data, "rel_mlp.2.bias", H);
  const auto& wo = tensor(data, "out_proj.weight", D * D);
  const auto& nodes = tensor(data, "nodes", B * N * D);
  const auto& pair = tensor(data, "pair_feats", B * N * N * P);
  const auto& mask = tensor(data, "edge_mask", B * N * N);

  std::vector<double> out(size(B * N * D));
  std::vector<double> h(size(N * D)), q(size(N * D)), k(size(N * D)), v(size(N * D));
  std::vector<double> ctx(size(N * D)), bias(size(H * N * N)), hidden(size(P)), p(size(N));

  // y[n][o] = sum_c x[n][c] * w[o][c] for the N rows of one batch (nn.Linear, no bias).
  const auto linear = [&](const std::vector<double>& x, const std::vector<double>& w, std::vector<double>& y) {
    for (std::int64_t n = 0; n < N; ++n) {
      for (std::int64_t o = 0; o < D; ++o) {
        double acc = 0;
        for (std::int64_t c = 0; c < D; ++c) acc += x[size(n * D + c)] * w[size(o * D + c)];
        y[size(n * D + o)] = acc;
      }
    }
  };

  for (std::int64_t b = 0; b < B; ++b) {
    for (std::int64_t n = 0; n < N; ++n) {
      init::layernorm_row(&nodes[size((b * N + n) * D)], gamma.data(), beta.data(), D, &h[size(n * D)]);
    }
    linear(h, wq, q);
    linear(h, wk, k);
    linear(h, wv, v);

    relation_bias(d, b, pair, w0, b0, w2, b2, hidden, bias);
    masked_attention(d, b, q, k, v, bias, mask, p, ctx);

    for (std::int64_t n = 0; n < N; ++n) {
      for (std::int64_t o = 0; o < D; ++o) {
        double acc = 0;
        for (std::int64_t c = 0; c < D; ++c) acc += ctx[size(n * D + c)] * wo[size(o * D + c)];
        out[size((b * N + n) * D + o)] = nodes[size((b * N + n) * D + o)] + acc;
      }
    }
  }
  return out;
}

}  // namespace tune

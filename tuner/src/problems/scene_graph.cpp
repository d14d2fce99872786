// Problem `scene_graph`: pre-LN multi-head attention over graph nodes with a pair-feature
// MLP bias and an edge mask (PROBLEMS.md; shared/spec/models.py SceneGraphRelation).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "problems/init.hpp"
#include "tune/errors.hpp"
#include "tune/problem.hpp"
#include "tune/rng.hpp"

namespace tune {
namespace {

struct Dims {
  std::int64_t B, N, D, heads, P;
};

Dims dims_of(const Shape& shape) {
  return {shape.at("B"), shape.at("N"), shape.at("D"), shape.at("heads"), shape.at("P")};
}

std::size_t size(std::int64_t n) { return static_cast<std::size_t>(n); }

// The tensor `name` of `data`, after checking that it holds as many elements as `shape` says:
// a ProblemData made for another shape must not be read out of bounds.
const std::vector<float>& tensor(const ProblemData& data, const std::string& name, std::int64_t elements) {
  const HostTensor& t = data.get(name);
  if (t.data.size() != size(elements)) {
    throw InputError("scene_graph: tensor '" + name + "' has " + std::to_string(t.data.size()) +
                     " elements, the shape needs " + std::to_string(elements) +
                     "; make the data for the same shape as the reference");
  }
  return t.data;
}

class SceneGraphProblem final : public Problem {
 public:
  [[nodiscard]] std::string_view name() const override { return "scene_graph"; }

  [[nodiscard]] std::vector<std::string> dims() const override { return {"B", "N", "D", "heads", "P"}; }

  void check_shape(const Shape& shape) const override {
    Problem::check_shape(shape);
    const Dims d = dims_of(shape);
    if (d.D % d.heads != 0) {
      const std::int64_t up = (d.D / d.heads + 1) * d.heads;
      throw ShapeError("scene_graph: D=" + std::to_string(d.D) + " is not a multiple of heads=" +
                       std::to_string(d.heads) + "; pass --D " + std::to_string(up) +
                       " or a --heads that divides D");
    }
  }

  [[nodiscard]] std::vector<TensorSpec> param_specs(const Shape& shape) const override {
    const Dims d = dims_of(shape);
    return {
        {"norm.weight", {d.D}},
        {"norm.bias", {d.D}},
        {"q_proj.weight", {d.D, d.D}},
        {"k_proj.weight", {d.D, d.D}},
        {"v_proj.weight", {d.D, d.D}},
        {"rel_mlp.0.weight", {d.P, d.P}},
        {"rel_mlp.0.bias", {d.P}},
        {"rel_mlp.2.weight", {d.heads, d.P}},
        {"rel_mlp.2.bias", {d.heads}},
        {"out_proj.weight", {d.D, d.D}},
    };
  }

  [[nodiscard]] std::vector<TensorSpec> input_specs(const Shape& shape) const override {
    const Dims d = dims_of(shape);
    return {
        {"nodes", {d.B, d.N, d.D}},
        {"pair_feats", {d.B, d.N, d.N, d.P}},
        {"edge_mask", {d.B, d.N, d.N}},
    };
  }

  [[nodiscard]] TensorSpec output_spec(const Shape& shape) const override {
    const Dims d = dims_of(shape);
    return {"out", {d.B, d.N, d.D}};
  }

  // Order of draws from one Rng(seed), so the same seed gives the same data everywhere:
  //   1. parameters in param_specs order, each row-major: norm.weight, norm.bias (LayerNorm
  //      init), q_proj, k_proj, v_proj (linear, fan_in D), rel_mlp.0.weight, rel_mlp.0.bias,
  //      rel_mlp.2.weight, rel_mlp.2.bias (linear, fan_in P), out_proj (linear, fan_in D);
  //   2. inputs: nodes, pair_feats (standard normal), then edge_mask: one uniform01() per
  //      element, diagonal included, 1.0 when < 0.7; the diagonal is then set to 1.0.
  // The parity edits below draw nothing, so timing and parity data agree everywhere else.
  [[nodiscard]] ProblemData make_data(const Shape& shape, std::uint64_t seed, DataPurpose purpose) const override {
    check_shape(shape);
    const Dims d = dims_of(shape);
    const std::vector<TensorSpec> params = param_specs(shape);
    const std::vector<TensorSpec> inputs = input_specs(shape);
    Rng rng(seed);
    ProblemData data;
    data.params.push_back(init::layernorm_weight(params[0], rng));
    data.params.push_back(init::layernorm_bias(params[1], rng));
    data.params.push_back(init::linear(params[2], d.D, rng));
    data.params.push_back(init::linear(params[3], d.D, rng));
    data.params.push_back(init::linear(params[4], d.D, rng));
    data.params.push_back(init::linear(params[5], d.P, rng));
    data.params.push_back(init::linear(params[6], d.P, rng));
    data.params.push_back(init::linear(params[7], d.P, rng));
    data.params.push_back(init::linear(params[8], d.P, rng));
    data.params.push_back(init::linear(params[9], d.D, rng));

    data.inputs.push_back(init::normal(inputs[0], rng));
    data.inputs.push_back(init::normal(inputs[1], rng));
    HostTensor mask{inputs[2], std::vector<float>(size(inputs[2].elements()))};
    for (float& v : mask.data) v = rng.uniform01() < 0.7 ? 1.0f : 0.0f;
    const auto at = [&](std::int64_t b, std::int64_t i, std::int64_t j) -> float& {
      return mask.data[size((b * d.N + i) * d.N + j)];
    };
    for (std::int64_t b = 0; b < d.B; ++b) {
      for (std::int64_t i = 0; i < d.N; ++i) at(b, i, i) = 1.0f;
    }
    if (purpose == DataPurpose::kParity) {
      // Per batch: row 0 fully masked (attention 0, out = nodes), row 1 with one edge (varies
      // with b, sometimes the diagonal), row 2 with one off-diagonal edge.
      const auto keep_only = [&](std::int64_t b, std::int64_t i, std::int64_t keep) {
        for (std::int64_t j = 0; j < d.N; ++j) at(b, i, j) = j == keep ? 1.0f : 0.0f;
      };
      for (std::int64_t b = 0; b < d.B; ++b) {
        keep_only(b, 0, -1);
        if (d.N >= 2) keep_only(b, 1, (1 + b) % d.N);
        if (d.N >= 3) {
          const std::int64_t k = b % (d.N - 1);  // the k-th column other than 2
          keep_only(b, 2, k < 2 ? k : k + 1);
        }
      }
    }
    data.inputs.push_back(std::move(mask));
    return data;
  }

  // Float64, step by step as SceneGraphRelation.forward.
  [[nodiscard]] std::vector<double> reference(const Shape& shape, const ProblemData& data) const override {
    check_shape(shape);
    const Dims d = dims_of(shape);
    const std::int64_t B = d.B, N = d.N, D = d.D, H = d.heads, P = d.P, hd = D / H;
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

    const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
    std::vector<double> out(size(B * N * D));
    std::vector<double> h(size(N * D)), q(size(N * D)), k(size(N * D)), v(size(N * D));
    std::vector<double> ctx(size(N * D)), bias(size(H * N * N)), hidden(size(P)), p(size(N));

    // y[n][o] = sum_c x[n][c] * w[o][c] for the N rows of one batch (nn.Linear, no bias).
    const auto linear = [&](const std::vector<double>& x, const std::vector<float>& w, std::vector<double>& y) {
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

      // bias[hh][i][j] = (W2 silu(W0 pair[b,i,j,:] + b0) + b2)[hh]
      for (std::int64_t i = 0; i < N; ++i) {
        for (std::int64_t j = 0; j < N; ++j) {
          const float* x = &pair[size(((b * N + i) * N + j) * P)];
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

  [[nodiscard]] WorkCounts counts(const Shape& shape) const override {
    const Dims d = dims_of(shape);
    const double B = static_cast<double>(d.B), N = static_cast<double>(d.N), D = static_cast<double>(d.D),
                 H = static_cast<double>(d.heads), P = static_cast<double>(d.P);
    const double param_elements = 2 * D + 4 * D * D + P * P + P + H * P + H;
    WorkCounts c;
    c.flop = 2 * B * N * D * D * 4 + 2 * B * N * N * D * 2 + 2 * B * N * N * (P * P + P * H);
    c.bytes = 4 * (B * N * D + B * N * N * P + B * N * N + B * N * D) + 4 * param_elements;
    return c;
  }
};

}  // namespace

const Problem& scene_graph_problem() {
  static const SceneGraphProblem problem;
  return problem;
}

}  // namespace tune

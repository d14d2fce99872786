// The surrogate model of --search model (see tune/surrogate.hpp), on XGBoost's C API.
#include "tune/surrogate.hpp"

#include <xgboost/c_api.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

namespace tune {

namespace {

// The one checked-call entry for XGBoost: its last error's text in the exception.
void xgb_check(int rc, const char* expr) {
  if (rc != 0) throw std::runtime_error(fmt::format("XGBoost: {} failed: {}", expr, XGBGetLastError()));
}
#define TUNE_XGB(call) xgb_check((call), #call)

// Move-only owners of XGBoost's handles; their destructors do not throw.
class Matrix {
 public:
  Matrix(const std::vector<float>& flat, std::size_t rows, std::size_t cols) {
    TUNE_XGB(XGDMatrixCreateFromMat(flat.data(), rows, cols, std::numeric_limits<float>::quiet_NaN(), &h_));
  }
  ~Matrix() {
    if (h_) XGDMatrixFree(h_);
  }
  Matrix(Matrix&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  Matrix& operator=(Matrix&&) = delete;
  Matrix(const Matrix&) = delete;
  Matrix& operator=(const Matrix&) = delete;
  [[nodiscard]] DMatrixHandle get() const { return h_; }

 private:
  DMatrixHandle h_ = nullptr;
};

class Booster {
 public:
  explicit Booster(const Matrix& train) {
    DMatrixHandle m = train.get();
    TUNE_XGB(XGBoosterCreate(&m, 1, &h_));
  }
  ~Booster() {
    if (h_) XGBoosterFree(h_);
  }
  Booster(Booster&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  Booster& operator=(Booster&& o) noexcept {
    std::swap(h_, o.h_);
    return *this;
  }
  Booster(const Booster&) = delete;
  Booster& operator=(const Booster&) = delete;
  [[nodiscard]] BoosterHandle get() const { return h_; }

 private:
  BoosterHandle h_ = nullptr;
};

std::vector<float> flatten(const std::vector<std::vector<float>>& x, std::size_t width) {
  std::vector<float> flat;
  flat.reserve(x.size() * width);
  for (const auto& row : x) {
    if (row.size() != width) throw std::invalid_argument("surrogate: rows of different widths");
    flat.insert(flat.end(), row.begin(), row.end());
  }
  return flat;
}

// Each member is one deep regression tree (a boosting round at eta 1, no leaf shrinkage, a random
// 80 % of the parameters at each split) on its bootstrap: together a random forest, whose trees'
// disagreement is the spread. On tune's synthetic space (tests/unit/strategy_test.cpp) this found
// the best within 2 % in 10 of 10 seeds timing a quarter of the space; 60 rounds of shallow boosted
// trees per member, whose bootstraps agree more, stopped early and missed in 2 of 10. Two threads:
// the compile pool has the cores.
constexpr int kRounds = 1;
constexpr std::pair<const char*, const char*> kParams[] =
    {{"objective", "reg:squarederror"}, {"max_depth", "10"},         {"eta", "1"},     {"lambda", "0"},
     {"min_child_weight", "1"},         {"colsample_bynode", "0.8"}, {"nthread", "2"}, {"verbosity", "0"},
     {"tree_method", "exact"}};

}  // namespace

struct Surrogate::Members {
  std::vector<Booster> boosters;
};

Surrogate::Surrogate(int members, std::uint64_t seed)
    : members_(std::make_unique<Members>()), count_(std::max(2, members)), seed_(seed) {}
Surrogate::~Surrogate() = default;
Surrogate::Surrogate(Surrogate&&) noexcept = default;
Surrogate& Surrogate::operator=(Surrogate&&) noexcept = default;

void Surrogate::fit(const std::vector<std::vector<float>>& x, const std::vector<float>& y) {
  if (x.size() < 2 || x.size() != y.size() || x.front().empty())
    throw std::invalid_argument("surrogate: fit needs at least two rows, one target each");
  width_ = x.front().size();
  const Matrix train(flatten(x, width_), x.size(), width_);
  TUNE_XGB(XGDMatrixSetFloatInfo(train.get(), "label", y.data(), y.size()));
  std::mt19937_64 rng(seed_ ^ 0x5851f42d4c957f2dULL);
  std::poisson_distribution<int> draws(1.0);
  members_->boosters.clear();
  for (int m = 0; m < count_; ++m) {
    // A bootstrap as weights: each row counted Poisson(1) times (at least one row kept).
    std::vector<float> weight(x.size());
    float total = 0;
    for (auto& w : weight) total += (w = static_cast<float>(draws(rng)));
    if (total == 0) weight[rng() % weight.size()] = 1;
    TUNE_XGB(XGDMatrixSetFloatInfo(train.get(), "weight", weight.data(), weight.size()));
    Booster b(train);
    for (const auto& [k, v] : kParams) TUNE_XGB(XGBoosterSetParam(b.get(), k, v));
    TUNE_XGB(
        XGBoosterSetParam(b.get(), "seed", std::to_string((seed_ + static_cast<std::uint64_t>(m)) % 2147483647).c_str()));
    for (int round = 0; round < kRounds; ++round) TUNE_XGB(XGBoosterUpdateOneIter(b.get(), round, train.get()));
    members_->boosters.push_back(std::move(b));
  }
}

std::vector<Prediction> Surrogate::predict(const std::vector<std::vector<float>>& x) const {
  if (members_->boosters.empty()) throw std::logic_error("surrogate: predict before fit");
  std::vector<Prediction> out(x.size());
  if (x.empty()) return out;
  const Matrix rows(flatten(x, width_), x.size(), width_);
  std::vector<std::vector<float>> by_member;
  for (const auto& b : members_->boosters) {
    bst_ulong len = 0;
    const float* result = nullptr;
    TUNE_XGB(XGBoosterPredict(b.get(), rows.get(), 0, 0, 0, &len, &result));
    if (len != x.size()) throw std::runtime_error("XGBoost: a prediction per row was expected");
    by_member.emplace_back(result, result + len);
  }
  const auto k = static_cast<double>(by_member.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    double sum = 0, sq = 0;
    for (const auto& p : by_member) sum += p[i];
    const double mean = sum / k;
    for (const auto& p : by_member) sq += (p[i] - mean) * (p[i] - mean);
    out[i] = {mean, std::sqrt(sq / (k - 1))};
  }
  return out;
}

std::string Surrogate::library_version() {
  int major = 0, minor = 0, patch = 0;
  XGBoostVersion(&major, &minor, &patch);
  return fmt::format("{}.{}.{}", major, minor, patch);
}

ModelStep model_step(const std::vector<Config>& all, const std::vector<std::optional<double>>& log_time,
                     const std::vector<char>& failed, const std::vector<char>& excluded, const ModelOptions& options) {
  if (log_time.size() != all.size() || failed.size() != all.size() || excluded.size() != all.size())
    throw std::invalid_argument("model_step: one observation slot per configuration");
  auto row = [&](std::size_t i) {
    std::vector<float> r;
    r.reserve(all[i].choice.size());
    for (const std::size_t c : all[i].choice) r.push_back(static_cast<float>(c));
    return r;
  };
  std::vector<std::vector<float>> x, candidates;
  std::vector<float> y;
  std::vector<std::size_t> candidate_index;
  double best = std::numeric_limits<double>::infinity(), worst = -best;
  for (std::size_t i = 0; i < all.size(); ++i)
    if (log_time[i]) {
      best = std::min(best, *log_time[i]);
      worst = std::max(worst, *log_time[i]);
    }
  ModelStep step;
  if (!std::isfinite(best)) {
    step.stop = true;
    step.why = "nothing measured passed: there is nothing to learn from";
    return step;
  }
  // A failed configuration is learned as twice the slowest that passed: the model steers away
  // from its neighbourhood without being told it is a time.
  const double failed_as = worst + std::log(2.0);
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (excluded[i]) continue;
    if (log_time[i] || failed[i]) {
      x.push_back(row(i));
      y.push_back(static_cast<float>(log_time[i] ? *log_time[i] : failed_as));
    } else {
      candidates.push_back(row(i));
      candidate_index.push_back(i);
    }
  }
  if (candidates.empty()) {
    step.stop = true;
    step.why = "every configuration is measured";
    return step;
  }
  if (x.size() < 2) {  // too little to fit: the next ones in order
    for (std::size_t k = 0; k < std::min(options.batch, candidate_index.size()); ++k)
      step.next.push_back(candidate_index[k]);
    return step;
  }
  Surrogate model(options.members, options.seed);
  model.fit(x, y);
  const std::vector<Prediction> p = model.predict(candidates);
  std::vector<double> bound(p.size());
  for (std::size_t k = 0; k < p.size(); ++k) bound[k] = p[k].mean - options.kappa * p[k].spread;
  std::vector<std::size_t> order(p.size());
  for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return bound[a] < bound[b]; });
  step.best_bound_ratio = std::exp(bound[order.front()] - best);
  if (step.best_bound_ratio > 1.0 - options.min_gain) {
    step.stop = true;
    step.why = fmt::format(
        "no configuration left is predicted (mean - {:g} x spread) to beat the best by {:g} %: the "
        "most promising one's bound is {:.3f}x the best",
        options.kappa, 100 * options.min_gain, step.best_bound_ratio);
    return step;
  }
  for (std::size_t k = 0; k < order.size() && step.next.size() < options.batch; ++k)
    if (std::exp(bound[order[k]] - best) <= 1.0 - options.min_gain) step.next.push_back(candidate_index[order[k]]);
  std::sort(step.next.begin(), step.next.end());
  return step;
}

}  // namespace tune

#pragma once
// The surrogate model of --search model (issue 24): what a kernel's time will be at configurations
// not measured yet, learned from those that were. An ensemble of regression trees fitted with
// XGBoost, each to a bootstrap of the observations (Poisson(1) weights, a seed of its own): a random
// forest, as SMAC uses for algorithm configuration. The members' mean is the prediction and their
// spread its uncertainty. Trees suit a kernel's space: discrete parameters whose effects are thresholds and
// interactions (a tile size that fits, a strategy that wins past a shape), not smooth surfaces.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tune/space.hpp"

namespace tune {

struct Prediction {
  double mean = 0;
  double spread = 0;  // the standard deviation over the ensemble's members
};

class Surrogate {
 public:
  // members: trees of the ensemble (at least 2 for a spread); seed: their bootstraps' seed.
  explicit Surrogate(int members = 32, std::uint64_t seed = 0);
  ~Surrogate();
  Surrogate(Surrogate&&) noexcept;
  Surrogate& operator=(Surrogate&&) noexcept;
  Surrogate(const Surrogate&) = delete;
  Surrogate& operator=(const Surrogate&) = delete;

  // Fits every member to rows x (all of one width) and targets y; replaces an earlier fit. At
  // least two rows; throws std::invalid_argument on ragged or empty input, std::runtime_error
  // with XGBoost's message when the library fails.
  void fit(const std::vector<std::vector<float>>& x, const std::vector<float>& y);
  // One prediction per row (the width fit saw). Throws std::logic_error before a fit.
  [[nodiscard]] std::vector<Prediction> predict(const std::vector<std::vector<float>>& x) const;

  // XGBoost's version, for the record ("1.7.4").
  [[nodiscard]] static std::string library_version();

 private:
  struct Members;
  std::unique_ptr<Members> members_;
  int count_;
  std::uint64_t seed_;
  std::size_t width_ = 0;
};

// One step of the model-guided search over `all` (the valid configurations, each a row of its
// parameters' choice indices). log_time[i]: the natural log of configuration i's median where it
// was measured and passed, nullopt where it was not measured; failed[i]: measured and not timed
// (compile failure, parity failure, pruned), which the model learns as slow; excluded[i]: neither
// learned from nor proposed (the baseline, timed apart). It fits a Surrogate
// to what was measured and proposes up to `batch` unmeasured configurations, lowest lower
// confidence bound (mean - kappa x spread) first. It stops (stop = true, no proposal) when no
// unmeasured configuration's bound is below the best measured time by more than min_gain (0.01:
// 1 %), or when nothing is left to measure.
struct ModelStep {
  std::vector<std::size_t> next;  // indices into `all`
  bool stop = false;
  double best_bound_ratio = 0;  // the lowest bound, relative to the best measured time
  std::string why;              // why it stopped, for the log and the record
};

struct ModelOptions {
  std::size_t batch = 16;
  double kappa = 1.0;
  double min_gain = 0.01;
  int members = 32;
  std::uint64_t seed = 0;
};

ModelStep model_step(const std::vector<Config>& all, const std::vector<std::optional<double>>& log_time,
                     const std::vector<char>& failed, const std::vector<char>& excluded, const ModelOptions& options);

}  // namespace tune

// --search model: an initial design (configurations at random, or the warm choice), then rounds of
// the surrogate's proposals (tune/surrogate.hpp) while it predicts a gain, at most --model-rounds.

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "search/strategy.hpp"
#include "tune/compile_pool.hpp"
#include "tune/surrogate.hpp"

namespace tune {
namespace {

// --model-batch, or the compile jobs (at least 8).
std::size_t model_batch_of(const TuneOptions& o) {
  return static_cast<std::size_t>(o.model_batch > 0 ? o.model_batch : std::max(8, CompilePool::jobs_for(o.jobs)));
}

// The most a default initial design takes for its 5 %: 5 % of a space of millions is a day of
// compiles before the model has learned anything (and past --max-variants, refused).
constexpr std::size_t kMostInitialShare = 1000;

// --model-init, or max(2 x the batch, 5 % of the valid configurations, at most 1000).
std::size_t model_initial_size(const TuneOptions& o, std::size_t valid) {
  if (o.model_init > 0) return static_cast<std::size_t>(o.model_init);
  return std::max(2 * model_batch_of(o), std::min(valid / 20, kMostInitialShare));
}

class ModelStrategy final : public SearchStrategy {
 public:
  explicit ModelStrategy(StrategyPtr initial) : initial_(std::move(initial)) {}

  FirstBatch first(const SearchSetting& s, RunContext& ctx) override {
    o_ = &s.options;
    require_enumerated(s, "--search model");
    if (initial_) {
      FirstBatch batch = initial_->first(s, ctx);
      initial_count_ = static_cast<int>(batch.configs.size());
      return batch;
    }
    FirstBatch batch = enumerate_candidates(s, ctx);
    batch.configs =
        sample_configs(batch.all, s.space.baseline(), static_cast<int>(model_initial_size(*o_, batch.all.size())), o_->seed);
    initial_count_ = static_cast<int>(without_deferred(s, batch.configs).size());
    s.log(
        fmt::format("model search: an initial design of {} of {} valid configurations at random (seed {}), then "
                    "rounds of the surrogate's proposals (xgboost {})",
                    initial_count_, ctx.valid_configs, o_->seed, Surrogate::library_version()));
    return batch;
  }

  [[nodiscard]] bool adaptive() const override { return true; }

  std::vector<std::size_t> next(const Measured& m, const SearchLog& log) override {
    if (done_) return {};
    if (rounds_ >= o_->model_rounds) return stop(fmt::format("--model-rounds {} reached", o_->model_rounds), log);
    const ModelStep step = propose(m);
    if (step.stop) return stop(step.why, log);
    ++rounds_;
    added_ += static_cast<int>(step.next.size());
    log(fmt::format("model round {}: {} configuration(s) proposed (the best bound {:.3f}x the best measured)", rounds_,
                    step.next.size(), step.best_bound_ratio));
    return step.next;
  }

  void finish(bool timed, const SearchLog& log) override {
    if (!timed && !done_) (void)stop("nothing was timed (no device): the model has nothing to learn from", log);
  }

  void record(RunContext& ctx) const override {
    if (initial_) initial_->record(ctx);
    ctx.search = initial_ ? SearchLabel::kWarmModel : SearchLabel::kModel;
    ctx.model_library = "xgboost " + Surrogate::library_version();
    ctx.model_initial = initial_count_;
    ctx.model_rounds = rounds_;
    ctx.model_added = added_;
    ctx.model_stop = stop_;
    ctx.warm_refine_top = o_ ? o_->warm_refine : 0;  // the run is in passes: its refine record is written
  }
  void rounds(SearchRounds& out) const override {
    if (initial_) initial_->rounds(out);
    out.model = rounds_;
  }
  [[nodiscard]] std::string name() const override { return "model"; }

 private:
  // The surrogate fitted to everything measured (a failure is learned as slow) and its proposals.
  ModelStep propose(const Measured& m) const {
    const std::size_t n = m.all.size();
    std::vector<std::optional<double>> log_time(n);
    std::vector<char> failed(n, 0);
    for (std::size_t i = 0; i < n; ++i) {
      if (m.median_us[i] && *m.median_us[i] > 0)
        log_time[i] = std::log(*m.median_us[i]);
      else if (m.settled[i])
        failed[i] = 1;
    }
    ModelOptions mo;
    mo.batch = model_batch_of(*o_);
    mo.min_gain = o_->model_gain;
    mo.seed = o_->seed + static_cast<std::uint64_t>(rounds_);
    return model_step(m.all, log_time, failed, m.excluded, mo);
  }

  std::vector<std::size_t> stop(std::string why, const SearchLog& log) {
    stop_ = std::move(why);
    done_ = true;
    log("model search: stopped: " + stop_);
    return {};
  }

  StrategyPtr initial_;
  const TuneOptions* o_ = nullptr;
  int initial_count_ = 0, rounds_ = 0, added_ = 0;
  std::string stop_;
  bool done_ = false;
};

}  // namespace

StrategyPtr make_model_strategy(StrategyPtr initial) { return std::make_unique<ModelStrategy>(std::move(initial)); }

}  // namespace tune

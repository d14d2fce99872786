// --budget N: a random sample of N valid configurations (from --seed) and the baseline. A space
// of at most --max-space configurations is enumerated and sampled; a larger one is never
// enumerated (it would take hours and hold every configuration in memory): configurations are
// drawn (Space::sample) until the budget is met or the draws run out.

#include <algorithm>

#include <fmt/format.h>

#include "search/progress_log.hpp"
#include "search/strategy.hpp"
#include "tune/compile.hpp"
#include "tune/errors.hpp"
#include "tune/stop.hpp"

namespace tune {
namespace {

class RandomStrategy final : public SearchStrategy {
 public:
  FirstBatch first(const SearchSetting& s, RunContext& ctx) override {
    if (!enumerable(s.options, s.space)) return drawn(s);
    FirstBatch batch = enumerate_candidates(s, ctx);
    batch.configs = sample_configs(batch.all, s.space.baseline(), s.options.budget, s.options.seed);
    // A budget of the whole space or more is exhaustive; of more than the candidates held, not.
    sampled_ = batch.configs.size() < batch.all.size() || ctx.candidates > 0;
    if (sampled_)
      s.log(fmt::format("random search: {} of {} valid configurations (seed {}), the baseline included",
                        batch.configs.size(), ctx.valid_configs, s.options.seed));
    budget_ = s.options.budget;
    return batch;
  }

  void record(RunContext& ctx) const override {
    if (!sampled_) return;
    ctx.search = SearchLabel::kRandom;
    ctx.budget = budget_;
    if (!draws_) return;
    ctx.valid_configs = -1;  // not counted: the space was sampled, not enumerated
    ctx.draws = *draws_;
  }

  [[nodiscard]] std::string name() const override { return "random"; }

 private:
  // Valid configurations drawn at random (the baseline added where it is valid), never enumerated.
  FirstBatch drawn(const SearchSetting& s) {
    const TuneOptions& o = s.options;
    const std::uint64_t size = s.space.size();
    const auto budget = static_cast<std::size_t>(o.budget);
    // Enough draws for a space whose constraints pass 1 in 100, never fewer than a million (a few
    // seconds) nor more than ten million (under a minute).
    const std::uint64_t max_draws =
        std::clamp<std::uint64_t>(100 * static_cast<std::uint64_t>(budget), 1'000'000, 10'000'000);
    s.log(
        fmt::format("the space has {} configurations, more than --max-space {}: drawing {} valid ones at random without "
                    "enumerating it (seed {}, at most {} draws)",
                    describe_count(size), o.max_space, budget, o.seed, max_draws));
    ProgressLog progress(s.log, "space: configurations drawn and checked");
    const auto on_progress = [&](const SpaceProgress& p) {
      throw_if_stopped("drawing configurations of " + s.space.source_name());
      progress.tick(p.checked, p.of, fmt::format(", {} valid", p.valid));
    };
    const Enumeration drawn = s.space.sample(s.shape, s.limits, budget, o.seed, max_draws, on_progress);
    if (drawn.configs.empty())
      throw ShapeError(
          fmt::format("no configuration of {} drawn at random ({} draws of its {}) accepts shape {} on {}{}; "
                      "restrict the parameters' values to those the constraints allow, or raise --max-space "
                      "to enumerate the space",
                      s.space.source_name(), drawn.draws, describe_count(size), s.shape.describe(),
                      arch_name(s.limits.compute_capability), rejections(drawn)));
    sampled_ = true;
    budget_ = o.budget;
    draws_ = drawn.draws;
    s.log(fmt::format("random search: {} valid configurations drawn (seed {}) in {} draws{}, the baseline included",
                      drawn.configs.size(), o.seed, drawn.draws,
                      drawn.configs.size() < budget ? fmt::format(" (the draws ran out before --budget {})", budget) : ""));
    return {{},
            with_valid_baseline(s, drawn.configs),
            fmt::format("{} drawn at random of {} configurations", drawn.configs.size(), describe_count(size))};
  }

  // The drawn configurations (in enumeration order) with the baseline where it is valid.
  static std::vector<Config> with_valid_baseline(const SearchSetting& s, std::vector<Config> configs) {
    const Config& base = s.space.baseline();
    if (s.space.violated_constraint(base, s.shape, s.limits).empty() &&
        !std::binary_search(configs.begin(), configs.end(), base))
      configs.insert(std::lower_bound(configs.begin(), configs.end(), base), base);
    return configs;
  }

  bool sampled_ = false;
  int budget_ = 0;
  std::optional<std::uint64_t> draws_;
};

}  // namespace

StrategyPtr make_random_strategy() { return std::make_unique<RandomStrategy>(); }

}  // namespace tune

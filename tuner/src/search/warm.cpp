// --warm-start: the configurations that were promising at nearby shapes (warm_configs), a few
// others at random, the baseline.

#include <set>

#include <fmt/format.h>

#include "search/strategy.hpp"
#include "tune/errors.hpp"

namespace tune {
namespace {

// The configurations of this space the files find promising, found by their recorded parameters
// (looked up per configuration by name, 21 million left out of a sample took 40 s): a variant of
// another space is none of them, as warm_choice, which matches by name, finds too.
std::set<Config> promising_configs(const Space& space, const WarmPrior& prior, double keep) {
  std::set<Config> out;
  for (const auto& [name, known] : prior) {
    if (!(known.ratio <= keep)) continue;
    try {
      Config c = space.from_json(known.params);
      if (space.name(c) == name) out.insert(std::move(c));
    } catch (const InputError&) {  // a parameter or a value this space has not
    }
  }
  return out;
}

class WarmStrategy final : public SearchStrategy {
 public:
  FirstBatch first(const SearchSetting& s, RunContext& ctx) override {
    const TuneOptions& o = s.options;
    require_enumerated(s, "--warm-start");
    const WarmPrior prior = warm_prior(s.problem, s.shape, o.warm_start);
    // Those the files find promising are held whatever the sample of a space past --max-candidates.
    const std::set<Config> promising = promising_configs(s.space, prior, o.warm_keep);
    FirstBatch batch = enumerate_candidates(s, ctx, [&](const Config& c) { return promising.contains(c); });
    WarmChoice warm = warm_choice(batch.all, s.space.baseline(), s.space, prior, o.warm_keep, o.warm_explore, o.seed);
    files_.clear();
    for (const auto& f : o.warm_start) files_.push_back(f.string());
    keep_ = o.warm_keep;
    promising_ = warm.promising;
    explored_ = warm.explored;
    log_choice(s, warm, without_deferred(s, warm.configs).size(), static_cast<std::size_t>(ctx.valid_configs));
    batch.configs = std::move(warm.configs);
    return batch;
  }

  void record(RunContext& ctx) const override {
    ctx.search = SearchLabel::kWarm;
    ctx.warm_files.insert(ctx.warm_files.end(), files_.begin(), files_.end());
    ctx.warm_keep = keep_;
    ctx.warm_promising = promising_;
    ctx.warm_explored = explored_;
  }
  void rounds(SearchRounds& out) const override { out.first = "warm choice"; }
  [[nodiscard]] std::string name() const override { return "warm"; }

 private:
  static void log_choice(const SearchSetting& s, const WarmChoice& warm, std::size_t timed, std::size_t valid) {
    const TuneOptions& o = s.options;
    s.log(
        fmt::format("warm start: {} configurations within {:g}x of the best at the nearest shape of {} file(s), {} "
                    "others at random (seed {}), the baseline: {} of {} valid configurations",
                    warm.promising, o.warm_keep, o.warm_start.size(), warm.explored, o.seed, timed, valid));
    if (warm.whole_space)
      s.log("warm start: that is half the space or more, so every valid configuration is timed");
    else if (warm.promising == 0)
      s.log(
          "warm start: no configuration of those files is promising here (another space, or nothing timed there): "
          "only the random exploration and the baseline are timed");
  }

  std::vector<std::string> files_;
  double keep_ = 0;
  int promising_ = 0, explored_ = 0;
};

}  // namespace

StrategyPtr make_warm_strategy() { return std::make_unique<WarmStrategy>(); }

}  // namespace tune

// The default search: every valid configuration, timed once with the search profile.

#include "search/strategy.hpp"

#include <limits>

namespace tune {
namespace {

class ExhaustiveStrategy final : public SearchStrategy {
 public:
  FirstBatch first(const SearchSetting& s, RunContext& ctx) override {
    (void)enumerable(s.options, s.space);  // a space too large to enumerate is refused here
    // Every valid configuration is a variant of the pass, unless a shard of the variants takes part.
    const TuneOptions& o = s.options;
    const bool all_timed = !(o.shard && o.shard->split == ShardSplit::kVariants);
    FirstBatch batch = enumerate_valid(s, ctx, all_timed ? o.max_variants : std::numeric_limits<std::size_t>::max());
    batch.configs = batch.all;
    return batch;
  }
  void record(RunContext& ctx) const override { (void)ctx; }  // context.search.strategy stays "exhaustive"
  [[nodiscard]] std::string name() const override { return "exhaustive"; }
};

}  // namespace

StrategyPtr make_exhaustive_strategy() { return std::make_unique<ExhaustiveStrategy>(); }

}  // namespace tune

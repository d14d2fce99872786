// The default search: every valid configuration, timed once with the search profile.

#include "search/strategy.hpp"

namespace tune {
namespace {

class ExhaustiveStrategy final : public SearchStrategy {
 public:
  FirstBatch first(const SearchSetting& s, RunContext& ctx) override {
    (void)enumerable(s.options, s.space);  // a space too large to enumerate is refused here
    FirstBatch batch = enumerate_valid(s, ctx);
    batch.configs = batch.all;
    return batch;
  }
  void record(RunContext& ctx) const override { (void)ctx; }  // context.search.strategy stays "exhaustive"
  [[nodiscard]] std::string name() const override { return "exhaustive"; }
};

}  // namespace

StrategyPtr make_exhaustive_strategy() { return std::make_unique<ExhaustiveStrategy>(); }

}  // namespace tune

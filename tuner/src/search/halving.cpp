// --search halving (successive halving): every chosen variant screened cheaply (StopRule::screen,
// 10-launch batches), then the best third (at least --top + 1) timed again with the search profile.
// It wraps the choice (exhaustive, random, warm) and changes only how the variants are timed.

#include <algorithm>

#include "search/strategy.hpp"

namespace tune {
namespace {

class HalvingStrategy final : public WrappingStrategy {
 public:
  using WrappingStrategy::WrappingStrategy;

  FirstBatch first(const SearchSetting& s, RunContext& ctx) override {
    top_k_ = s.options.top_k;
    return inner_->first(s, ctx);
  }
  void record(RunContext& ctx) const override {
    inner_->record(ctx);
    ctx.search = with_halving(ctx.search);
  }
  [[nodiscard]] DeviceRunner::Options profile() const override {
    DeviceRunner::Options o = inner_->profile();
    o.rule = StopRule::screen();
    o.batch_launches = 10;
    return o;
  }
  [[nodiscard]] std::size_t second_round(std::size_t screened) const override {
    return std::max<std::size_t>((screened + 2) / 3, static_cast<std::size_t>(top_k_) + 1);
  }
  [[nodiscard]] std::string name() const override { return "halving"; }

 private:
  int top_k_ = 3;
};

}  // namespace

StrategyPtr make_halving_strategy(StrategyPtr inner) { return std::make_unique<HalvingStrategy>(std::move(inner)); }

}  // namespace tune

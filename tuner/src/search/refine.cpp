// --warm-refine K: after the strategy it wraps (a warm start, the model) is done, rounds of local
// search: the valid configurations one parameter away from the K fastest here, round after round
// while a round finds a faster one, at most --warm-refine-rounds.

#include <fmt/format.h>

#include "search/strategy.hpp"

namespace tune {
namespace {

// The configurations (indices into m.all) one parameter away from any of `around`, not chosen yet.
std::vector<std::size_t> neighbours(const Measured& m, const std::vector<std::size_t>& around) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < m.all.size(); ++i) {
    if (m.chosen[i]) continue;
    const Config& c = m.all[i];
    for (const std::size_t a : around) {
      std::size_t differ = 0;
      for (std::size_t p = 0; p < c.choice.size() && differ < 2; ++p) differ += c.choice[p] != m.all[a].choice[p];
      if (differ == 1) {
        out.push_back(i);
        break;
      }
    }
  }
  return out;
}

class RefineStrategy final : public WrappingStrategy {
 public:
  using WrappingStrategy::WrappingStrategy;

  FirstBatch first(const SearchSetting& s, RunContext& ctx) override {
    o_ = &s.options;
    return inner_->first(s, ctx);
  }
  [[nodiscard]] bool adaptive() const override { return true; }

  std::vector<std::size_t> next(const Measured& m, const SearchLog& log) override {
    if (!inner_done_) {
      std::vector<std::size_t> more = inner_->next(m, log);
      if (!more.empty()) return more;
      inner_done_ = true;
    }
    if (best_before_) {  // nothing faster in the last round: its neighbourhood is done
      const auto best = fastest_measured(m, 1);
      if (best.empty() || !(best.front().second < *best_before_)) return {};
    }
    if (rounds_ >= o_->warm_refine_rounds) return {};
    return refine_round(m, log);
  }

  void record(RunContext& ctx) const override {
    inner_->record(ctx);
    ctx.warm_refine_top = o_ ? o_->warm_refine : 0;
    ctx.warm_refine_rounds = rounds_;
    ctx.warm_refine_added = added_;
  }
  void rounds(SearchRounds& out) const override {
    inner_->rounds(out);
    out.refine = rounds_;
  }

 private:
  std::vector<std::size_t> refine_round(const Measured& m, const SearchLog& log) {
    const auto top = fastest_measured(m, static_cast<std::size_t>(o_->warm_refine));
    if (top.empty()) return {};
    std::vector<std::size_t> around;
    for (const auto& [i, median] : top) around.push_back(i);
    std::vector<std::size_t> more = neighbours(m, around);
    if (more.empty()) {
      log(fmt::format("refine: every configuration one parameter away from the {} fastest here is timed", top.size()));
      return {};
    }
    best_before_ = top.front().second;
    ++rounds_;
    added_ += static_cast<int>(more.size());
    log(fmt::format("refine round {}: {} configuration(s) one parameter away from the {} fastest here (best {:.2f} us)",
                    rounds_, more.size(), top.size(), *best_before_));
    return more;
  }

  const TuneOptions* o_ = nullptr;
  bool inner_done_ = false;
  std::optional<double> best_before_;
  int rounds_ = 0, added_ = 0;
};

}  // namespace

StrategyPtr make_refine_strategy(StrategyPtr inner) { return std::make_unique<RefineStrategy>(std::move(inner)); }

}  // namespace tune

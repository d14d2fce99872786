#pragma once
// Search strategies behind one interface (issue 23). A strategy chooses what the pipeline compiles
// and times: the first batch from the space, then (an adaptive one) further batches from what the
// passes so far measured, until it says it is done. It also gives the search loop's measurement
// profile, a second round over the best screened (successive halving), and its part of the
// record (context.search). The pass (tune.cpp) knows nothing of the mode: it asks the strategy.
//
// Adding one: a file in this folder with a class derived from SearchStrategy and a make_ function
// declared below, and one line in make_search_strategy (strategy.cpp). Decorators (refine,
// halving) wrap another strategy and add to what it does.

#include <cstddef>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tune/measure.hpp"
#include "tune/problem.hpp"
#include "tune/record.hpp"
#include "tune/run_options.hpp"
#include "tune/sampling.hpp"
#include "tune/space.hpp"
#include "tune/winner.hpp"

namespace tune {

using SearchLog = std::function<void(const std::string&)>;

// What a strategy chooses from: the space at this shape on this device, and the run's options.
// defer_baseline: the search passes leave the baseline out (it compiles apart; the last pass
// times it), so the counts a strategy logs and records leave it out too.
struct SearchSetting {
  const TuneOptions& options;
  const std::string& problem;
  const Space& space;
  const Shape& shape;
  const DeviceLimits& limits;
  const SearchLog& log;
  bool defer_baseline = false;
};

// The first pass's choice: every valid configuration (empty when the space was sampled, not
// enumerated), those to time, and how they were found (for the log).
struct FirstBatch {
  std::vector<Config> all;
  std::vector<Config> configs;
  std::string how;
};

// What the passes so far measured, over FirstBatch::all (index i is all[i]).
struct Measured {
  const std::vector<Config>& all;
  std::vector<std::optional<double>> median_us;  // those passed with a timing
  std::vector<char> settled;                     // a record with a final status (passed or not)
  std::vector<char> excluded;                    // never to be proposed (the baseline, timed apart)
  std::vector<char> chosen;                      // chosen already (timed, or to be)
};

// For the log of a later pass: what the first choice was, and the rounds that followed.
struct SearchRounds {
  std::string first = "initial design";
  int model = 0;
  int refine = 0;
};

class SearchStrategy {
 public:
  virtual ~SearchStrategy() = default;

  // The first pass's configurations (with the baseline where it is valid). Throws InputError or
  // ShapeError for a space this strategy cannot search.
  virtual FirstBatch first(const SearchSetting& setting, RunContext& ctx) = 0;
  // Whether the strategy proposes more after the first pass: the run is then in passes.
  [[nodiscard]] virtual bool adaptive() const { return false; }
  // The next batch (indices into Measured::all), given everything measured; empty: done.
  virtual std::vector<std::size_t> next(const Measured& measured, const SearchLog& log) {
    (void)measured, (void)log;
    return {};
  }
  // The passes have ended (done, interrupted, or nothing timed): the last pass follows.
  virtual void finish(bool timed, const SearchLog& log) { (void)timed, (void)log; }
  // Its part of context.search (the strategy's name and its counts), in every pass.
  virtual void record(RunContext& ctx) const = 0;
  // Its part of a later pass's log line (what the first choice was, the rounds so far).
  virtual void rounds(SearchRounds& out) const { (void)out; }
  // How the search loop times each variant.
  [[nodiscard]] virtual DeviceRunner::Options profile() const {
    DeviceRunner::Options o;
    o.batch_launches = 20;
    return o;
  }
  // After the search loop: how many of the `screened` passed variants to time again with the
  // search profile (0: no second round; the log line names the strategy, name()).
  [[nodiscard]] virtual std::size_t second_round(std::size_t screened) const {
    (void)screened;
    return 0;
  }
  // The outermost strategy's name ("halving" for a wrapped choice), for the log.
  [[nodiscard]] virtual std::string name() const = 0;
};

using StrategyPtr = std::unique_ptr<SearchStrategy>;

// A decorator's base: everything goes to the strategy it wraps unless it says otherwise.
class WrappingStrategy : public SearchStrategy {
 public:
  explicit WrappingStrategy(StrategyPtr inner) : inner_(std::move(inner)) {}
  FirstBatch first(const SearchSetting& setting, RunContext& ctx) override { return inner_->first(setting, ctx); }
  [[nodiscard]] bool adaptive() const override { return inner_->adaptive(); }
  std::vector<std::size_t> next(const Measured& measured, const SearchLog& log) override {
    return inner_->next(measured, log);
  }
  void finish(bool timed, const SearchLog& log) override { inner_->finish(timed, log); }
  void record(RunContext& ctx) const override { inner_->record(ctx); }
  void rounds(SearchRounds& out) const override { inner_->rounds(out); }
  [[nodiscard]] DeviceRunner::Options profile() const override { return inner_->profile(); }
  [[nodiscard]] std::size_t second_round(std::size_t screened) const override { return inner_->second_round(screened); }
  [[nodiscard]] std::string name() const override { return inner_->name(); }

 protected:
  StrategyPtr inner_;
};

// The strategy of a run's options: the choice (exhaustive, random with --budget, warm start, the
// surrogate model), wrapped in the local refine rounds and successive halving where asked for.
// Throws InputError for --search model where the run cannot be in passes.
StrategyPtr make_search_strategy(const TuneOptions& o);

// The options beside --search and --budget that decide which variants the strategy of `o` chooses
// (those of the model, the warm start, the refine rounds, --max-space where --budget samples), as
// they apply to it: part of the run's identity (run_identity), so a complete result or a journal of
// other choices is not taken for this run's.
// The options as given (--model-batch 0 is the compile jobs: a resubmission on a node of other
// cores is still the same run).
nlohmann::ordered_json search_identity(const TuneOptions& o);

StrategyPtr make_exhaustive_strategy();
StrategyPtr make_random_strategy();
StrategyPtr make_warm_strategy();
// initial: the warm choice, or null for a random initial design.
StrategyPtr make_model_strategy(StrategyPtr initial);
StrategyPtr make_refine_strategy(StrategyPtr inner);
StrategyPtr make_halving_strategy(StrategyPtr inner);

// Helpers the strategies share (strategy.cpp).

// Whether the space is enumerated (at most --max-space configurations); a larger one without a
// --budget is refused.
bool enumerable(const TuneOptions& o, const Space& space);
// Refuses a space the strategy `what` needs enumerated: with --budget, or too large.
void require_enumerated(const SearchSetting& s, const std::string& what);
// Every valid configuration (a line every 2 s while it takes long), and sets ctx.valid_configs.
// Throws ShapeError when none is valid. `variants_past` (a strategy that times every valid one):
// more valid configurations than that are refused as soon as they are counted, as the pass would
// refuse them after the whole enumeration (--max-variants), which may take minutes and all memory.
FirstBatch enumerate_valid(const SearchSetting& s, RunContext& ctx,
                           std::size_t variants_past = std::numeric_limits<std::size_t>::max());
// What to do about more variants than --max-variants, in the words of both refusals (the early one
// while enumerating, the pass's once the variants are chosen).
inline constexpr const char* kMaxVariantsRemedy =
    "pass --budget N to time a random sample, restrict the space, split it with --shard, or raise --max-variants";
// The valid configurations a strategy chooses among (--budget, --warm-start, the model): every one,
// or past --max-candidates a uniform sample of that many from --seed (Holding), with the baseline
// and those `pin` names besides. Sets ctx.valid_configs (the count) and ctx.candidates (the held
// count where sampled). Throws ShapeError when none is valid.
FirstBatch enumerate_candidates(const SearchSetting& s, RunContext& ctx, const std::function<bool(const Config&)>& pin = {});
// What to do about more variants than --max-variants, for the options that chose them: the knobs
// of the model, the warm start or --budget where those chose (--budget is refused beside the first
// two), kMaxVariantsRemedy where every valid configuration was.
std::string max_variants_remedy(const TuneOptions& o);
// `configs` without the baseline where the setting defers it.
std::vector<Config> without_deferred(const SearchSetting& s, std::vector<Config> configs);
// "; '<constraint>' rejected N" for each constraint that rejected configurations.
std::string rejections(const Enumeration& e);
// The indices of the `keep` fastest measured, fastest first, with their medians.
std::vector<std::pair<std::size_t, double>> fastest_measured(const Measured& m, std::size_t keep);

}  // namespace tune

#include "search/strategy.hpp"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "core/enum_names.hpp"
#include "search/progress_log.hpp"
#include "tune/compile.hpp"
#include "tune/errors.hpp"
#include "tune/stop.hpp"

namespace tune {

namespace {
constexpr EnumName<SearchMode> kSearchModeNames[] = {{SearchMode::kExhaustive, "exhaustive"},
                                                     {SearchMode::kHalving, "halving"},
                                                     {SearchMode::kModel, "model"}};
}  // namespace

std::string to_string(SearchMode mode) { return std::string(enum_name(kSearchModeNames, mode).value_or("exhaustive")); }

SearchMode search_mode_from_string(const std::string& text) {
  if (const auto mode = enum_value(kSearchModeNames, text)) return *mode;
  throw InputError(fmt::format("--search {}: expected {}", text, fmt::join(search_mode_names(), ", ")));
}

std::vector<std::string> search_mode_names() {
  std::vector<std::string> out;
  for (const auto& [m, name] : kSearchModeNames) out.emplace_back(name);
  return out;
}

StrategyPtr make_search_strategy(const TuneOptions& o) {
  // The model and the refine rounds run the pipeline in passes, which a halving round, a
  // compile-only run and a shard of one shape's variants do not allow.
  const bool passes_fit =
      !o.compile_only && o.search != SearchMode::kHalving && !(o.shard && o.shard->split == ShardSplit::kVariants);
  const bool model = o.search == SearchMode::kModel;
  if (model && !passes_fit)
    throw InputError(o.compile_only ? "--search model with --compile-only: the model learns from timings; drop one"
                                    : "--search model with --shard K/N of a single shape's variants: shard a sweep's "
                                      "shapes instead, or drop --search model");
  const bool warm = !o.warm_start.empty();
  StrategyPtr s = warm           ? make_warm_strategy()
                  : model        ? nullptr
                  : o.budget > 0 ? make_random_strategy()
                                 : make_exhaustive_strategy();
  if (model) s = make_model_strategy(std::move(s));
  if ((model || warm) && o.warm_refine > 0 && o.warm_refine_rounds > 0 && passes_fit) s = make_refine_strategy(std::move(s));
  if (o.search == SearchMode::kHalving) s = make_halving_strategy(std::move(s));
  return s;
}

nlohmann::ordered_json search_identity(const TuneOptions& o) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  const bool model = o.search == SearchMode::kModel;
  const bool warm = !o.warm_start.empty();
  if (model) {
    j["model_init"] = o.model_init;
    j["model_batch"] = o.model_batch;
    j["model_rounds"] = o.model_rounds;
    j["model_gain"] = o.model_gain;
  }
  if (warm) {
    nlohmann::ordered_json files = nlohmann::ordered_json::array();
    for (const auto& f : o.warm_start) files.push_back(f.string());
    j["warm_start"] = files;
    j["warm_keep"] = o.warm_keep;
    j["warm_explore"] = o.warm_explore;
  }
  if (model || warm) {
    j["warm_refine"] = o.warm_refine;
    j["warm_refine_rounds"] = o.warm_refine_rounds;
  }
  if (o.budget > 0) j["max_space"] = o.max_space;  // a space past it is sampled by drawing: other variants
  // Past it the candidates are a sample: other variants. Named only where not the default, so the
  // runs before the option keep their identity.
  if ((model || warm || o.budget > 0) && o.max_candidates != kDefaultMaxCandidates) j["max_candidates"] = o.max_candidates;
  return j;
}

bool enumerable(const TuneOptions& o, const Space& space) {
  const std::uint64_t size = space.size();
  // A product past 2^64 (size() saturates, "at least 1.8e+19") is never enumerated, whatever --max-space.
  if (size <= o.max_space && size != std::numeric_limits<std::uint64_t>::max()) return true;
  if (o.budget <= 0)
    throw InputError(
        fmt::format("{}: the space has {} configurations (the product of its parameters' values), more than "
                    "--max-space {}; pass --budget N to time a random sample of N valid ones (drawn without "
                    "enumerating the space), restrict the parameters' values, or raise --max-space",
                    space.source_name(), describe_count(size), o.max_space));
  if (static_cast<std::uint64_t>(o.budget) > o.max_space)
    throw InputError(
        fmt::format("--budget {} is more than --max-space {}: a sample that large is no smaller than the "
                    "enumeration it replaces; lower --budget or raise --max-space",
                    o.budget, o.max_space));
  return false;
}

void require_enumerated(const SearchSetting& s, const std::string& what) {
  const TuneOptions& o = s.options;
  const bool enumerate = enumerable(o, s.space);
  if (o.budget <= 0 && enumerate) return;
  throw InputError(o.budget > 0 ? what + " and --budget: both choose the variants to time; pass one of them"
                                : fmt::format("{}: the space has {} configurations, more than --max-space {}, "
                                              "and is not enumerated; restrict the space or raise --max-space",
                                              what, describe_count(s.space.size()), o.max_space));
}

std::string rejections(const Enumeration& e) {
  std::string out;
  for (const auto& [c, n] : e.rejected_by) out += fmt::format("; '{}' rejected {}", c, n);
  return out;
}

namespace {

FirstBatch enumerate_held(const SearchSetting& s, RunContext& ctx, std::size_t variants_past, const Holding& holding) {
  ProgressLog progress(s.log, "space: configurations checked against the constraints");
  const auto on_progress = [&](const SpaceProgress& p) {
    throw_if_stopped("enumerating the space of " + s.space.source_name());
    if (p.valid > variants_past)
      throw InputError(
          fmt::format("{} {}: at least {} valid configurations ({} of {} checked) are more than --max-variants {} a run "
                      "compiles and times; {}",
                      s.space.source_name(), s.shape.describe(), p.valid, p.checked, describe_count(p.of), variants_past,
                      kMaxVariantsRemedy));
    progress.tick(p.checked, p.of, fmt::format(", {} valid", p.valid));
  };
  Enumeration all = s.space.enumerate(s.shape, s.limits, s.options.max_space, on_progress, holding);
  if (all.configs.empty())
    throw ShapeError(fmt::format("no configuration of {} accepts shape {} on {}{}", s.space.source_name(),
                                 s.shape.describe(), arch_name(s.limits.compute_capability), rejections(all)));
  ctx.valid_configs = static_cast<std::int64_t>(all.valid);
  ctx.candidates = all.configs.size() < all.valid ? all.configs.size() : 0;
  FirstBatch out;
  out.how = fmt::format("{} of {} configurations pass the constraints", all.valid, all.total);
  if (ctx.candidates > 0) {
    out.how += fmt::format(", {} of them held at random", all.configs.size());
    const std::size_t drawn = std::min(all.configs.size(), holding.most);
    s.log(
        fmt::format("space: {} valid configurations, more than --max-candidates {}: the search chooses among {} of "
                    "them drawn at random (seed {}){}",
                    all.valid, holding.most, drawn, s.options.seed,
                    all.configs.size() > drawn ? fmt::format(" and {} it keeps besides (the baseline or a warm start's "
                                                             "promising ones)",
                                                             all.configs.size() - drawn)
                                               : ""));
  }
  out.all = std::move(all.configs);  // moved, not copied: a million configurations are tens of MB
  return out;
}

}  // namespace

FirstBatch enumerate_valid(const SearchSetting& s, RunContext& ctx, std::size_t variants_past) {
  return enumerate_held(s, ctx, variants_past, Holding{});
}

FirstBatch enumerate_candidates(const SearchSetting& s, RunContext& ctx, const std::function<bool(const Config&)>& pin) {
  const Config& base = s.space.baseline();
  Holding holding{s.options.max_candidates, s.options.seed, [&](const Config& c) { return c == base || (pin && pin(c)); }};
  return enumerate_held(s, ctx, std::numeric_limits<std::size_t>::max(), holding);
}

std::string max_variants_remedy(const TuneOptions& o) {
  if (o.search == SearchMode::kModel)
    return "lower --model-init (the initial design) or --model-batch, or raise --max-variants";
  if (!o.warm_start.empty()) return "lower --warm-keep or --warm-explore, or raise --max-variants";
  if (o.budget > 0)
    return fmt::format("lower --budget {} (the baseline is timed besides), split it with --shard, or raise --max-variants",
                       o.budget);
  return kMaxVariantsRemedy;
}

std::vector<Config> without_deferred(const SearchSetting& s, std::vector<Config> configs) {
  if (s.defer_baseline) std::erase(configs, s.space.baseline());
  return configs;
}

std::vector<std::pair<std::size_t, double>> fastest_measured(const Measured& m, std::size_t keep) {
  std::vector<std::size_t> passed;
  std::vector<double> medians;
  for (std::size_t i = 0; i < m.median_us.size(); ++i)
    if (m.median_us[i]) {
      passed.push_back(i);
      medians.push_back(*m.median_us[i]);
    }
  std::vector<std::pair<std::size_t, double>> top;
  for (const std::size_t k : best_by_median(medians, keep)) top.emplace_back(passed[k], medians[k]);
  return top;
}

}  // namespace tune

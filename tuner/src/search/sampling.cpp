// The configurations a --budget or --warm-start run times, and successive halving's selection
// (tune/sampling.hpp).
#include "tune/sampling.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include <fmt/format.h>

#include "tune/errors.hpp"
#include "tune/io.hpp"

namespace tune {

std::vector<std::size_t> best_by_median(const std::vector<double>& medians, std::size_t keep) {
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < medians.size(); ++i)
    if (std::isfinite(medians[i]) && medians[i] > 0) order.push_back(i);  // NaN would break the sort's ordering
  std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return medians[a] < medians[b]; });
  order.resize(std::min(keep, order.size()));
  return order;
}

namespace {

// Draws k of `pool` without replacement into its first k places: a partial Fisher-Yates shuffle on
// mt19937_64 from `seed` (its own stream, not the inputs'; portable: no library distribution).
void draw_to_front(std::vector<std::size_t>& pool, std::size_t k, std::uint64_t seed) {
  std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15ULL);
  for (std::size_t i = 0; i < k; ++i) std::swap(pool[i], pool[i + rng() % (pool.size() - i)]);
}

}  // namespace

std::vector<Config> sample_configs(const std::vector<Config>& all, const Config& baseline, int budget, std::uint64_t seed) {
  if (budget <= 0 || static_cast<std::size_t>(budget) >= all.size()) return all;
  std::vector<std::size_t> order(all.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  const auto k = static_cast<std::size_t>(budget);
  draw_to_front(order, k, seed);
  order.resize(k);
  const auto base = std::find(all.begin(), all.end(), baseline);
  if (base != all.end()) {
    const auto bi = static_cast<std::size_t>(base - all.begin());
    if (std::find(order.begin(), order.end(), bi) == order.end()) order.push_back(bi);
  }
  std::sort(order.begin(), order.end());
  std::vector<Config> out;
  out.reserve(order.size());
  for (const std::size_t i : order) out.push_back(all[i]);
  return out;
}

WarmPrior warm_prior(const std::string& problem, const Shape& shape, const std::vector<std::filesystem::path>& files) {
  // Each variant's time relative to its run's best, from the nearest shape that timed it: one of
  // this shape's dtypes first (a bfloat16 run's times say little of float32's), then the nearest dims.
  struct Prior {
    int other_dtypes;
    double distance;
    double ratio;
    auto operator<=>(const Prior&) const = default;
  };
  std::map<std::string, Prior> prior;
  std::map<std::string, nlohmann::ordered_json> params;  // of the run each prior is from
  for (const auto& file : files) {
    const RunRecord run = read_result(file);
    if (run.problem != problem)
      throw InputError(fmt::format("{}: --warm-start: a result of problem {}, not {}; pass results of other shapes of {}",
                                   file.string(), run.problem, problem, problem));
    double best = 0;
    for (const auto& v : run.variants)
      if (v.status == Status::kPassed && v.timing && std::isfinite(v.timing->median_us) && v.timing->median_us > 0)
        best = best > 0 ? std::min(best, v.timing->median_us) : v.timing->median_us;
    if (best <= 0) continue;  // nothing timed there: it says nothing
    double distance = 0;
    for (const auto& [dim, value] : shape.dims()) {
      const double theirs = static_cast<double>(run.shape.has(dim) ? run.shape.at(dim) : value);
      distance += std::abs(std::log2(static_cast<double>(value) / theirs));
    }
    int other_dtypes = 0;
    for (const auto& [name, dtype] : shape.dtypes())
      if (run.shape.has_dtype(name) && run.shape.dtype(name) != dtype) ++other_dtypes;
    for (const auto& v : run.variants) {
      if (v.status != Status::kPassed || !v.timing || !(v.timing->median_us > 0)) continue;
      const Prior p{other_dtypes, distance, v.timing->median_us / best};
      const auto it = prior.find(v.name);
      if (it != prior.end() && !(p < it->second)) continue;
      prior[v.name] = p;
      params[v.name] = v.params;
    }
  }
  WarmPrior out;
  for (const auto& [name, p] : prior) out.emplace(name, WarmKnown{p.ratio, std::move(params[name])});
  return out;
}

WarmChoice warm_choice(const std::vector<Config>& all, const Config& baseline, const Space& space, const WarmPrior& prior,
                       double keep, int explore, std::uint64_t seed) {
  WarmChoice out;
  std::vector<char> chosen(all.size(), 0);
  std::vector<std::size_t> rest;
  for (std::size_t i = 0; i < all.size(); ++i) {
    const auto it = prior.find(space.name(all[i]));
    if (it != prior.end() && it->second.ratio <= keep) {
      chosen[i] = 1;
      ++out.promising;
    } else if (!(all[i] == baseline)) {
      rest.push_back(i);
    }
  }
  // The exploration: drawn from the rest as sample_configs draws.
  const std::size_t k = std::min(rest.size(), static_cast<std::size_t>(std::max(0, explore)));
  draw_to_front(rest, k, seed);
  for (std::size_t i = 0; i < k; ++i) chosen[rest[i]] = 1;
  out.explored = static_cast<int>(k);
  for (std::size_t i = 0; i < all.size(); ++i)
    if (chosen[i] || all[i] == baseline) out.configs.push_back(all[i]);
  // A choice of half the space or more saves little and risks the rest: time it all. This is
  // where the files know another space (few names in common) or this one is small.
  if (2 * out.configs.size() >= all.size() && out.configs.size() < all.size()) {
    out.configs = all;
    out.explored = static_cast<int>(rest.size());
    out.whole_space = true;
  }
  return out;
}

WarmChoice warm_configs(const std::vector<Config>& all, const Config& baseline, const Space& space,
                        const std::string& problem, const Shape& shape, const std::vector<std::filesystem::path>& files,
                        double keep, int explore, std::uint64_t seed) {
  return warm_choice(all, baseline, space, warm_prior(problem, shape, files), keep, explore, seed);
}

}  // namespace tune

#pragma once
// Which configurations a --budget or --warm-start run times, and successive halving's selection.
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tune/shape.hpp"
#include "tune/space.hpp"

namespace tune {

// Successive halving's selection: the indices of the `keep` smallest medians (ties by index), in
// ascending order of median. Medians that are not finite and positive are left out; keep is
// clamped to the count.
std::vector<std::size_t> best_by_median(const std::vector<double>& medians, std::size_t keep);

// The configurations a run with --budget times: `budget` of `all` drawn without replacement by a
// partial Fisher-Yates shuffle on mt19937_64(seed) (portable: no library distribution), plus the
// baseline when it is valid and was not drawn, in the order of `all`. budget <= 0 or >= size: all.
std::vector<Config> sample_configs(const std::vector<Config>& all, const Config& baseline, int budget, std::uint64_t seed);

// The configurations a run with --warm-start times (issue 24), in the order of `all`: those whose
// variant timed within `keep` x the best at the nearest shape (sum of |log2| of the dimensions'
// ratios) among `files` that timed it, `explore` others drawn as sample_configs draws, and the
// baseline. Every file must be a result of `problem` (read_result validates it). Throws InputError.
struct WarmChoice {
  std::vector<Config> configs;
  int promising = 0;  // chosen for their times in the files
  int explored = 0;   // drawn from the rest
  // The choice was half the space or more, so all of it is timed (explored: every other one).
  bool whole_space = false;
};
// The two steps of warm_configs. What the files say of each variant (by name): its time relative to
// its run's best, at the nearest shape that timed it. Then the choice from `all` (the valid
// configurations, or those held of them).
struct WarmKnown {
  double ratio = 0;               // to its run's best
  nlohmann::ordered_json params;  // its parameters, as that run recorded them
};
using WarmPrior = std::map<std::string, WarmKnown>;
WarmPrior warm_prior(const std::string& problem, const Shape& shape, const std::vector<std::filesystem::path>& files);
WarmChoice warm_choice(const std::vector<Config>& all, const Config& baseline, const Space& space, const WarmPrior& prior,
                       double keep, int explore, std::uint64_t seed);
WarmChoice warm_configs(const std::vector<Config>& all, const Config& baseline, const Space& space,
                        const std::string& problem, const Shape& shape, const std::vector<std::filesystem::path>& files,
                        double keep, int explore, std::uint64_t seed);

}  // namespace tune

// `tune header`: result files of one problem -> one merged header, written atomically.
#include <fmt/format.h>

#include "tune/errors.hpp"
#include "tune/io.hpp"
#include "tune/tune.hpp"

namespace tune {

std::string merge_result_files(const std::vector<std::filesystem::path>& files,
                               const std::optional<std::filesystem::path>& config, bool allow_synthetic) {
  if (files.empty()) throw InputError("no result files given; pass at least one results JSON");
  std::vector<NamedResult> results;
  for (const auto& f : files) {
    results.push_back({f.string(), read_problem_result(f)});
    const auto& shard = results.back().run.context.shard;
    if (shard && shard->split == ShardSplit::kVariants)
      throw InputError(
          fmt::format("{}: one shard of a shape's variants (tune --shard); combine the shards with tune merge "
                      "and pass its output",
                      f.string()));
  }
  return generate_merged_header(results, load_space(problem_spec_of(results.front().run), config), allow_synthetic);
}

}  // namespace tune

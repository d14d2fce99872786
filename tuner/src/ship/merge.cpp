// `tune header`: result files of one problem -> one merged header, written atomically.
#include <fmt/format.h>

#include "ship/header_parts.hpp"
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
    header_parts::check_whole_shape(results.back().run, f.string());
  }
  return generate_merged_header(results, load_space(problem_spec_of(results.front().run), config), allow_synthetic);
}

}  // namespace tune

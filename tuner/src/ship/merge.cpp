// `tune header`: result files of one problem -> one merged header, written atomically.
#include <functional>
#include <string>

#include <fmt/format.h>

#include "ship/header_parts.hpp"
#include "tune/errors.hpp"
#include "tune/io.hpp"
#include "tune/problem.hpp"
#include "tune/problem_space.hpp"
#include "tune/tune.hpp"

namespace tune {

std::string merge_result_files(const std::vector<std::filesystem::path>& files,
                               const std::optional<std::filesystem::path>& config, bool allow_synthetic,
                               const std::function<void(const std::string&)>& note) {
  if (files.empty()) throw InputError("no result files given; pass at least one results JSON");
  std::vector<NamedResult> results;
  for (const auto& f : files) {
    results.push_back({f.string(), read_problem_result(f)});
    header_parts::check_whole_shape(results.back().run, f.string());
  }
  const std::string spec = problem_spec_of(results.front().run);
  const Space space = load_space(spec, config);
  std::string header = generate_merged_header(results, space, allow_synthetic);
  if (note) {
    const std::string now = sources_hash(space, find_problem(spec));
    for (const auto& r : results)
      if (const std::string n = header_parts::changed_sources_note(r.run, r.file, now); !n.empty()) note(n);
  }
  return header;
}

}  // namespace tune

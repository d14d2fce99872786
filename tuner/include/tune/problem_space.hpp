#pragma once
// A problem's space and a run's shape, resolved from what the user gave: the problem (a name or
// a folder), an optional space file, the shape options.
#include <cstdint>
#include <exception>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tune/problem.hpp"
#include "tune/shape.hpp"
#include "tune/space.hpp"

namespace tune {

class Problem;
struct RunRecord;

// Loads a problem's space: the given file (a space file or another problem.json; its template is
// found beside it, else in the problem's template folder), or the problem's own problem.json.
// Checks that every launch argument names a tensor of the problem, 'out' or a scratch buffer.
class Space load_space(const std::string& problem, const std::optional<std::filesystem::path>& file);
void check_launch_args(const class Problem& problem, const class Space& space);
// context.config_file of a run with the problem's own space: "<problem.json> (problem)".
inline constexpr std::string_view kProblemFileMark = " (problem)";
// How to find the problem of a recorded run: its name on the problem path, else the problem file
// the run recorded (context.config_file "<file> (problem)"), so a user's folder off the path works.
// Throws InputError when neither is found, or when the recorded file describes another problem.
std::string problem_spec_of(const struct RunRecord& run);
std::string problem_spec_of(const std::string& problem, const std::string& config_file);
// The space a recorded run used: its own file (--config) when that was not the problem's and it is
// still there, else the problem's.
class Space load_run_space(const struct RunRecord& run);

// What a run's kernels came from: the space with its templates, and the problem file (the journal's
// identity and context.source_hash). tune check --write compares it.
std::string sources_hash(const class Space& space, const class Problem& problem);
// The shape of a run: the user's dimensions over the space's defaults, validated.
Shape resolve_shape(const class Problem& problem, const class Space& space,
                    const std::vector<std::pair<std::string, std::int64_t>>& dims);

// A problem, its space and a shape of it, resolved once (load_space, resolve_shape): what a run,
// a sweep's bookkeeping and the devices' queue need of an item before a device is involved.
struct ProblemShape {
  const Problem* problem = nullptr;           // owned by the problem registry
  std::shared_ptr<const Space> shared_space;  // one for the shapes of a sweep that load the same space
  const Space& space;                         // *shared_space
  Shape shape;
  WorkCounts counts;  // problem->counts(shape): the sweep's transfer order and the run's floors
};
// The spaces a plan has loaded, by problem and --config: a sweep of thousands of shapes loads each
// space once (a space per shape held hundreds of kilobytes and its files read again).
using SpaceCache = std::map<std::string, std::shared_ptr<const Space>>;
ProblemShape resolve_problem_shape(const std::string& problem, const std::optional<std::filesystem::path>& config,
                                   const std::vector<std::pair<std::string, std::int64_t>>& dims,
                                   SpaceCache* cache = nullptr);

// A shape to run, resolved once when the tune is planned (resolve_item) and shared by everything
// that runs it: its run, the devices' queue, the baseline's early compile. A resolution that failed
// keeps its error, which the shape's run reports in its turn (after the checks that come first).
struct ShapeResolution {
  std::shared_ptr<const ProblemShape> at;
  std::exception_ptr error;
  // The resolved shape; rethrows the resolution's error.
  [[nodiscard]] const ProblemShape& get() const;
  [[nodiscard]] bool resolved() const { return at != nullptr; }
};
// resolve_problem_shape, its error kept rather than thrown.
ShapeResolution resolve_item(const std::string& problem, const std::optional<std::filesystem::path>& config,
                             const std::vector<std::pair<std::string, std::int64_t>>& dims, SpaceCache* cache = nullptr);

}  // namespace tune

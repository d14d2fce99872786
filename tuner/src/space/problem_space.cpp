// A problem's space and a run's shape, resolved from what the user gave (problem name or folder, an
// optional space file, the shape options): read once per run by plan_run (run/run_plan.cpp).
#include "tune/problem_space.hpp"

#include <algorithm>
#include <ranges>

#include <fmt/format.h>

#include "tune/errors.hpp"
#include "tune/hash.hpp"
#include "tune/problem.hpp"
#include "tune/record.hpp"
#include "tune/space.hpp"

namespace tune {

Space load_space(const std::string& problem_spec, const std::optional<std::filesystem::path>& file) {
  const Problem& problem = find_problem(problem_spec);
  const auto own_template = (problem.dir() / problem.json().value("template", std::string())).parent_path();
  Space s = [&] {
    if (!file) return Space::parse(problem.json(), problem.file().string(), problem.dir());
    std::error_code ec;
    const auto path = std::filesystem::is_directory(*file, ec) ? *file / "problem.json" : *file;
    return Space::load(path, {own_template});
  }();
  if (s.problem() != problem.name())
    throw ConfigError(fmt::format("{}: describes problem '{}', not '{}'", s.source_name(), s.problem(), problem.name()));
  check_launch_args(problem, s);
  return s;
}

std::string problem_spec_of(const RunRecord& run) { return problem_spec_of(run.problem, run.context.config_file); }

std::string problem_spec_of(const std::string& problem, const std::string& f) {
  try {
    (void)find_problem(problem);
    return problem;
  } catch (const InputError&) {
    std::error_code ec;
    const std::string file = f.substr(0, f.size() - std::min(f.size(), kProblemFileMark.size()));
    if (!f.ends_with(kProblemFileMark) || !std::filesystem::is_regular_file(file, ec)) throw;
    // The recorded file must still describe the recorded problem (issue 34 #20): a results file
    // whose config_file names another problem's folder would be checked against that one.
    if (const std::string name(find_problem(file).name()); name != problem)
      throw InputError(
          fmt::format("the results are problem {} but {} describes {}; pass --problem-path with the folder "
                      "that holds problem {}",
                      problem, file, name, problem));
    return file;
  }
}

Space load_run_space(const RunRecord& run) {
  std::optional<std::filesystem::path> space_file;
  const std::string& cf = run.context.config_file;
  if (!cf.empty() && !cf.ends_with(kProblemFileMark) && std::filesystem::is_regular_file(cf)) space_file = cf;
  return load_space(problem_spec_of(run), space_file);
}

void check_launch_args(const Problem& problem, const Space& space) {
  std::vector<std::string> known{"out"};
  for (const auto& t : problem.json().at("tensors"))  // an output named 'out' is listed once
    if (const auto name = t.at("name").get<std::string>(); std::find(known.begin(), known.end(), name) == known.end())
      known.push_back(name);
  // A launch arg resolves to the first buffer of its name: a scratch buffer named like a tensor (or
  // 'out', the output's name in launch args) would shadow it or be shadowed (issue 34 #17).
  for (const auto& b : space.scratch_names()) {
    if (std::find(known.begin(), known.end(), b) != known.end())
      throw ConfigError(fmt::format("{}: scratch buffer '{}' has the name of {} of problem {}; give it a name of its own",
                                    space.source_name(), b, b == "out" ? "the output ('out')" : "a tensor", problem.name()));
    known.push_back(b);
  }
  for (const auto& [kernel, args] : space.launch_args())
    for (const auto& a : args)
      if (std::find(known.begin(), known.end(), a) == known.end())
        throw ConfigError(
            fmt::format("{}: launch '{}' argument '{}' is not a tensor of problem {}, 'out' or a scratch "
                        "buffer (known: {})",
                        space.source_name(), kernel, a, problem.name(), fmt::join(known, ", ")));
}

namespace {

// The dtype variables of the shape options (--T bfloat16), else their defaults; check_shape refuses
// one missing without default.
Shape resolve_dtypes(const Problem& problem, const std::vector<std::pair<std::string, std::int64_t>>& dims) {
  Shape shape;
  for (const DTypeVariable& var : problem.dtype_variables()) {
    const auto it = std::find_if(dims.begin(), dims.end(), [&](const auto& p) { return p.first == var.name; });
    if (it == dims.end()) continue;
    const auto t = dtype_of_flag_value(it->second);
    const std::string allowed = fmt::format("{}", fmt::join(var.values | std::views::transform(dtype_name), ", "));
    if (!t) throw ShapeError(fmt::format("--{} {}: expected a dtype ({})", var.name, it->second, allowed));
    shape.set_dtype(var.name, *t);
  }
  problem.add_dtype_defaults(shape);
  return shape;
}

}  // namespace

Shape resolve_shape(const Problem& problem, const Space& space,
                    const std::vector<std::pair<std::string, std::int64_t>>& dims) {
  auto names = problem.dims();
  for (const auto& v : problem.dtype_variables()) names.push_back(v.name);
  for (const auto& [k, v] : dims)
    if (std::find(names.begin(), names.end(), k) == names.end())
      throw ShapeError(
          fmt::format("--{} is not a dimension of problem {} (it takes {})", k, problem.name(), fmt::join(names, ", ")));
  Shape shape = resolve_dtypes(problem, dims);
  for (const auto& d : problem.dims()) {
    auto it = std::find_if(dims.begin(), dims.end(), [&](const auto& p) { return p.first == d; });
    if (it != dims.end() && dtype_of_flag_value(it->second))
      throw ShapeError(
          fmt::format("--{} {}: a dimension is a positive integer", d, dtype_name(*dtype_of_flag_value(it->second))));
    if (it != dims.end()) {
      shape.set(d, it->second);
    } else if (auto def = space.default_dims().find(d); def != space.default_dims().end()) {
      shape.set(d, def->second);
    } else {
      throw ShapeError(fmt::format("problem {} needs --{} (no default in {})", problem.name(), d, space.source_name()));
    }
  }
  problem.check_shape(shape);
  space.check_shape(shape);
  return shape;
}

std::string sources_hash(const Space& space, const Problem& problem) {
  return content_hash({space.source_hash(), problem.json().dump()});
}

ProblemShape resolve_problem_shape(const std::string& problem, const std::optional<std::filesystem::path>& config,
                                   const std::vector<std::pair<std::string, std::int64_t>>& dims, SpaceCache* cache) {
  const Problem& p = find_problem(problem);
  const std::string key = problem + '\n' + (config ? config->string() : std::string());
  std::shared_ptr<const Space> space;
  if (cache)
    if (const auto it = cache->find(key); it != cache->end()) space = it->second;
  if (!space) {
    space = std::make_shared<const Space>(load_space(problem, config));
    if (cache) cache->emplace(key, space);
  }
  Shape shape = resolve_shape(p, *space, dims);
  const WorkCounts counts = p.counts(shape);
  return {&p, space, *space, std::move(shape), counts};
}

const ProblemShape& ShapeResolution::get() const {
  if (error) std::rethrow_exception(error);
  return *at;
}

ShapeResolution resolve_item(const std::string& problem, const std::optional<std::filesystem::path>& config,
                             const std::vector<std::pair<std::string, std::int64_t>>& dims, SpaceCache* cache) {
  try {
    return {std::make_shared<const ProblemShape>(resolve_problem_shape(problem, config, dims, cache)), nullptr};
  } catch (...) {  // reported by the shape's run in its turn, or by the sweep's check of its items
    return {nullptr, std::current_exception()};
  }
}

}  // namespace tune

// `tune export nvrtc`: the sources of a problem as NVRTC gets them and, per results file, the
// compile options and the finalists of its strict re-measure, for bench/'s NVRTC build.
#include "tune/export_nvrtc.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <string_view>

#include <fmt/format.h>

#include "tune/dtype.hpp"
#include "tune/errors.hpp"
#include "tune/io.hpp"
#include "tune/problem.hpp"
#include "tune/problem_space.hpp"
#include "tune/space.hpp"

namespace tune {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

// B4_N64_C64_H32 of B4_N64_C64_H32.json or B4_N64_C64_H32.json.gz.
std::string shape_stem(const fs::path& file) {
  const std::string name = file.filename().string();
  if (name.ends_with(".json.gz")) return name.substr(0, name.size() - std::string_view(".json.gz").size());
  return file.stem().string();
}

// A path as a build system's depfile names it.
std::string absolute_path(const fs::path& p) {
  std::error_code ec;
  const fs::path c = fs::weakly_canonical(fs::absolute(p), ec);
  return (ec ? fs::absolute(p).lexically_normal() : c).string();
}

std::vector<std::string> split(std::string_view text, char sep) {
  std::vector<std::string> out;
  for (std::size_t pos = 0;;) {
    const std::size_t at = text.find(sep, pos);
    out.emplace_back(text.substr(pos, at == std::string_view::npos ? std::string_view::npos : at - pos));
    if (at == std::string_view::npos) return out;
    pos = at + 1;
  }
}

// A record older than the problem's dtype variables (its shape lacks one that has a default) was
// tuned in each variable's default: its name expressions get the default's CUDA type where the
// launch's template_args name the variable, as tune lowers them now (issue 35). Others unchanged.
class NameExpressions {
 public:
  NameExpressions(const Problem& problem, const Space& space, const Shape& recorded) {
    for (const DTypeVariable& v : problem.dtype_variables())
      if (v.default_value && !recorded.has_dtype(v.name)) missing_.emplace(v.name, *v.default_value);
    for (const auto& l : space.expressions().launches) by_kernel_[l.kernel] = l.template_args;
  }

  [[nodiscard]] std::string operator()(const std::string& expression) const {
    const std::size_t open = expression.find('<');
    if (missing_.empty() || open == std::string::npos || open + 1 == expression.size()) return expression;
    const auto targs = by_kernel_.find(expression.substr(0, open));
    if (targs == by_kernel_.end()) return expression;
    std::string_view args = std::string_view(expression).substr(open + 1);
    while (!args.empty() && args.back() == '>') args.remove_suffix(1);
    const std::vector<std::string> values = split(args, ',');
    const auto given = std::count_if(targs->second.begin(), targs->second.end(),
                                     [&](const std::string& t) { return !missing_.contains(t); });
    if (static_cast<std::ptrdiff_t>(values.size()) != given) return expression;
    std::vector<std::string> full;
    auto value = values.begin();
    for (const std::string& t : targs->second) {
      const auto m = missing_.find(t);
      full.push_back(m != missing_.end() ? std::string(dtype_cuda_type(m->second)) : *value++);
    }
    return fmt::format("{}<{}>", expression.substr(0, open), fmt::join(full, ","));
  }

 private:
  std::map<std::string, DType> missing_;
  std::map<std::string, std::vector<std::string>> by_kernel_;
};

Json launch_json(const Json& launch, const NameExpressions& names) {
  return Json{{"name_expression", names(launch.at("kernel").get<std::string>())},
              {"grid", launch.at("grid")},
              {"block", launch.at("block")},
              {"dynamic_smem_bytes", launch.value("dynamic_smem_bytes", 0)}};
}

// The variants tune re-measured strictly, in the order it interleaves them: by search median,
// stable on the variants' order (fastest_passed; the baseline, appended last, sorts in by its median).
Json finalists_json(const RunRecord& run, const NameExpressions& names) {
  std::vector<const VariantRecord*> finalists;
  for (const VariantRecord& v : run.variants)
    if (v.search_timing && v.timing) finalists.push_back(&v);
  std::stable_sort(finalists.begin(), finalists.end(), [](const VariantRecord* a, const VariantRecord* b) {
    return a->search_timing->median_us < b->search_timing->median_us;
  });
  Json out = Json::array();
  for (const VariantRecord* v : finalists) {
    Json launches = Json::array();
    for (const Json& l : v->launches) launches.push_back(launch_json(l, names));
    out.push_back({{"name", v->name},
                   {"baseline", v->baseline},
                   {"strict_median_us", v->timing->median_us},
                   {"search_median_us", v->search_timing->median_us},
                   {"launches", std::move(launches)}});
  }
  return out;
}

Json record_json(const fs::path& file, const Problem& problem, const Space& space) {
  const RunRecord run = read_result(file);
  if (run.problem != problem.name())
    throw InputError(fmt::format("{}: results of problem {}, not {}; pass results of {} (or --problem {})", file.string(),
                                 run.problem, problem.name(), problem.name(), run.problem));
  const NameExpressions names(problem, space, run.shape);
  return Json{{"file", file.string()},
              {"shape_name", shape_stem(file)},
              {"compile_options", run.context.compile_options},
              {"finalists", finalists_json(run, names)}};
}

Json sources_json(const KernelSources& sources) {
  Json headers = Json::array();
  for (const auto& [name, text] : sources.headers) headers.push_back({{"name", name}, {"text", text}});
  return Json{{"template", {{"name", sources.main_name}, {"text", sources.main}}}, {"headers", std::move(headers)}};
}

}  // namespace

Json export_nvrtc(const std::vector<fs::path>& results, const std::string& problem_spec) {
  if (results.empty() && problem_spec.empty())
    throw InputError("tune export nvrtc: no results files and no --problem; pass results JSON files of one problem, or "
                     "--problem for its sources alone");
  const std::string spec = problem_spec.empty() ? problem_spec_of(read_result(results.front())) : problem_spec;
  const Problem& problem = find_problem(spec);
  const Space space = load_space(spec, std::nullopt);
  const auto sources = space.sources();
  if (!sources) throw std::logic_error("export_nvrtc: the problem's space was parsed without its template files");

  std::vector<fs::path> files = results;
  std::stable_sort(files.begin(), files.end(), [](const fs::path& a, const fs::path& b) { return shape_stem(a) < shape_stem(b); });
  Json records = Json::array();
  for (const auto& f : files) records.push_back(record_json(f, problem, space));

  Json read = Json::array({absolute_path(problem.file())});
  for (const auto& f : sources->files) read.push_back(absolute_path(f));
  for (const auto& f : results) read.push_back(absolute_path(f));
  Json out{{"kind", "tune.export_nvrtc"}, {"schema_version", 1}, {"problem", problem.name()}};
  Json sources_part = sources_json(*sources);
  for (auto& [k, v] : sources_part.items()) out[k] = std::move(v);
  out["files_read"] = std::move(read);
  out["records"] = std::move(records);
  return out;
}

}  // namespace tune

// `tune export nvrtc`: the sources of a problem as NVRTC gets them and, per results file, the
// compile options and the finalists of its strict re-measure, for bench/'s NVRTC build.
#include "tune/export_nvrtc.hpp"

#include <algorithm>
#include <functional>
#include <optional>
#include <string_view>

#include <fmt/format.h>

#include "ship/header_parts.hpp"
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

// A variant's launches with the name expressions tune compiles for it now: its configuration
// lowered again, so a record older than the problem's dtype variables names each variable's default
// type (issue 35); grid, block and shared memory as recorded. A finalist is lowered and checked as
// the header's entries are (lower_recorded: its shape, constraints, kernels and geometry); any other
// variant of --all-variants is only lowered.
Json launches_json(const VariantRecord& v, const RunRecord& run, const Space& space, const Problem* finalist_of,
                   const fs::path& file) {
  const Lowered lowered = finalist_of
                              ? header_parts::lower_recorded(run, v, space, *finalist_of, file.string())
                              : space.lower(space.from_record(v.params, file.string(), v.name), run.shape, run.limits());
  if (lowered.launches.size() != v.launches.size())
    throw InputError(
        fmt::format("{}: variant {} records {} launches, {} lowers it to {}; pass results of this problem "
                    "folder",
                    file.string(), v.name, v.launches.size(), space.source_name(), lowered.launches.size()));
  Json out = Json::array();
  for (std::size_t l = 0; l < v.launches.size(); ++l) {
    const Json& launch = v.launches[l];
    out.push_back({{"name_expression", lowered.launches[l].name_expression},
                   {"grid", launch.at("grid")},
                   {"block", launch.at("block")},
                   {"dynamic_smem_bytes", launch.value("dynamic_smem_bytes", 0)}});
  }
  return out;
}

// The variants tune re-measured strictly, in the order it interleaves them: by search median,
// stable on the variants' order (fastest_passed; the baseline, appended last, sorts in by its median).
Json finalists_json(const RunRecord& run, const Space& space, const Problem& problem, const fs::path& file) {
  std::vector<const VariantRecord*> finalists;
  for (const VariantRecord& v : run.variants)
    if (v.search_timing && v.timing) finalists.push_back(&v);
  std::stable_sort(finalists.begin(), finalists.end(), [](const VariantRecord* a, const VariantRecord* b) {
    return a->search_timing->median_us < b->search_timing->median_us;
  });
  Json out = Json::array();
  for (const VariantRecord* v : finalists) {
    out.push_back({{"name", v->name},
                   {"baseline", v->baseline},
                   {"strict_median_us", v->timing->median_us},
                   {"search_median_us", v->search_timing->median_us},
                   {"launches", launches_json(*v, run, space, &problem, file)}});
  }
  return out;
}

// Every variant of the record, in its order, with the name expressions tune compiles for it now
// (a variant that recorded no launches, as one refused before it was lowered, lists none).
Json variants_json(const RunRecord& run, const Space& space, const fs::path& file) {
  Json out = Json::array();
  for (const VariantRecord& v : run.variants) {
    out.push_back({{"name", v.name},
                   {"baseline", v.baseline},
                   {"status", to_string(v.status)},
                   {"reason", v.reason},
                   {"launches", v.launches.empty() ? Json::array() : launches_json(v, run, space, nullptr, file)}});
  }
  return out;
}

// Its strict medians are of the sources it was tuned on: a build of today's ones says so (`note`).
Json record_json(const fs::path& file, const Problem& problem, const Space& space, bool all_variants,
                 const std::string& sources_now, const std::function<void(const std::string&)>& note) {
  RunRecord run = read_result(file);
  header_parts::check_whole_shape(run, file.string());
  if (const std::string n = header_parts::changed_sources_note(run, file.string(), sources_now); note && !n.empty()) note(n);
  if (run.problem != problem.name())
    throw InputError(fmt::format("{}: results of problem {}, not {}; pass results of {} (or --problem {})", file.string(),
                                 run.problem, problem.name(), problem.name(), run.problem));
  bind_recorded_dtypes(problem, run, run.shape, file);  // as every reader of a problem's results
  Json out{{"file", file.string()},
           {"shape_name", shape_stem(file)},
           {"compile_options", run.context.compile_options},
           {"finalists", finalists_json(run, space, problem, file)}};
  if (all_variants) out["variants"] = variants_json(run, space, file);
  return out;
}

Json sources_json(const KernelSources& sources) {
  Json headers = Json::array();
  for (const auto& [name, text] : sources.headers) headers.push_back({{"name", name}, {"text", text}});
  return Json{{"template", {{"name", sources.main_name}, {"text", sources.main}}}, {"headers", std::move(headers)}};
}

}  // namespace

Json export_nvrtc(const std::vector<fs::path>& results, const std::string& problem_spec, bool all_variants,
                  const std::function<void(const std::string&)>& note) {
  if (results.empty() && problem_spec.empty())
    throw InputError(
        "tune export nvrtc: no results files and no --problem; pass results JSON files of one problem, or "
        "--problem for its sources alone");
  const std::string spec = problem_spec.empty() ? problem_spec_of(read_result(results.front())) : problem_spec;
  const Problem& problem = find_problem(spec);
  const Space space = load_space(spec, std::nullopt);
  const auto sources = space.sources();
  if (!sources) throw std::logic_error("export_nvrtc: the problem's space was parsed without its template files");

  std::vector<fs::path> files = results;
  std::stable_sort(files.begin(), files.end(),
                   [](const fs::path& a, const fs::path& b) { return shape_stem(a) < shape_stem(b); });
  Json records = Json::array();
  const std::string sources_now = sources_hash(space, problem);
  for (const auto& f : files) records.push_back(record_json(f, problem, space, all_variants, sources_now, note));

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

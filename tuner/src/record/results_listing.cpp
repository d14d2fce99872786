// `tune results --json`: the results format's one reader (read_result's validation) handed to the
// readers in Python, with the fields they would otherwise derive again (issue 38, item 2).
#include <string>
#include <system_error>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/json_file.hpp"
#include "tune/device.hpp"
#include "tune/dtype.hpp"
#include "tune/errors.hpp"
#include "tune/io.hpp"
#include "tune/problem_space.hpp"
#include "tune/record.hpp"
#include "tune/winner.hpp"

namespace tune {
namespace {

using Json = nlohmann::ordered_json;

// "B1_N64_T=..." as the report groups shapes: each name followed by its value, joined by "_".
std::string shape_tag(const Json& shape) {
  std::string tag;
  for (const auto& [k, v] : shape.items()) {
    if (!tag.empty()) tag += '_';
    tag += k + (v.is_string() ? v.get<std::string>() : v.dump());
  }
  return tag;
}

// A results file given by name, read and validated as a report folder's files are.
ReportResult read_listed(const std::filesystem::path& file) {
  Json raw = json_file::read(file);
  try {
    RunRecord run = run_from_json(raw);
    return {file, std::move(raw), std::move(run)};
  } catch (const InputError& e) {
    throw InputError(file.string() + ": " + e.what());
  } catch (const Json::exception& e) {
    throw InputError(fmt::format("{}: malformed results file ({})", file.string(), e.what()));
  }
}

// One validated file: the record as written (`run`), and what readers derive from it.
Json listing_entry(const ReportResult& r) {
  const std::filesystem::path& file = r.file;
  // The listing is JSON, whose strings are UTF-8: a name that is not cannot be handed over as it is.
  if (!json_file::is_utf8(file.string()))
    throw InputError(fmt::format("{}: the file's path is not UTF-8 text (each such byte shown as U+FFFD); rename it",
                                 json_file::printable(file.string())));
  const Json& raw = r.raw;
  const RunRecord& run = r.run;
  Shape shape = run.shape;  // dtype variables the record lacks at their defaults, as read_problem_result
  const Problem* problem = nullptr;
  try {
    problem = &find_problem(problem_spec_of(run));
  } catch (const InputError&) {  // a problem not on this machine: the shape as recorded
  }
  const bool problem_found = problem != nullptr;
  if (problem) bind_recorded_dtypes(*problem, run, shape, file);
  std::string why;
  const bool measured = measured_on_gpu(run, &why);
  Json e = Json::object();
  e["file"] = file.string();
  e["device_slug"] = raw.at("device").is_null() ? Json(nullptr) : Json(device_slug(run.device->name));
  e["shape_tag"] = shape_tag(raw.at("shape"));
  e["shape"] = shape_to_json(shape);
  // The problem's dtype variables at their defaults ({} when it is not found): a reader fills a shape
  // written without one (a torch_baseline.json entry older than dtypes) to compare it with `shape`.
  Json defaults = Json::object();
  if (problem)
    for (const auto& var : problem->dtype_variables())
      if (var.default_value) defaults[var.name] = std::string(dtype_name(*var.default_value));
  e["dtype_defaults"] = std::move(defaults);
  e["problem_found"] = problem_found;
  e["measured_on_gpu"] = measured;
  e["not_measured"] = measured ? Json(nullptr) : Json(why);
  e["run"] = raw;
  return e;
}

}  // namespace

Json results_listing(const std::vector<std::filesystem::path>& paths) {
  Json records = Json::array();
  for (const auto& p : paths) {
    std::error_code ec;
    if (std::filesystem::is_directory(p, ec)) {
      for (const auto& r : read_report_results(p)) records.push_back(listing_entry(r));
    } else if (std::filesystem::is_regular_file(p, ec)) {
      records.push_back(listing_entry(read_listed(p)));
    } else {
      throw InputError(
          fmt::format("{}: no such file or folder; pass a results folder (<gpu>/<problem>/<shape>.json) or "
                      "a results file",
                      p.string()));
    }
  }
  Json out = Json::object();
  out["kind"] = "tune.results";
  out["schema_version"] = 1;
  out["records"] = std::move(records);
  return out;
}

}  // namespace tune

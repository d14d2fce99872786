// `tune problem draw` and `tune problem show`: the data tune draws for a problem and shape, as .npy
// files with a JSON index, and the problem as tune reads it at that shape, for the Python tools that
// need them (goldens, the torch baseline): one reader of problem.json and one draw, tune's, instead of
// a second of each in Python (issue 38).
#include <algorithm>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "problem/python_reference.hpp"
#include "tune/dtype.hpp"
#include "tune/errors.hpp"
#include "tune/io.hpp"
#include "tune/tune.hpp"

namespace tune {
namespace {

using Json = nlohmann::ordered_json;

ProblemData draw(const Problem& problem, const Shape& shape, const DrawRequest& r) {
  if (r.edge_case.empty()) return problem.make_data(shape, r.seed, r.purpose);
  const auto names = problem.edge_cases(shape);
  if (std::find(names.begin(), names.end(), r.edge_case) == names.end())
    throw InputError(fmt::format("--edge-case {}: not an edge case of {} at this shape; it has: {}", r.edge_case,
                                 problem.name(),
                                 names.empty() ? std::string("none") : fmt::format("{}", fmt::join(names, ", "))));
  return problem.make_edge_case(shape, r.seed, r.edge_case);
}

Json tensor_json(const TensorSpec& t, const char* role) {
  return {{"name", t.name}, {"role", role}, {"dtype", dtype_name(t.dtype)}, {"shape", t.shape}};
}

Json dtype_variables_json(const Problem& problem) {
  Json out = Json::object();
  for (const DTypeVariable& v : problem.dtype_variables()) {
    Json values = Json::array();
    for (const DType t : v.values) values.push_back(dtype_name(t));
    out[v.name] = {{"values", values}, {"default", v.default_value ? Json(dtype_name(*v.default_value)) : Json(nullptr)}};
  }
  return out;
}

Json tolerances_json(const Problem& problem) {
  Json out = Json::object();
  for (const DType d : all_dtypes()) {
    const Tolerance t = problem.tolerance(d);
    out[std::string(dtype_name(d))] = {{"atol", t.atol},
                                       {"rtol", t.rtol},
                                       {"module_k", t.module_k},
                                       {"module_atol", t.module_atol},
                                       {"rule", t.rule}};
  }
  return out;
}

}  // namespace

nlohmann::ordered_json problem_facts(const Problem& problem, const Shape& shape) {
  const auto reference = problem.python_reference();
  Json facts{{"kind", "tune.problem_show"},
             {"schema_version", 1},
             {"problem", std::string(problem.name())},
             {"folder", problem.dir().string()},
             {"reference", reference ? Json(reference->string()) : Json(nullptr)},
             {"shape", shape_to_json(shape)},
             {"dtypes", dtype_variables_json(problem)},
             {"tensors", Json::array()}};
  for (const TensorSpec& t : problem.param_specs(shape)) facts["tensors"].push_back(tensor_json(t, "parameter"));
  for (const TensorSpec& t : problem.input_specs(shape)) facts["tensors"].push_back(tensor_json(t, "input"));
  facts["tensors"].push_back(tensor_json(problem.output_spec(shape), "output"));
  facts["edge_cases"] = problem.edge_cases(shape);
  facts["tolerance"] = tolerances_json(problem);
  return facts;
}

std::filesystem::path draw_problem_data(const Problem& problem, const Shape& shape, const DrawRequest& r,
                                        const std::filesystem::path& out) {
  const ProblemData data = draw(problem, shape, r);
  std::filesystem::create_directories(out);
  Json index{{"kind", "tune.problem_draw"},
             {"schema_version", 1},
             {"problem", std::string(problem.name())},
             {"shape", shape_to_json(shape)},
             {"seed", r.seed},
             {"purpose", r.purpose == DataPurpose::kParity ? "parity" : "timing"},
             {"edge_case", r.edge_case.empty() ? Json(nullptr) : Json(r.edge_case)},
             {"tensors", Json::array()}};
  std::size_t n = 0;
  for (const auto& [group, role] : {std::pair{&data.params, "parameter"}, std::pair{&data.inputs, "input"}})
    for (const HostTensor& t : *group) {
      const std::string file = fmt::format("t{}.npy", n++);
      write_npy(out / file, t.spec.shape, t.spec.dtype, t.data);
      index["tensors"].push_back({{"name", t.spec.name},
                                  {"role", role},
                                  {"dtype", dtype_name(t.spec.dtype)},
                                  {"shape", t.spec.shape},
                                  {"file", file}});
    }
  const auto file = out / "index.json";
  write_file_atomic(file, index.dump(1) + "\n");
  return file;
}

}  // namespace tune

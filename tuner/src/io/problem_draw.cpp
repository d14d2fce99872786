// `tune problem draw`: the data tune draws for a problem and shape, as .npy files with a JSON index,
// for the Python tools that need the same tensors (goldens, the torch baseline): one draw, tune's
// (Problem::make_data), instead of a second one in Python (issue 38, item 2).
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "problems/python_reference.hpp"
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
                                 problem.name(), names.empty() ? std::string("none") : fmt::format("{}", fmt::join(names, ", "))));
  return problem.make_edge_case(shape, r.seed, r.edge_case);
}

}  // namespace

std::filesystem::path draw_problem_data(const Problem& problem, const Shape& shape, const DrawRequest& r,
                                        const std::filesystem::path& out) {
  const ProblemData data = draw(problem, shape, r);
  std::filesystem::create_directories(out);
  Json index{{"kind", "tune.problem_draw"}, {"schema_version", 1}, {"problem", std::string(problem.name())},
             {"shape", shape_to_json(shape)}, {"seed", r.seed},
             {"purpose", r.purpose == DataPurpose::kParity ? "parity" : "timing"},
             {"edge_case", r.edge_case.empty() ? Json(nullptr) : Json(r.edge_case)}, {"tensors", Json::array()}};
  std::size_t n = 0;
  for (const auto& [group, role] : {std::pair{&data.params, "parameter"}, std::pair{&data.inputs, "input"}})
    for (const HostTensor& t : *group) {
      const std::string file = fmt::format("t{}.npy", n++);
      write_npy(out / file, t.spec.shape, t.spec.dtype, t.data);
      index["tensors"].push_back({{"name", t.spec.name}, {"role", role}, {"dtype", dtype_name(t.spec.dtype)},
                                  {"shape", t.spec.shape}, {"file", file}});
    }
  const auto file = out / "index.json";
  write_file_atomic(file, index.dump(1) + "\n");
  return file;
}

}  // namespace tune

#include <fmt/format.h>

#include "problems/init.hpp"
#include "tune/errors.hpp"
#include "tune/problem.hpp"

namespace tune {
namespace {

std::vector<const Problem*> all() { return {&contact_problem(), &scene_graph_problem()}; }

}  // namespace

void Problem::check_shape(const Shape& shape) const {
  for (const auto& d : dims()) {
    if (!shape.has(d)) throw ShapeError(fmt::format("the shape needs --{} (problem {} takes {})", d, name(), fmt::join(dims(), ", ")));
    const auto v = shape.at(d);
    if (v <= 0) throw ShapeError(fmt::format("--{} must be a positive integer, got {}", d, v));
  }
}

const Problem& find_problem(std::string_view name) {
  for (const Problem* p : all())
    if (p->name() == name) return *p;
  throw InputError(fmt::format("unknown problem '{}'; known problems: {}", name, fmt::join(problem_names(), ", ")));
}

std::vector<std::string> problem_names() {
  std::vector<std::string> out;
  for (const Problem* p : all()) out.emplace_back(p->name());
  return out;
}

}  // namespace tune

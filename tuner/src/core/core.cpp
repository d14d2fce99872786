// Small value types of the public API: Shape, TensorSpec, ProblemData, Rng.
#include <algorithm>
#include <cmath>
#include <numbers>

#include <fmt/format.h>

#include "tune/errors.hpp"
#include "tune/rng.hpp"
#include "tune/shape.hpp"
#include "tune/tensor.hpp"

namespace tune {

std::int64_t Shape::at(std::string_view name) const {
  for (const auto& [k, v] : dims_)
    if (k == name) return v;
  throw InputError(fmt::format("the shape has no dimension '{}'", name));
}

bool Shape::has(std::string_view name) const {
  for (const auto& d : dims_)
    if (d.first == name) return true;
  return false;
}

void Shape::set(std::string_view name, std::int64_t value) {
  for (auto& [k, v] : dims_)
    if (k == name) {
      v = value;
      return;
    }
  dims_.emplace_back(std::string(name), value);
}

DType Shape::dtype(std::string_view name) const {
  for (const auto& [k, v] : dtypes_)
    if (k == name) return v;
  throw InputError(fmt::format("the shape has no dtype variable '{}'", name));
}

bool Shape::has_dtype(std::string_view name) const {
  for (const auto& d : dtypes_)
    if (d.first == name) return true;
  return false;
}

void Shape::set_dtype(std::string_view name, DType value) {
  for (auto& [k, v] : dtypes_)
    if (k == name) {
      v = value;
      return;
    }
  dtypes_.emplace_back(std::string(name), value);
}

void Shape::order_dtypes(const std::vector<std::string>& order) {
  const auto rank = [&order](const std::string& name) {
    return std::find(order.begin(), order.end(), name) - order.begin();
  };
  std::stable_sort(dtypes_.begin(), dtypes_.end(),
                   [&](const auto& a, const auto& b) { return rank(a.first) < rank(b.first); });
}

std::string Shape::tag() const {
  std::string out;
  for (const auto& [k, v] : dims_) out += fmt::format("{}{}{}", out.empty() ? "" : "_", k, v);
  if (dtypes_.size() == 1 && dtypes_[0].second != DType::kFloat32)
    out += fmt::format("{}{}", out.empty() ? "" : "_", dtype_name(dtypes_[0].second));
  if (dtypes_.size() > 1)
    for (const auto& [k, v] : dtypes_) out += fmt::format("{}{}{}", out.empty() ? "" : "_", k, dtype_name(v));
  return out;
}

std::string Shape::describe() const {
  std::string out;
  for (const auto& [k, v] : dims_) out += fmt::format("{}{}={}", out.empty() ? "" : " ", k, v);
  for (const auto& [k, v] : dtypes_) out += fmt::format("{}{}={}", out.empty() ? "" : " ", k, dtype_name(v));
  return out;
}

std::int64_t TensorSpec::elements() const {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

const HostTensor* ProblemData::find(std::string_view name) const {
  for (const auto* list : {&params, &inputs})
    for (const auto& t : *list)
      if (t.spec.name == name) return &t;
  return nullptr;
}

const HostTensor& ProblemData::get(std::string_view name) const {
  if (const HostTensor* t = find(name)) return *t;
  throw InputError(fmt::format("no parameter or input named '{}'", name));
}

double Rng::normal() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  double u1 = uniform01();
  while (u1 <= 0.0) u1 = uniform01();
  const double u2 = uniform01();
  const double r = std::sqrt(-2.0 * std::log(u1));
  spare_ = r * std::sin(2.0 * std::numbers::pi * u2);
  has_spare_ = true;
  return r * std::cos(2.0 * std::numbers::pi * u2);
}

void Rng::skip_normals(std::uint64_t n) {
  if (n > 0 && has_spare_) {
    has_spare_ = false;
    --n;
  }
  for (; n >= 2; n -= 2) {  // a pair: u1 (drawn again while 0, as normal() does) and u2, no spare left
    while (uniform01() <= 0.0) {}
    (void)uniform01();
  }
  if (n == 1) (void)normal();  // the first of a pair; its second is the spare, as after normal()
}

}  // namespace tune

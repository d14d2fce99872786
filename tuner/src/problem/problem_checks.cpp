// What a shape binds in a problem, checked before any data is drawn: dimensions, dtypes, tensor
// sizes, work counts, edit values and host memory.
#include "problem/problem_impl.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <ranges>

namespace tune {

using namespace problem_file;

// A tensor of more elements is refused when the shape is bound: 4 TiB of float32, past any GPU's
// memory; and every size tune computes from it (bytes, float64 copies) stays within int64.
constexpr std::int64_t kMaxElements = std::int64_t{1} << 40;
// A dimension past this is not exact in the expressions' doubles (their integers stop at 2^53).
constexpr std::int64_t kMaxDimension = 9'000'000'000'000'000;

std::int64_t Problem::Impl::elements(const TensorDef& t, const Shape& shape) const {
  std::int64_t n = 1;
  bool over = false;
  for (std::size_t i = 0; i < t.shape.size(); ++i) {
    const std::int64_t d = integer(t.shape[i], fmt::format("tensor '{}' shape[{}]", t.name, i));
    if (d < 0) fail(fmt::format("tensor '{}' shape[{}] '{}' is negative ({})", t.name, i, t.shape[i].text(), d));
    over = over || __builtin_mul_overflow(n, d, &n) || n > kMaxElements;
  }
  if (over)
    throw ShapeError(
        fmt::format("shape {}: tensor '{}' (shape [{}]) has more than 2^40 elements (4 TiB of float32); "
                    "pass a smaller shape",
                    shape.describe(), t.name,
                    fmt::join(t.shape | std::views::transform([](const auto& e) { return e.text(); }), ", ")));
  return n;
}

std::pair<double, double> Problem::Impl::init_range(const Init& init) {
  constexpr double kNormal = 8.58;  // Box-Muller's largest |x|: sqrt(-2 ln 2^-53)
  switch (init.kind) {
    case InitKind::kNormal:
      return {init.a - kNormal * std::abs(init.b), init.a + kNormal * std::abs(init.b)};
    case InitKind::kUniform:
      return {std::min(init.a, init.b), std::max(init.a, init.b)};
    case InitKind::kConstant:
      return {init.a, init.a};
    case InitKind::kLayerNormWeight:
      return {1 - 0.2 * kNormal, 1 + 0.2 * kNormal};
    case InitKind::kLayerNormBias:
      return {-0.2 * kNormal, 0.2 * kNormal};
    case InitKind::kIntegers:
      return {init.a, init.b - 1};
    case InitKind::kBernoulli:
      return {0, 1};
    default:
      return {-1, 1};  // linear: within 1/sqrt(fan_in)
  }
}

void Problem::Impl::check_sizes(const Shape& shape) const {
  for (const TensorDef& t : tensors)
    if (elements(t, shape) == 0 && t.role == Role::kOutput)  // parity over no element would pass anything
      fail(
          fmt::format("shape {}: the output '{}' (shape [{}]) has no elements; give a shape where every output "
                      "dimension is at least 1",
                      shape.describe(), t.name,
                      fmt::join(t.shape | std::views::transform([](const auto& e) { return e.text(); }), ", ")));
}

void Problem::Impl::check_work(const Shape& shape) const {
  for (const auto* w : {&flop, &bytes}) {
    if (!*w) continue;
    const double v = (*w)->eval();
    if (!std::isfinite(v) || v < 0)
      fail(fmt::format("work.{} '{}' gives {} at shape {}; a work count must be finite and >= 0",
                       w == &flop ? "flop" : "bytes", (*w)->text(), v, shape.describe()));
  }
}

// The values the edits write and the edge cases' sets make, without drawing the data: an edge case
// that would make an input non-finite is refused now, not when the gate runs it (issue 34 #14).
void Problem::Impl::check_data(const Shape& shape) const {
  std::vector<std::vector<std::int64_t>> shapes;
  std::vector<std::pair<double, double>> range;  // the values each tensor may hold, lowest and highest
  for (const TensorDef& t : tensors) {
    shapes.push_back(spec(t).shape);
    range.push_back(t.role == Role::kOutput           ? std::pair<double, double>{0, 0}
                    : t.init.kind == InitKind::kIndex ? std::pair<double, double>{0, static_cast<double>(index_high(t) - 1)}
                                                      : init_range(t.init));
  }
  for (const Edit& e : edits)
    for_each_write(e, shapes[e.tensor], tensors[e.tensor].name, dtype_of(tensors[e.tensor]), [&](std::int64_t, double v) {
      range[e.tensor] = {std::min(range[e.tensor].first, v), std::max(range[e.tensor].second, v)};
    });
  for (const EdgeCase& c : edge_cases) {
    if (c.when && !holds(*c.when)) continue;
    for (const TensorSet& set : c.sets) {
      const auto [lo, hi] = set.fill ? std::pair<double, double>{*set.fill, *set.fill} : range[set.tensor];
      const double a = lo * set.scale + set.offset, b = hi * set.scale + set.offset;
      const double low = std::min(a, b), high = std::max(a, b);
      const DType d = dtype_of(tensors[set.tensor]);
      const bool fits = is_floating(d) ? std::max(std::abs(low), std::abs(high)) <= dtype_max(d)
                                       : low >= dtype_lowest(d) && high <= dtype_max(d);
      // The dtype's bounds said: at 3 digits 65504.5 and float16's 65504 both print as 6.55e+04.
      const std::string bounds =
          is_floating(d) ? fmt::format("largest {}", dtype_max(d)) : fmt::format("[{}, {}]", dtype_lowest(d), dtype_max(d));
      if (!fits)
        fail(
            fmt::format("{}: scale {} and offset {} take the values of tensor '{}' ([{:.3g}, {:.3g}] at shape {}) to "
                        "[{:.3g}, {:.3g}], beyond {} ({}); choose a smaller scale or offset",
                        set.where, set.scale, set.offset, tensors[set.tensor].name, lo, hi, shape.describe(), low, high,
                        dtype_name(d), bounds));
      for (const double x : {set.fill.value_or(0), set.scale, set.offset})
        if (!is_floating(d) && x != std::floor(x))
          fail(fmt::format("{}: {} is not an integer, and tensor '{}' is {}; give integers", set.where, x,
                           tensors[set.tensor].name, dtype_name(d)));
    }
    for (const Edit& e : c.edits)
      for_each_write(e, shapes[e.tensor], tensors[e.tensor].name, dtype_of(tensors[e.tensor]), [](std::int64_t, double) {});
  }
}

void Problem::Impl::check_bound(const Shape& shape) const {
  const std::lock_guard lock(mutex);
  const std::string key = shape.describe();
  if (bound_shapes.count(key)) return;
  bind(shape);
  check_sizes(shape);
  check_work(shape);
  check_data(shape);
  bound_shapes.insert(key);
}

void Problem::check_shape(const Shape& shape) const {
  for (const auto& d : impl_->dims) {
    if (!shape.has(d))
      throw ShapeError(fmt::format("the shape needs --{} (problem {} takes {})", d, name(), fmt::join(impl_->dims, ", ")));
    const auto v = shape.at(d);
    if (v <= 0) throw ShapeError(fmt::format("--{} must be a positive integer, got {}", d, v));
    // Expressions compute in double: past 2^53 a dimension is no longer itself there.
    if (v > kMaxDimension)
      throw ShapeError(fmt::format("--{} {} is too large (a dimension is at most {})", d, v, kMaxDimension));
  }
  for (const DTypeVariable& v : impl_->dtype_vars) {
    const std::string allowed = fmt::format("{}", fmt::join(v.values | std::views::transform(dtype_name), ", "));
    const auto t = dtype_vars::value(v, shape);
    if (!t) throw ShapeError(fmt::format("the shape needs --{} (a dtype: {})", v.name, allowed));
    if (std::find(v.values.begin(), v.values.end(), *t) == v.values.end())
      throw ShapeError(fmt::format("--{} {} is not a dtype problem {} takes (--{}: {})", v.name, dtype_name(*t), name(),
                                   v.name, allowed));
  }
  impl_->check_bound(shape);
}

void Problem::check_host_memory(const Shape& shape) const {
  check_shape(shape);
  const Impl& p = *impl_;
  std::uint64_t need = 0;
  std::pair<std::int64_t, std::string> largest{-1, ""};
  {
    const std::lock_guard lock(p.mutex);
    p.bind(shape);
    for (const TensorDef& t : p.tensors) {
      const std::int64_t n = p.elements(t, shape);  // at most 2^40: the sum stays far within 64 bits
      need += static_cast<std::uint64_t>(n) * (sizeof(double) + sizeof(double));
      largest = std::max(largest, std::pair{n, t.name});
    }
  }
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return;  // unknown: the allocation itself will tell
  const auto have = static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page);
  if (need > have)
    throw ShapeError(fmt::format(
        "shape {}: the tensors of problem {} take {:.3g} GB of host memory (their data and the "
        "reference's float64 copies, 16 bytes an element; the largest is '{}', {} elements), more than this machine's "
        "{:.3g} GB; pass a smaller shape",
        shape.describe(), name(), static_cast<double>(need) / 1e9, largest.second, largest.first,
        static_cast<double>(have) / 1e9));
}

void Problem::check_reference_repeats(const Shape& shape, const ProblemData& data, ReferenceBackend backend,
                                      const OutputValues& first) const {
  if (uses_builtin(backend) || !impl_->python) return;
  const OutputValues again = reference(shape, data, backend);
  std::optional<std::size_t> at;
  std::string was, now;
  const std::vector<double>& a = again.values();
  const std::vector<double>& b = first.values();
  for (std::size_t i = 0; i < std::min(a.size(), b.size()) && !at; ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(double)) != 0) {
      at = i;
      was = fmt::format("{:.17g}", b[i]);
      now = fmt::format("{:.17g}", a[i]);
    }
  // An int64 output past 2^53 may differ in its integers alone.
  for (std::size_t i = 0; i < std::min(again.ints().size(), first.ints().size()) && !at; ++i)
    if (again.ints()[i] != first.ints()[i]) {
      at = i;
      was = std::to_string(first.ints()[i]);
      now = std::to_string(again.ints()[i]);
    }
  if (!at) return;
  throw InputError(fmt::format(
      "{}: {} returned another output for the same input on a second run (the output '{}' at element {}: {}, then {}) "
      "for shape {}; a reference must be deterministic: seed its random numbers (np.random.default_rng(0)) and keep no "
      "state between runs (the time, files)",
      impl_->name, impl_->python->string(), output_spec(shape).name, *at, was, now, shape.describe()));
}

}  // namespace tune

// An output's values as parity reads them (tune/tensor.hpp): doubles, and an int64 output's integers.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

#include "tune/tensor.hpp"

namespace tune {

OutputValues OutputValues::of_doubles(DType t, std::vector<double> values) {
  OutputValues o;
  o.dtype_ = t;
  // 2^63 is no int64 but is the double a kernel's INT64_MAX reads as: it stands for that. A value
  // that is no integer (a NaN) has none: then the values stay doubles alone, and fail as doubles.
  const auto integer = [](double v) { return std::isfinite(v) && v == std::trunc(v) && std::abs(v) <= 0x1p63; };
  if (t == DType::kInt64 && std::all_of(values.begin(), values.end(), integer)) {
    o.ints_.reserve(values.size());
    for (const double v : values)
      o.ints_.push_back(v >= 0x1p63 ? std::numeric_limits<std::int64_t>::max() : static_cast<std::int64_t>(v));
  }
  o.values_ = std::move(values);
  return o;
}

OutputValues OutputValues::of_int64(std::vector<std::int64_t> ints) {
  OutputValues o;
  o.dtype_ = DType::kInt64;
  o.values_.reserve(ints.size());
  for (const std::int64_t v : ints) o.values_.push_back(static_cast<double>(v));
  o.ints_ = std::move(ints);
  return o;
}

OutputValues OutputValues::of_bytes(DType t, std::span<const std::byte> bytes) {
  if (t != DType::kInt64) return of_doubles(t, decode_all(t, bytes));
  std::vector<std::int64_t> ints(bytes.size() / sizeof(std::int64_t));
  if (!ints.empty()) std::memcpy(ints.data(), bytes.data(), ints.size() * sizeof(std::int64_t));
  return of_int64(std::move(ints));
}

std::int64_t OutputValues::integer(std::size_t k) const {
  if (is_floating(dtype_)) throw std::logic_error(fmt::format("OutputValues::integer of a {} output", dtype_name(dtype_)));
  // Other integer dtypes and bool (a byte, 0 to 255) are exact as doubles.
  if (!ints_.empty()) return ints_.at(k);
  const double v = values_.at(k);
  if (!std::isfinite(v)) throw std::logic_error(fmt::format("OutputValues::integer of {}", v));
  if (v >= 0x1p63) return std::numeric_limits<std::int64_t>::max();
  if (v < -0x1p63) return std::numeric_limits<std::int64_t>::min();
  return static_cast<std::int64_t>(v);
}

std::string OutputValues::element(std::size_t k) const {
  return is_floating(dtype_) ? fmt::format("{:.9g}", values_.at(k)) : std::to_string(integer(k));
}

}  // namespace tune

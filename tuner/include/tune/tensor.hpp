#pragma once
// Host-side tensors: contiguous, row-major, named as in the PyTorch state_dict, each of its dtype
// (tune/dtype.hpp). The host holds every element as a double, the value its dtype holds (already
// rounded): encode_all(spec.dtype, data) gives the device's bytes.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tune/dtype.hpp"

namespace tune {

struct TensorSpec {
  std::string name;
  std::vector<std::int64_t> shape;
  DType dtype = DType::kFloat32;
  [[nodiscard]] std::int64_t elements() const;
  [[nodiscard]] std::size_t bytes() const { return static_cast<std::size_t>(elements()) * dtype_size(dtype); }
};

struct HostTensor {
  TensorSpec spec;
  std::vector<double> data;  // each element as spec.dtype holds it
};

// Parameters and inputs of one call of a problem, by name.
struct ProblemData {
  std::vector<HostTensor> params;
  std::vector<HostTensor> inputs;
  // Throws InputError when no parameter or input has that name.
  [[nodiscard]] const HostTensor& get(std::string_view name) const;
  [[nodiscard]] const HostTensor* find(std::string_view name) const;
};

// An output's values as parity reads them: each as a double and, for an int64 output, each as its
// integer exactly too (a double holds every integer only within +-2^53, so past it an error of one
// reads as none). One value, made by one of the makers below from the output's dtype: the integers
// go wherever the doubles go, and the comparison is chosen from the dtype (judge_output), never
// left to a caller who might pass the doubles alone.
class OutputValues {
 public:
  OutputValues() = default;
  // Values of dtype `t` (an int64 output's integers from them: exact within +-2^53; 2^63 the
  // largest int64, as the double a kernel's INT64_MAX reads; none where a value is no integer).
  static OutputValues of_doubles(DType t, std::vector<double> values);
  // An int64 output's integers (its doubles the nearest).
  static OutputValues of_int64(std::vector<std::int64_t> ints);
  // An output's bytes on the device (little-endian, its dtype's encoding).
  static OutputValues of_bytes(DType t, std::span<const std::byte> bytes);

  [[nodiscard]] DType dtype() const { return dtype_; }
  [[nodiscard]] const std::vector<double>& values() const { return values_; }
  // An int64 output's integers (one per value); empty for every other dtype, and for int64 values
  // made from doubles of which one is no integer (a NaN: compared as doubles, it fails).
  [[nodiscard]] std::span<const std::int64_t> ints() const { return ints_; }
  [[nodiscard]] std::size_t size() const { return values_.size(); }
  [[nodiscard]] bool empty() const { return values_.empty(); }
  // Element k of an integer or bool output as its integer, exactly (std::logic_error for a float
  // output's, or a value that is not finite).
  [[nodiscard]] std::int64_t integer(std::size_t k) const;
  // Element k as a message quotes it: an integer or bool output's as an integer, a float's to 9 digits.
  [[nodiscard]] std::string element(std::size_t k) const;

 private:
  DType dtype_ = DType::kFloat64;
  std::vector<double> values_;
  std::vector<std::int64_t> ints_;
};

}  // namespace tune

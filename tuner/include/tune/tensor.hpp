#pragma once
// Host-side tensors: contiguous, row-major, named as in the PyTorch state_dict, each of its dtype
// (tune/dtype.hpp). The host holds every element as a double, the value its dtype holds (already
// rounded): encode_all(spec.dtype, data) gives the device's bytes.
#include <cstdint>
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

}  // namespace tune

#pragma once
// Host-side tensors: float32, contiguous, row-major, named as in the PyTorch state_dict.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tune {

struct TensorSpec {
  std::string name;
  std::vector<std::int64_t> shape;
  [[nodiscard]] std::int64_t elements() const;
  [[nodiscard]] std::size_t bytes() const { return static_cast<std::size_t>(elements()) * sizeof(float); }
};

struct HostTensor {
  TensorSpec spec;
  std::vector<float> data;
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

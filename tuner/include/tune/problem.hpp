#pragma once
// A problem: what is computed (shapes, inputs, float64 CPU reference, work counts).
// How it is computed on the GPU lives in kernel_templates/<name>.cuh and configs/<name>.json;
// a problem file never knows about variants.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tune/shape.hpp"
#include "tune/tensor.hpp"

namespace tune {

struct WorkCounts {
  double flop = 0;   // floating-point operations per call
  double bytes = 0;  // fewest bytes moved through device memory per call
};

enum class DataPurpose {
  kTiming,  // plain seeded inputs
  kParity,  // seeded inputs plus the problem's edge cases (fully masked rows, ...)
};

class Problem {
 public:
  virtual ~Problem() = default;
  [[nodiscard]] virtual std::string_view name() const = 0;
  // Dimension names in order, e.g. {"B","N","C","H"}.
  [[nodiscard]] virtual std::vector<std::string> dims() const = 0;
  // Throws ShapeError (one line, naming the dimension) for shapes the problem itself rejects.
  virtual void check_shape(const Shape& shape) const;
  [[nodiscard]] virtual std::vector<TensorSpec> param_specs(const Shape& shape) const = 0;
  [[nodiscard]] virtual std::vector<TensorSpec> input_specs(const Shape& shape) const = 0;
  [[nodiscard]] virtual TensorSpec output_spec(const Shape& shape) const = 0;
  // Same seed, same data on every machine (PROBLEMS.md "Input and parameter generation").
  [[nodiscard]] virtual ProblemData make_data(const Shape& shape, std::uint64_t seed, DataPurpose purpose) const = 0;
  // Float64 reference of the output, from the float32 data.
  [[nodiscard]] virtual std::vector<double> reference(const Shape& shape, const ProblemData& data) const = 0;
  [[nodiscard]] virtual WorkCounts counts(const Shape& shape) const = 0;
};

// Throws InputError listing the known problems when the name is unknown.
[[nodiscard]] const Problem& find_problem(std::string_view name);
[[nodiscard]] std::vector<std::string> problem_names();

}  // namespace tune

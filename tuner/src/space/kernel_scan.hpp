#pragma once
// Finds a __global__ function in a kernel template's files and counts its parameters, so a
// launch's `args` are checked against the kernel when the problem loads (no GPU, no compile).
#include <optional>
#include <string>

#include "tune/space.hpp"

namespace tune {

// The source without comments and string literals (each replaced by a space).
std::string strip_comments(const std::string& text);
// Parameters of the first __global__ function named `kernel` in the main source or a header;
// nullopt when there is none.
std::optional<int> kernel_parameter_count(const KernelSources& sources, const std::string& kernel);

}  // namespace tune

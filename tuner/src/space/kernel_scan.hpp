#pragma once
// Finds a __global__ function in a kernel template's files and counts its parameters, so a
// launch's `args` are checked against the kernel when the problem loads (no GPU, no compile).
#include <optional>
#include <string>
#include <vector>

#include "tune/space.hpp"

namespace tune {

// The source without comments and string literals (each replaced by a space).
std::string strip_comments(const std::string& text);
// The main source and every header without comments and `#if 0` blocks, stripped once for every
// kernel_parameter_count.
std::vector<std::string> stripped_sources(const KernelSources& sources);
// Parameters of the first __global__ function named `kernel` in `stripped` (main source first);
// nullopt when there is none; kUncounted when its parameter list is one macro.
inline constexpr int kUncounted = -1;
std::optional<int> kernel_parameter_count(const std::vector<std::string>& stripped, const std::string& kernel);

}  // namespace tune

#pragma once
// Readers and writers of files users hand around: results, golden cases, generated headers.
#include <filesystem>
#include <string>
#include <vector>

#include "tune/problem.hpp"
#include "tune/record.hpp"
#include "tune/space.hpp"

namespace tune {

// Throws InputError "<file>: <reason>".
RunRecord read_result(const std::filesystem::path& file);

// A golden case dumped from the PyTorch model (format of shared/golden).
struct GoldenCase {
  std::string problem;
  Shape shape;
  ProblemData data;
  std::vector<double> output;
};
// Validates names and shapes against the problem's specs. Throws InputError "<file>: <reason>".
GoldenCase read_golden(const std::filesystem::path& file);

// The single-result header: the winner as constexpr values, with provenance. Needs a timed run.
std::string generate_header(const RunRecord& run, const Space& space);

// The tool's own version and the git commit it was built from.
std::string tool_version();
std::string tool_git_commit();

}  // namespace tune

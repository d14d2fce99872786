#pragma once
// The parts of `tune export torch` (export_torch.cpp): what the export knows of each problem, and the
// text of each file it writes, made from that: the extension's C++ (export_torch_sources.cpp), its
// Python modules (export_torch_python.cpp) and its build files (export_torch_build.cpp).
#include <cstddef>
#include <string>
#include <vector>

#include "tune/dtype.hpp"
#include "tune/io.hpp"
#include "tune/problem.hpp"

namespace tune::torch_export {

// What the export needs of one problem.
struct ExportedProblem {
  std::string name, ns;  // the problem's name; its Python module and op (and C symbols)
  std::string header_ns;  // its namespace in the merged header
  const Problem* problem = nullptr;
  std::vector<NamedResult> results;
  std::vector<std::string> dims;
  struct Tensor {
    std::string name;
    std::vector<std::string> shape;  // expressions of the dims
    std::string dtype;               // a dtype name, or the name of a dtype variable
  };
  std::vector<Tensor> tensors;  // parameters, then inputs (the op's argument order)
  std::size_t parameter_count = 0;
  Tensor output;
  struct DTypeVariable {
    std::string name;
    std::vector<DType> values;
    std::size_t tensor = 0;  // the first of `tensors` of that dtype: the op reads the value from it
  };
  std::vector<DTypeVariable> dtype_vars;  // in the results' Shape order (the header's Shape fields)
};

// <package>/csrc/<problem>/launch_<problem>.cu: the entry for a device and shape, and the launches,
// with the CUDA runtime only. `main_template`: the file name of the problem's kernel template.
std::string launch_source(const ExportedProblem& p, const std::string& main_template);
// <package>/csrc/binding.cpp: the ops (checks, shapes, allocation, the current stream). Throws
// InputError for a problem whose tensors do not tell its dims or dtypes.
std::string binding_source(const std::vector<ExportedProblem>& problems, const std::string& package);

// <package>/<problem>.py: ModelNew, PARAMETERS, INPUTS, TUNED.
std::string problem_module(const ExportedProblem& p);
// <package>/__init__.py: load(), the built extension, else a JIT build of csrc/.
std::string init_module(const std::vector<ExportedProblem>& problems, const std::string& package);
// A Python list literal of strings.
std::string python_list(const std::vector<std::string>& items);

// The nvcc flags of the tuned kernels for `arch`.
std::vector<std::string> nvcc_flags(int arch);
// <package>/_build.py: the sources (relative to the package) and flags setup.py and load() build.
std::string build_module(const std::vector<std::string>& sources, int arch);
std::string setup_py(const std::string& package);
std::string pyproject_toml(const std::string& package);
std::string readme(const std::vector<ExportedProblem>& problems, const std::string& package, int arch);

}  // namespace tune::torch_export

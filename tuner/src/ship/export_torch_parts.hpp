#pragma once
// The parts of `tune export torch` (export_torch.cpp): what the export knows of each problem, and the
// text of each file it writes, made from that: the extension's C++ (export_torch_sources.cpp), its
// Python modules (export_torch_python.cpp) and its build files (export_torch_build.cpp).
#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include "ship/header_parts.hpp"
#include "tune/dtype.hpp"
#include "tune/io.hpp"
#include "tune/problem.hpp"
#include "tune/space.hpp"

namespace tune::torch_export {

// What the export needs of one problem.
struct ExportedProblem {
  std::string name, ns;   // the problem's name; its Python module and op (and C symbols)
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
  // The dims and dtype variables no parameter or input tells (only the output's, say: index_add's
  // row count, a separate output dtype), dims first: the op takes their values as `int[] given`, and
  // ModelNew by keyword or from the module's attribute of that name. A dtype variable's `tensor` is
  // tensors.size() when it is given.
  std::vector<std::string> given;
  [[nodiscard]] bool is_given(const std::string& dim_or_dtype) const {
    return std::find(given.begin(), given.end(), dim_or_dtype) != given.end();
  }
};

// One entry's winner as the export ships it: the CUBIN tune compiles for it, checked to be its record's.
struct GatedCode {
  std::string what;  // "NVIDIA H200 B4_N64_C64_H32: winner ...", for the comment
  std::vector<char> cubin;
  std::vector<std::string> kernels;  // the lowered (mangled) name of each launch's kernel
};
// Each entry's code, in the merged header's kEntries order (export_torch_cubin.cpp). Throws
// InputError naming the record and the field when it is not the code the record gated: another
// source hash, NVRTC version or arch, or other ptxas resources.
std::vector<GatedCode> gated_code(const ExportedProblem& p, const Space& space, bool allow_synthetic);
// <package>/csrc/<problem>/cubins.inc: the CUBINs as byte arrays, and each entry's kernel names.
std::string cubin_source(const std::vector<GatedCode>& code);

// <package>/csrc/<problem>/launch_<problem>.cpp: the entry for a device and shape, and the launches
// of its CUBIN (cubins.inc) with the CUDA runtime's library API only.
std::string launch_source(const ExportedProblem& p);
// <package>/csrc/binding.cpp: the ops (checks, shapes, allocation, the current stream). Throws
// InputError for a problem whose tensors do not tell its dims or dtypes.
std::string binding_source(const std::vector<ExportedProblem>& problems, const std::string& package);

// <package>/<problem>.py: ModelNew, PARAMETERS, INPUTS, TUNED.
std::string problem_module(const ExportedProblem& p);
// <package>/__init__.py: load(), the built extension, else a JIT build of csrc/.
std::string init_module(const std::vector<ExportedProblem>& problems, const std::string& package);
// Each string as a Python string literal.
std::vector<std::string> python_strings(const std::vector<std::string>& items);
// "NAME = [a, b]\n" (brackets "[]", or "{}" of "key: value" literals), or where that passes 120
// columns (the repo's .flake8), the literals packed into lines of a hanging indent: the generated
// Python is flake8-clean.
std::string python_assignment(const std::string& name, const std::vector<std::string>& literals,
                              const char* brackets = "[]");

// <package>/_build.py: the sources (relative to the package) and flags setup.py and load() build.
std::string build_module(const std::vector<std::string>& sources, int arch);
std::string setup_py(const std::string& package);
std::string pyproject_toml(const std::string& package);
std::string readme(const std::vector<ExportedProblem>& problems, const std::string& package, int arch);

}  // namespace tune::torch_export

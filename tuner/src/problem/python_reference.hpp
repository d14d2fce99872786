#pragma once
// The Python reference protocol (docs/problem-format.md "reference.py"): the data as .npy files
// of each tensor's dtype and a request.json in a temporary folder, the problem's reference.py run by tune's
// reference runner ($TUNE_PYTHON, default python3), the float64 output read back from out.npy.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "tune/shape.hpp"
#include "tune/tensor.hpp"

namespace tune {

// What the runner runs besides (or instead of) the float64 reference: request.json's "module_run".
enum class ModuleRun {
  kNo,    // the float64 reference alone
  kAlso,  // and, when make_model exists, torch imports and a tensor is low precision, the module in
          // the tensors' dtypes (module_out.npy)
  kOnly,  // that module run alone (a built-in C++ reference gave the float64 output): returns {}
};
// The output's values in its dtype (an int64 output's integers exactly, from out_int64.npy: the
// float64 out.npy loses them past 2^53). Throws InputError with the reference's last line of stderr
// when it fails. *module_output: the module run's output as float64 values, empty when it did not
// run (no make_model, no torch, no low-precision tensor).
OutputValues run_python_reference(const std::filesystem::path& module, const std::string& problem, const Shape& shape,
                                  const ProblemData& data, const TensorSpec& output, std::string* backend = nullptr,
                                  ModuleRun module_run = ModuleRun::kNo, std::vector<double>* module_output = nullptr);

// NumPy's .npy format, version 1.0, C order: written in the dtype's descr (bfloat16 as '<f4', which
// holds it exactly); float32 or float64 read (int64 by read_npy_int64).
void write_npy(const std::filesystem::path& file, const std::vector<std::int64_t>& shape, DType dtype,
               const std::vector<double>& data);
std::vector<double> read_npy(const std::filesystem::path& file, std::vector<std::int64_t>* shape);
// An int64 ('<i8') .npy file, exactly.
std::vector<std::int64_t> read_npy_int64(const std::filesystem::path& file, std::vector<std::int64_t>* shape);

// The interpreter the reference runs under ($TUNE_PYTHON, default python3), as it says itself: its
// executable, version and prefix, and numpy's and torch's versions and locations ("torch none" where
// it cannot be found). Part of reference.py's identity: the same reference.py computes otherwise
// under another Python (torch where it imports, numpy where not). Asked once per process and
// interpreter setting; "<python> (cannot run: ...)" when it does not answer.
std::string python_identity();

// The embedded copy of a file of tune's own (tuner/python/reference_runner.py).
std::string_view embedded_file(std::string_view name);

}  // namespace tune

#pragma once
// The CUDA driver API, loaded at run time from libcuda.so.1 so that `tune` starts (and runs its
// compile-only sweep) on machines without a GPU driver. One checked-call entry (TUNE_CU) and a
// move-only owner for every handle, as in nvbench.
#include <cuda.h>

#include <cstddef>
#include <stdexcept>
#include <string>

namespace tune::cuda {

// A failed driver call: keeps the raw code, the expression and where it was made.
class CudaError : public std::runtime_error {
 public:
  CudaError(CUresult code, std::string name, const std::string& what)
      : std::runtime_error(what), code_(code), name_(std::move(name)) {}
  [[nodiscard]] CUresult code() const { return code_; }
  [[nodiscard]] const std::string& name() const { return name_; }
  // Errors that leave the context unusable (the variant crashed the context).
  [[nodiscard]] bool sticky() const;

 private:
  CUresult code_;
  std::string name_;
};

struct DriverApi {
#define TUNE_CU_FN(fn) decltype(&::fn) fn = nullptr;
#include "cuda/driver_functions.inc"
#undef TUNE_CU_FN
};

// Loads libcuda.so.1 on first use. Throws DeviceError with the reason when it is absent.
const DriverApi& api();
// False, with the reason, when no driver library or no device is there; never throws.
bool driver_available(std::string* why);

std::string error_name(CUresult code);
[[noreturn]] void throw_error(CUresult code, const char* expr, const char* file, int line);
// For destructors: never throws, the result is ignored on purpose.
inline void check_nothrow(CUresult) noexcept {}

}  // namespace tune::cuda

#define TUNE_CU(call)                                                                                           \
  do {                                                                                                          \
    const CUresult tune_cu_result_ = (::tune::cuda::api().call);                                                \
    if (tune_cu_result_ != CUDA_SUCCESS) ::tune::cuda::throw_error(tune_cu_result_, #call, __FILE__, __LINE__); \
  } while (false)

#include "cuda/driver.hpp"

#include <dlfcn.h>

#include <mutex>

#include <fmt/format.h>

#include "tune/errors.hpp"

namespace tune::cuda {
namespace {

struct Loaded {
  DriverApi api;
  std::string error;  // empty when loaded
};

Loaded load() {
  Loaded out;
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    out.error = "no CUDA driver on this machine (libcuda.so.1 not found)";
    return out;
  }
  // Each entry point is looked up by the exact symbol our header declares (cuMemAlloc is
  // cuMemAlloc_v2 after macro expansion), so the pointer's ABI is the declaration's. Lookup by
  // base name through cuGetProcAddress can hand back a newer ABI than the header's (seen with
  // cuCtxSynchronize on driver 580: a crash).
#define TUNE_CU_STR2(x) #x
#define TUNE_CU_STR(x) TUNE_CU_STR2(x)
#define TUNE_CU_FN(fn)                                                            \
  {                                                                               \
    void* p = dlsym(lib, TUNE_CU_STR(fn));                                        \
    if (p == nullptr) {                                                           \
      out.error = "the CUDA driver lacks " TUNE_CU_STR(fn) "; update the driver"; \
      return out;                                                                 \
    }                                                                             \
    out.api.fn = reinterpret_cast<decltype(out.api.fn)>(p);                       \
  }
#include "cuda/driver_functions.inc"
#undef TUNE_CU_FN
#undef TUNE_CU_STR
#undef TUNE_CU_STR2
  return out;
}

const Loaded& loaded() {
  static const Loaded instance = [] {
    Loaded l = load();
    if (l.error.empty()) {
      const CUresult r = l.api.cuInit(0);
      if (r != CUDA_SUCCESS) {
        const char* name = nullptr;
        l.api.cuGetErrorName(r, &name);
        l.error = fmt::format("the CUDA driver did not initialise ({})", name ? name : "unknown error");
      }
    }
    return l;
  }();
  return instance;
}

}  // namespace

bool CudaError::sticky() const {
  switch (code_) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
      return true;
    default:
      return false;
  }
}

const DriverApi& api() {
  const Loaded& l = loaded();
  if (!l.error.empty()) throw DeviceError(l.error);
  return l.api;
}

bool driver_available(std::string* why) {
  const Loaded& l = loaded();
  if (!l.error.empty()) {
    if (why) *why = l.error;
    return false;
  }
  int count = 0;
  const CUresult r = l.api.cuDeviceGetCount(&count);
  if (r != CUDA_SUCCESS || count == 0) {
    if (why) *why = "the CUDA driver reports no device";
    return false;
  }
  return true;
}

std::string error_name(CUresult code) {
  const Loaded& l = loaded();
  const char* name = nullptr;
  if (l.error.empty()) l.api.cuGetErrorName(code, &name);
  return name ? name : fmt::format("CUresult {}", static_cast<int>(code));
}

void throw_error(CUresult code, const char* expr, const char* file, int line) {
  const Loaded& l = loaded();
  const char* text = nullptr;
  if (l.error.empty()) l.api.cuGetErrorString(code, &text);
  const std::string name = error_name(code);
  throw CudaError(code, name,
                  fmt::format("{} failed with {} ({}) at {}:{}", expr, name, text ? text : "no description", file, line));
}

}  // namespace tune::cuda

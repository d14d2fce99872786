#pragma once
// What the tests on the fake driver (fake_cuda.cpp, loaded as libcuda.so.1 through LD_LIBRARY_PATH)
// share: whether the fake is the driver loaded, and its one kernel as a variant of the affine fixture.
#include <dlfcn.h>

#include <string>

#include "tune/compile.hpp"
#include "tune/space.hpp"

namespace tune::test {

// True when the driver this process loaded is the fake (ctest runs these binaries with it).
inline bool fake_driver_loaded() {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  const bool fake = lib != nullptr && dlsym(lib, "tune_fake_cuda_driver") != nullptr;
  if (lib != nullptr) dlclose(lib);
  return fake;
}

// A variant whose one kernel copies x (its first argument) to out (its last): the fake's kernel.
inline CompileResult copy_variant() {
  CompileResult c;
  c.ok = true;
  const std::string image = "tune-fake-copy 4";
  c.cubin.assign(image.begin(), image.end());
  c.cubin.push_back('\0');
  c.lowered_names = {"affine_copy"};
  return c;
}

// The affine fixture's launch of that kernel: x, scale, shift, out.
inline Lowered copy_launch() {
  Lowered l;
  KernelLaunch k;
  k.kernel = "affine_kernel";
  k.name_expression = "affine_copy";
  k.args = {"x", "scale", "shift", "out"};
  l.launches.push_back(k);
  return l;
}

}  // namespace tune::test

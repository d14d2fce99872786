#pragma once
// What a compiled kernel's parameters are, read back from its lowered (mangled) name: a launch that
// hands a tensor to a parameter of another floating type (float* for a bfloat16 tensor) reads its
// data as the wrong numbers, which parity would only call incorrect on a GPU.
#include <string>
#include <vector>

#include "tune/dtype.hpp"

namespace tune {

// The parameter types of a __global__ function's lowered name as the host's demangler writes them
// ("float const*", "__nv_bfloat16*"), in order; empty when the name does not demangle.
std::vector<std::string> kernel_parameter_types(const std::string& lowered_name);

// Why a parameter of `type` reads a tensor of `dtype` as other numbers, or "": a pointer to a
// floating type (float, double, __half, __nv_bfloat16, or their vector types: float4, __half2) of
// another precision than the tensor's, or to any floating type for an integer or bool tensor; and a
// pointer to a scalar integer (short, int, long long, signed or unsigned) of another size than the
// tensor's elements (int* for an int64 tensor). An integer of the element's size, char, void and
// integer vector types are raw access (a bfloat16 tensor read as unsigned short, or as int4), never flagged.
std::string parameter_mismatch(const std::string& type, DType dtype);

}  // namespace tune

#pragma once
// Host stand-in for <cuda_fp16.h> (examples_emu_test.cpp): the compiler's _Float16 converts with
// IEEE round to nearest even, as __float2half_rn does.
struct __half {
  _Float16 v;
};
inline float __half2float(__half h) { return static_cast<float>(h.v); }
inline __half __float2half_rn(float f) { return {static_cast<_Float16>(f)}; }

#pragma once
// Host stand-in for <cuda_bf16.h> (examples_emu_test.cpp): the storage type and the two
// conversions the example kernels use, float -> bfloat16 rounded to nearest even (finite values).
#include <cstdint>
#include <cstring>

struct __nv_bfloat16 {
  std::uint16_t bits;
};
inline float __bfloat162float(__nv_bfloat16 b) {
  const std::uint32_t u = std::uint32_t{b.bits} << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
inline __nv_bfloat16 __float2bfloat16_rn(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return {static_cast<std::uint16_t>(u >> 16)};
}

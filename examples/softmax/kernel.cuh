// Row softmax: out[r, :] = softmax(x[r, :]); one block a row, PER elements a thread per pass.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
template <typename T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}
template <>
__device__ __forceinline__ __half from_float<__half>(float v) {
  return __float2half_rn(v);
}

template <bool MAX>
__device__ __forceinline__ float combine(float a, float b) {
  return MAX ? fmaxf(a, b) : a + b;
}

// Reduces v over the block; every thread gets the result.
template <int BLOCK, bool MAX>
__device__ __forceinline__ float block_reduce(float v, float* red) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = combine<MAX>(v, __shfl_xor_sync(0xffffffffu, v, o));
  constexpr int WARPS = (BLOCK + 31) / 32;
  if (WARPS == 1) return v;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();  // red is reused between reductions
  if (lane == 0) red[warp] = v;
  __syncthreads();
  v = lane < WARPS ? red[lane] : (MAX ? __int_as_float(0xff800000) : 0.0f);
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = combine<MAX>(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

template <typename T, int R, int L, int BLOCK, int PER>
__global__ void __launch_bounds__(BLOCK) softmax_kernel(const T* __restrict__ x, T* __restrict__ out) {
  __shared__ float red[32];
  const T* xr = x + static_cast<long long>(blockIdx.x) * L;
  T* orow = out + static_cast<long long>(blockIdx.x) * L;
  float m = __int_as_float(0xff800000);
  for (int base = threadIdx.x * PER; base < L; base += BLOCK * PER) {
#pragma unroll
    for (int k = 0; k < PER; ++k)
      if (base + k < L) m = fmaxf(m, to_float(xr[base + k]));
  }
  m = block_reduce<BLOCK, true>(m, red);
  float s = 0.0f;
  for (int base = threadIdx.x * PER; base < L; base += BLOCK * PER) {
#pragma unroll
    for (int k = 0; k < PER; ++k)
      if (base + k < L) s += __expf(to_float(xr[base + k]) - m);
  }
  s = block_reduce<BLOCK, false>(s, red);
  const float inv = 1.0f / s;
  for (int base = threadIdx.x * PER; base < L; base += BLOCK * PER) {
#pragma unroll
    for (int k = 0; k < PER; ++k)
      if (base + k < L) orow[base + k] = from_float<T>(__expf(to_float(xr[base + k]) - m) * inv);
  }
}

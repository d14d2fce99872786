// Per-row argmax: out[r] = the first index of the largest x[r, :] (torch.argmax(x, dim=1)).
// One block a row; each thread keeps (value, index), PER elements a thread per pass.

__device__ __forceinline__ void keep_better(float& v, int& i, float ov, int oi) {
  // Larger value wins; on a tie the smaller index does, as torch.argmax returns the first.
  if (ov > v || (ov == v && oi < i)) {
    v = ov;
    i = oi;
  }
}

template <int R, int L, int BLOCK, int PER>
__global__ void __launch_bounds__(BLOCK) argmax_kernel(const float* __restrict__ x, long long* __restrict__ out) {
  __shared__ float red_v[32];
  __shared__ int red_i[32];
  const float* xr = x + static_cast<long long>(blockIdx.x) * L;
  float v = __int_as_float(0xff800000);
  int idx = 0x7fffffff;
  for (int base = threadIdx.x * PER; base < L; base += BLOCK * PER) {
#pragma unroll
    for (int k = 0; k < PER; ++k)
      if (base + k < L) keep_better(v, idx, xr[base + k], base + k);
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float ov = __shfl_xor_sync(0xffffffffu, v, o);
    const int oi = __shfl_xor_sync(0xffffffffu, idx, o);
    keep_better(v, idx, ov, oi);
  }
  constexpr int WARPS = (BLOCK + 31) / 32;
  if (WARPS > 1) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) {
      red_v[warp] = v;
      red_i[warp] = idx;
    }
    __syncthreads();
    if (warp == 0) {
      v = lane < WARPS ? red_v[lane] : __int_as_float(0xff800000);
      idx = lane < WARPS ? red_i[lane] : 0x7fffffff;
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) {
        const float ov = __shfl_xor_sync(0xffffffffu, v, o);
        const int oi = __shfl_xor_sync(0xffffffffu, idx, o);
        keep_better(v, idx, ov, oi);
      }
    }
  }
  if (threadIdx.x == 0) out[blockIdx.x] = idx;
}

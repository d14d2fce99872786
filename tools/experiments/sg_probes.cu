// sg_probes: what bounds scene_graph's cluster kernel on this GPU, on a cold L2: mma.sync TF32
// latency and throughput, the floors of sg_cluster's launch shape (empty kernel, cluster
// barriers, one DRAM round trip, cp.async of 8-64 KB per block, exchanges of 4 chunks to 4 blocks
// by st.async, bulk copy or plain stores and a cluster barrier), and the cold event time of a
// few sg_cluster configurations (L2 flushed before every launch, as tune measures) beside the
// best qtile variant, each output compared with the first's.
//   sg_probes [--samples N] [--warm]   (prints tables; B=4 N=24 D=96 heads=4 P=16;
//                                       --warm: no L2 flush, the caches hold the code and data)
// Until issue 23 this was sg_phases, which also timed the phases of sg_cluster (TUNE_SG_MARK
// marks) and variants with parts of the work left out (sg_cluster's XP bits) or with the
// attention on the tensor cores (then ATTN == 1, slower: 9.41 against 8.74 us at B4 N24); that code
// left the product kernel, and is in git history (bench/src/sg_phases.cu before issue 23).
#include <cmath>
#include <iterator>
#include <random>
#include <string>

#include "phases.hpp"

#include "scene_graph/scene_graph.cuh"

namespace {

constexpr int B = 4, N = 24, D = 96, H = 4, P = 16;

#define CHECK(x) PHASES_CHECK(x)

using Kernel = void (*)(const float*, const float*, const float*, const float*, const float*, const float*,
                        const float*, const float*, const float*, const float*, const float*, const float*,
                        const float*, float*);

struct Variant {
  std::string name;
  Kernel kernel;
  int grid, block, smem;
};

template <int R, int BLOCK, int BULK, int KSPLIT = 1, int ASYNC = 0, int NTILE = 1, int OVERLAP = 0, int OUT = 0,
          int ATTN = 0>
Variant cluster() {
  return {"cluster rsplit=" + std::to_string(R) + " block=" + std::to_string(BLOCK) + (BULK ? " bulk" : "") +
              (KSPLIT > 1 ? " ksplit=" + std::to_string(KSPLIT) : "") + (ASYNC ? " stasync" : "") +
              (NTILE > 1 ? " ntile=" + std::to_string(NTILE) : "") + (OVERLAP ? " overlap" : "") +
              (OUT == 1 ? " out=mma" : OUT == 2 ? " out=butterfly" : "") + (ATTN == 1 ? " attention=quad" : ""),
          sg_cluster<B, N, D, H, P, R, BLOCK, BULK, KSPLIT, ASYNC, NTILE, OVERLAP, OUT, ATTN>,
          B * H * R, BLOCK, tune_kernels::SgClusterLayout<N, D, H, P, R, KSPLIT>::kBytes};
}

// mma.sync m16n8k8 TF32 on this GPU: CHAINS independent accumulators per warp, ITERS MMAs each;
// cycles[blockIdx] = clock64 cycles of warp 0's loop.
template <int CHAINS>
__global__ void mma_probe(int iters, float* sink, long long* cycles) {
  float d[CHAINS][4] = {};
  float a[4] = {1.0f, 2.0f, 3.0f, 4.0f};
  __syncthreads();
  const long long t0 = clock64();
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) tune_kernels::mma_tf32(d[c], a, 0.5f, 0.25f);
  }
  __syncthreads();
  const long long t1 = clock64();
  float s = 0.0f;
#pragma unroll
  for (int c = 0; c < CHAINS; ++c) s += d[c][0] + d[c][1] + d[c][2] + d[c][3];
  if (s == 12345.0f) sink[threadIdx.x] = s;
  if (threadIdx.x == 0) cycles[blockIdx.x] = t1 - t0;
}

// Floors of sg_cluster's launch shape (B H R blocks of 512 threads in clusters of H R = 8, its
// dynamic shared memory): IO loads one float of each input per thread (one DRAM round trip on a
// cold L2) and stores the output; BARRIERS cluster barriers follow the load.
template <int BARRIERS, bool IO>
__global__ void __cluster_dims__(8, 1, 1) __launch_bounds__(512, 1)
    floor_probe(const float* __restrict__ nodes, const float* __restrict__ pf, const float* __restrict__ wq,
                float* __restrict__ out) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  float v = 0.0f;
  if constexpr (IO) v = __ldg(nodes + i % (B * N * D)) + __ldg(pf + i % (B * N * N * P)) + __ldg(wq + i % (D * D));
#pragma unroll
  for (int k = 0; k < BARRIERS; ++k) tune_kernels::sg_cluster_sync();
  if (IO && i < B * N * D) out[i] = v;
}
// The same launch shape, each block copying KB kilobytes into shared memory (cp.async, 16 bytes a
// copy) from one of 8 regions (blocks of a rank share one, as sg_cluster's blocks of one head share
// its weight rows), then storing one value per thread: the cost of a block's loads on a cold L2.
template <int KB>
__global__ void __cluster_dims__(8, 1, 1) __launch_bounds__(512, 1)
    copy_probe(const float* __restrict__ src, const float* __restrict__, const float* __restrict__,
               float* __restrict__ out) {
  extern __shared__ float4 sm4[];
  float* sm = reinterpret_cast<float*>(sm4);
  const float* region = src + (blockIdx.x % 8) * (KB * 256);
  for (int c = static_cast<int>(threadIdx.x); c < KB * 64; c += 512) tune_kernels::sg_copy16(sm + 4 * c, region + 4 * c);
  tune_kernels::copy_commit();
  tune_kernels::copy_wait<0>();
  __syncthreads();
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < B * N * D) out[i] = sm[threadIdx.x % (KB * 256)];
}
// Exchange probes, the same launch shape: every block puts the cluster barrier's arrive first,
// loads CHUNK bytes (one DRAM round trip) into a send buffer, waits until the cluster runs, then
// sends that chunk to each of blocks rank + 1 .. rank + 4 (mod 8), into slot d of their receive
// buffers, waits until the four chunks sent to it have landed and stores one value per thread.
// MODE 0: st.async of 4 bytes, lanes on consecutive words; 1: st.async of 4 bytes, lanes 32 bytes
// apart (the pattern of sg_cluster's bias and k, v stores); 2: st.async of 16 bytes, consecutive;
// 3: one bulk copy (shared::cta to shared::cluster) per chunk; 4: st.shared::cluster of 4 bytes,
// consecutive, then a cluster barrier (release, acquire) instead of the mbarrier.
template <int MODE, int CHUNK>
__global__ void __cluster_dims__(8, 1, 1) __launch_bounds__(512, 1)
    exchange_probe(const float* __restrict__ src, const float* __restrict__, const float* __restrict__,
                   float* __restrict__ out) {
  namespace k = tune_kernels;
  constexpr int W = CHUNK / 4;
  static_assert(CHUNK % 128 == 0, "whole 16-byte units, W a multiple of 8");
  extern __shared__ float4 sm4[];
  float* sm = reinterpret_cast<float*>(sm4);
  float* send = sm;
  float* recv = sm + W;
  float* bar = sm + 5 * W;
  const int tid = static_cast<int>(threadIdx.x);
  const unsigned rank = k::sg_cluster_rank();
  if (MODE != 4 && tid == 0) {
    k::sg_mbar_init(bar, 1);
    k::sg_mbar_expect_bytes(bar, 4u * CHUNK);
  }
  k::sg_cluster_arrive_relaxed();
  for (int w = tid; w < W; w += 512) send[w] = __ldg(src + (blockIdx.x % 8) * W + w);
  if constexpr (MODE == 3) asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  k::sg_cluster_wait();
  const auto dest = [&](int d) { return (rank + 1 + d) % 8; };
  if constexpr (MODE == 0 || MODE == 1 || MODE == 4) {
    for (int idx = tid; idx < 4 * W; idx += 512) {
      const int d = idx / W, w = idx % W;
      const int wt = MODE == 1 ? (w % (W / 8)) * 8 + w / (W / 8) : w;
      if constexpr (MODE == 4) {
        k::sg_cluster_store(recv + d * W + wt, dest(d), send[wt]);
      } else {
        k::sg_st_async(recv + d * W + wt, dest(d), send[wt], bar);
      }
    }
  } else if constexpr (MODE == 2) {
    for (int idx = tid; idx < W; idx += 512) {
      const int d = idx / (W / 4), w = 4 * (idx % (W / 4));
      const float4 v = *reinterpret_cast<const float4*>(send + w);
      asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32 [%0], {%1, %2, %3, %4}, [%5];"
                   ::"r"(k::sg_cluster_address(recv + d * W + w, dest(d))), "r"(__float_as_uint(v.x)),
                   "r"(__float_as_uint(v.y)), "r"(__float_as_uint(v.z)), "r"(__float_as_uint(v.w)),
                   "r"(k::sg_cluster_address(bar, dest(d)))
                   : "memory");
    }
  } else {
    if (tid < 4) {
      asm volatile("cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                   ::"r"(k::sg_cluster_address(recv + tid * W, dest(tid))), "r"(k::sg_smem_address(send)),
                   "r"(static_cast<unsigned>(CHUNK)), "r"(k::sg_cluster_address(bar, dest(tid)))
                   : "memory");
    }
  }
  if constexpr (MODE == 4) {
    k::sg_cluster_sync();
  } else {
    k::sg_mbar_wait<true>(bar, 0);
  }
  const int i = static_cast<int>(blockIdx.x * blockDim.x) + tid;
  if (i < B * N * D) out[i] = recv[tid % (4 * W)];
  if constexpr (MODE != 4) k::sg_cluster_sync();  // no block leaves while others may still write to it
}
__global__ void empty_kernel() {}

}  // namespace

int main(int argc, char** argv) {
  int samples = 200;
  bool warm = false;  // --warm: no L2 flush before the launches (code and data stay in L2)
  for (int a = 1; a < argc; ++a) {
    if (std::string(argv[a]) == "--samples" && a + 1 < argc) samples = std::atoi(argv[a + 1]);
    if (std::string(argv[a]) == "--warm") warm = true;
  }
  const std::vector<Variant> variants = {
      {"qtile qrows=1 block=512 (fused)", sg_fused<B, N, D, H, P, 1, 512, 0, 0, 0>, B * N, 512,
       tune_kernels::sg_attention_smem_bytes(N, D, H, 1, 0)},
      cluster<1, 512, 0>(), cluster<2, 512, 0>(), cluster<2, 512, 0, 1, 1>(), cluster<2, 512, 0, 3, 1, 4>(),
      // (overlap only where the block has a warp per projection task and MLP tile: sg_cluster
      // refuses it elsewhere, as problem.json does; until issue 38 it ran without overlap there)
      cluster<2, 512, 0, 3, 1, 4, 1>(), cluster<2, 512, 0, 3, 1, 4, 1, 1>(), cluster<2, 512, 0, 1, 1, 4, 1, 1>(),
      cluster<2, 256, 0, 3, 1, 4, 0, 1>(),
      // the out projection through the transposed butterfly (out butterfly), the attention by key
      // and column quarter (attention quad), both; with the weights through the bulk-copy engine
      cluster<2, 512, 0, 3, 1, 4, 1, 2>(), cluster<2, 512, 0, 3, 1, 4, 1, 0, 1>(), cluster<2, 512, 0, 3, 1, 4, 1, 2, 1>(),
      cluster<2, 512, 0, 1, 1, 4, 1, 2, 1>(), cluster<2, 512, 0, 3, 1, 1, 0, 2, 1>(), cluster<2, 512, 1, 3, 1, 4, 1, 0>(),
      // more warps per projection (ksplit 4 and 6 are not in the space: all slower, git show 68bdfe0:results/h200/logs/)
      cluster<2, 512, 0, 6, 1, 4, 0>(),
  };
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("%s, %d SMs, L2 %d MiB; B=%d N=%d D=%d heads=%d P=%d, %d cold samples per variant\n", prop.name,
              prop.multiProcessorCount, prop.l2CacheSize >> 20, B, N, D, H, P, samples);

  {  // tensor-core probe: latency (1 warp, 1 chain) and throughput (16 warps x 8 chains per SM)
    float* sink;
    long long* cyc;
    CHECK(cudaMalloc(&sink, 4096));
    CHECK(cudaMalloc(&cyc, sizeof(long long)));
    const int iters = 4096;
    long long c1 = 0, c8 = 0;
    mma_probe<1><<<1, 32>>>(iters, sink, cyc);
    CHECK(cudaMemcpy(&c1, cyc, 8, cudaMemcpyDeviceToHost));
    mma_probe<8><<<1, 512>>>(iters, sink, cyc);
    CHECK(cudaMemcpy(&c8, cyc, 8, cudaMemcpyDeviceToHost));
    std::printf("mma.sync m16n8k8 tf32: %.1f cycles per dependent MMA (1 warp); %.2f cycles per MMA per SM "
                "(16 warps x 8 chains)\n", double(c1) / iters, double(c8) / (iters * 16.0 * 8.0));
    CHECK(cudaFree(sink));
    CHECK(cudaFree(cyc));
  }
  const std::size_t flush_bytes = std::max<std::size_t>(2 * prop.l2CacheSize, 8 << 20);
  void* flush;
  CHECK(cudaMalloc(&flush, flush_bytes));
  {  // launch and latency floors, cold like the variants below
    float* buf;
    const std::size_t buf_bytes = std::max<std::size_t>(std::size_t{B} * N * N * P * 4, 8 * 64 * 1024);
    CHECK(cudaMalloc(&buf, buf_bytes));
    CHECK(cudaMemset(buf, 0, buf_bytes));
    const int smem = tune_kernels::SgClusterLayout<N, D, H, P, 2>::kBytes;
    const auto report = [&](const char* name, const auto& run) {
      const std::vector<double> t = event_times(run, samples, warm ? nullptr : flush, flush_bytes);
      std::printf("floor %-48s %s median %.3f us (q10 %.3f, q90 %.3f)\n", name, warm ? "warm" : "cold",
                  quantile(t, 0.5), quantile(t, 0.1), quantile(t, 0.9));
    };
    const auto probe = [&](const char* name, auto kernel, int grid, int block, int bytes) {
      CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
      report(name, [&] { kernel<<<grid, block, bytes>>>(buf, buf, buf, buf); CHECK(cudaGetLastError()); });
    };
    report("empty, 1 x 32", [&] { empty_kernel<<<1, 32>>>(); CHECK(cudaGetLastError()); });
    probe("empty, clusters of 8, 32 x 512, no smem", floor_probe<0, false>, B * 8, 512, 0);
    probe("empty, clusters of 8, 32 x 512, sg_cluster smem", floor_probe<0, false>, B * 8, 512, smem);
    probe("1 cluster barrier", floor_probe<1, false>, B * 8, 512, smem);
    probe("2 cluster barriers", floor_probe<2, false>, B * 8, 512, smem);
    probe("loads + store", floor_probe<0, true>, B * 8, 512, smem);
    probe("loads + 2 cluster barriers + store", floor_probe<2, true>, B * 8, 512, smem);
    probe("cp.async 8 KB per block + store", copy_probe<8>, B * 8, 512, 64 * 1024);
    probe("cp.async 16 KB per block + store", copy_probe<16>, B * 8, 512, 64 * 1024);
    probe("cp.async 32 KB per block + store", copy_probe<32>, B * 8, 512, 64 * 1024);
    probe("cp.async 48 KB per block + store", copy_probe<48>, B * 8, 512, 64 * 1024);
    probe("cp.async 64 KB per block + store", copy_probe<64>, B * 8, 512, 64 * 1024);
    probe("load, 4 x 1152 B st.async 4 B consecutive", exchange_probe<0, 1152>, B * 8, 512, 64 * 1024);
    probe("load, 4 x 1152 B st.async 4 B 32 B apart", exchange_probe<1, 1152>, B * 8, 512, 64 * 1024);
    probe("load, 4 x 1152 B st.async 16 B consecutive", exchange_probe<2, 1152>, B * 8, 512, 64 * 1024);
    probe("load, 4 x 1152 B bulk copy", exchange_probe<3, 1152>, B * 8, 512, 64 * 1024);
    probe("load, 4 x 1152 B st.shared::cluster + barrier", exchange_probe<4, 1152>, B * 8, 512, 64 * 1024);
    probe("load, 4 x 4608 B st.async 4 B consecutive", exchange_probe<0, 4608>, B * 8, 512, 64 * 1024);
    probe("load, 4 x 4608 B st.async 4 B 32 B apart", exchange_probe<1, 4608>, B * 8, 512, 64 * 1024);
    probe("load, 4 x 4608 B st.async 16 B consecutive", exchange_probe<2, 4608>, B * 8, 512, 64 * 1024);
    probe("load, 4 x 4608 B bulk copy", exchange_probe<3, 4608>, B * 8, 512, 64 * 1024);
    probe("load, 4 x 4608 B st.shared::cluster + barrier", exchange_probe<4, 4608>, B * 8, 512, 64 * 1024);
    CHECK(cudaFree(buf));
  }
  std::mt19937 rng(7);
  std::normal_distribution<float> nd;
  auto upload = [&](std::size_t n, float scale, float shift) {
    std::vector<float> h(n);
    for (auto& e : h) e = shift + scale * nd(rng);
    float* d;
    CHECK(cudaMalloc(&d, n * 4));
    CHECK(cudaMemcpy(d, h.data(), n * 4, cudaMemcpyHostToDevice));
    return d;
  };
  float* nodes = upload(std::size_t{B} * N * D, 1, 0);
  float* pf = upload(std::size_t{B} * N * N * P, 1, 0);
  std::vector<float> mask(std::size_t{B} * N * N);
  std::bernoulli_distribution edge(0.7);
  for (auto& m : mask) m = edge(rng) ? 1.0f : 0.0f;
  float* msk;
  CHECK(cudaMalloc(&msk, mask.size() * 4));
  CHECK(cudaMemcpy(msk, mask.data(), mask.size() * 4, cudaMemcpyHostToDevice));
  float *g = upload(D, 0.2f, 1), *be = upload(D, 0.2f, 0);
  const float ws = 1.0f / std::sqrt(float(D));
  float *wq = upload(D * D, ws, 0), *wk = upload(D * D, ws, 0), *wv = upload(D * D, ws, 0), *wo = upload(D * D, ws, 0);
  float *w0 = upload(P * P, 0.25f, 0), *b0 = upload(P, 0.1f, 0), *w2 = upload(H * P, 0.25f, 0), *b2 = upload(H, 0.1f, 0);
  float* out;
  CHECK(cudaMalloc(&out, std::size_t{B} * N * D * 4));

  std::vector<float> reference;
  for (const Variant& v : variants) {
    CHECK(cudaFuncSetAttribute(v.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, v.smem));
    auto launch = [&] {
      v.kernel<<<v.grid, v.block, v.smem>>>(nodes, pf, msk, g, be, wq, wk, wv, w0, b0, w2, b2, wo, out);
      CHECK(cudaGetLastError());
    };
    const std::vector<double> cold = event_times(launch, samples, warm ? nullptr : flush, flush_bytes);
    std::vector<float> got(std::size_t{B} * N * D);
    CHECK(cudaMemcpy(got.data(), out, got.size() * 4, cudaMemcpyDeviceToHost));
    if (reference.empty()) reference = got;  // the first variant (qtile, fused) is the reference
    double diff = 0.0;
    for (std::size_t e = 0; e < got.size(); ++e) diff = std::max(diff, double(std::fabs(got[e] - reference[e])));
    std::printf("\n%-36s %s median %.3f us (q10 %.3f, q90 %.3f), grid %d x %d, max |out - first variant's| %.2e\n",
                v.name.c_str(), warm ? "warm" : "cold", quantile(cold, 0.5), quantile(cold, 0.1), quantile(cold, 0.9),
                v.grid, v.block, diff);
  }
  return 0;
}

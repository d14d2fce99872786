// Does compute-sanitizer racecheck understand a cluster exchange by st.async and an mbarrier, and
// named barriers that only some warps of a block pass?
//
// sg_cluster (ASYNC = 1) exchanges rows between the blocks of a cluster: a block stores its own
// row with a plain shared store, sends it to the other blocks with st.async (each store completes
// bytes on the receiver's mbarrier), and the receiver waits on its mbarrier (acquire.cluster)
// after a __syncthreads. This probe has that exchange and its controls, one mode per launch:
//
//   sync          own row only, __syncthreads, read: the plain control (no cluster traffic).
//   cluster       remote st.shared::cluster stores, barrier.cluster arrive/wait, read.
//   stasync       the sg_cluster exchange: plain own row + st.async, __syncthreads, mbarrier wait.
//   stasync_bar   as stasync, and a __syncthreads after the mbarrier wait.
//   stasync_self  as stasync, the own row sent by st.async too (no plain store).
//   stasync_race  as stasync without the mbarrier wait: a real race (the plant).
//
// sg_cluster's warps also meet at named barriers that cover only some of them (bar.sync 15 over
// the 12 LayerNorm warps of 16; with ksplit 3, bar.sync 1..3 over each group of 3 projection
// warps) before they write the rows that the __syncthreads then publishes to every warp. The
// modes below have that pattern; the first three are correct code (every read follows the
// __syncthreads that follows every write), so a hazard racecheck reports there is its own:
//
//   stasync_namedbar  as stasync, the first 2 of the 4 warps meeting at a named barrier (64
//                     threads) before their stores, which the other 2 skip; each thread then
//                     reads the columns the other pair of warps stored.
//   namedbar          one block of 8 warps, no cluster: warps 0..5 meet at a named barrier (192
//                     threads), warps 0..2 then write a row each, __syncthreads, every warp reads
//                     every row; warps 6, 7 passed one barrier fewer than the writers.
//   namedbar_even     as namedbar, warps 6, 7 meeting at a named barrier of their own (64
//                     threads), so every warp passed as many barriers before the __syncthreads.
//   namedbar_race     as namedbar with the __syncthreads replaced by a named barrier of warps
//                     0..5 only: warps 6, 7 read with nothing ordering them after the writes, a
//                     real race (the plant of this family).
//
// Build and run (sm_90):
//   nvcc -arch=sm_90 -lineinfo -o cluster_exchange tools/sanitizer/cluster_exchange.cu
//   for m in sync cluster stasync stasync_bar stasync_self stasync_race stasync_namedbar namedbar \
//            namedbar_even namedbar_race; do
//     compute-sanitizer --tool racecheck ./cluster_exchange $m; done
// Each run prints the mode and whether every block read every row right.
#include <cstdio>
#include <cstring>

#include <cuda_runtime.h>

namespace {

constexpr int kBlocks = 4;   // the cluster
constexpr int kCols = 256;   // floats per row
constexpr int kThreads = 128;

enum Mode { kSync, kCluster, kStAsync, kStAsyncBar, kStAsyncSelf, kStAsyncRace, kStAsyncNamedBar, kNamedBar, kNamedBarEven,
            kNamedBarRace };
constexpr const char* kModeNames[] = {"sync",         "cluster",          "stasync",  "stasync_bar",
                                     "stasync_self", "stasync_race",     "stasync_namedbar", "namedbar",
                                     "namedbar_even", "namedbar_race"};
constexpr int kModes = sizeof(kModeNames) / sizeof(kModeNames[0]);

__device__ unsigned smem_address(const void* p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }

__device__ unsigned cluster_address(const void* p, unsigned rank) {
  unsigned remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(smem_address(p)), "r"(rank));
  return remote;
}

__device__ unsigned cluster_rank() {
  unsigned rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  return rank;
}

__device__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.aligned;" ::: "memory");
  asm volatile("barrier.cluster.wait.aligned;" ::: "memory");
}

__device__ void mbar_init(void* bar, unsigned bytes) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_address(bar)) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_address(bar)), "r"(bytes) : "memory");
}

__device__ void mbar_wait_cluster(void* bar) {
  unsigned done = 0;
  while (!done) {
    asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], 0;\n selp.u32 %0, 1, 0, p;\n}"
                 : "=r"(done) : "r"(smem_address(bar)) : "memory");
  }
}

__device__ void st_async(float* p, unsigned rank, float v, void* bar) {
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%0], %1, [%2];"
               ::"r"(cluster_address(p, rank)), "r"(__float_as_uint(v)), "r"(cluster_address(bar, rank)) : "memory");
}

__device__ void st_cluster(float* p, unsigned rank, float v) {
  asm volatile("st.shared::cluster.f32 [%0], %1;" ::"r"(cluster_address(p, rank)), "f"(v) : "memory");
}

__global__ void __cluster_dims__(kBlocks, 1, 1) exchange(int mode, float* out) {
  __shared__ float rows[kBlocks][kCols];
  __shared__ alignas(8) unsigned long long bar;
  const unsigned rank = cluster_rank();
  const int tid = static_cast<int>(threadIdx.x);
  const bool async = mode == kStAsync || mode == kStAsyncBar || mode == kStAsyncSelf || mode == kStAsyncRace ||
                     mode == kStAsyncNamedBar;
  if (async && tid == 0) {
    const int from_others = (kBlocks - 1) * kCols * 4, from_self = mode == kStAsyncSelf ? kCols * 4 : 0;
    mbar_init(&bar, static_cast<unsigned>(from_others + from_self));
  }
  // every block running, its mbarrier initialised, before any block writes another's memory
  cluster_sync();
  // sg_cluster's projection warps meet at a named barrier before their stores; the others skip it
  if (mode == kStAsyncNamedBar && tid < 64) asm volatile("bar.sync 1, 64;" ::: "memory");
  for (int c = tid; c < kCols; c += kThreads) {
    const float v = static_cast<float>(rank * kCols + c);
    if (mode == kSync) {
      rows[rank][c] = v;
      continue;
    }
    for (unsigned to = 0; to < kBlocks; ++to) {
      if (mode == kCluster) {
        st_cluster(&rows[rank][c], to, v);
      } else if (to == rank && mode != kStAsyncSelf) {
        rows[rank][c] = v;
      } else {
        st_async(&rows[rank][c], to, v, &bar);
      }
    }
  }
  if (mode == kCluster) {
    cluster_sync();
  } else {
    __syncthreads();
    if (async && mode != kStAsyncRace) mbar_wait_cluster(&bar);
    if (mode == kStAsyncBar) __syncthreads();
  }
  const int rows_read = mode == kSync ? 1 : kBlocks;
  // A thread reads the columns it stored itself, except in stasync_namedbar: there the columns 64
  // on, which the other pair of warps stored (a hazard needs two threads).
  const int shift = mode == kStAsyncNamedBar ? 64 : 0;
  float sum = 0.0f;
  for (int r = 0; r < rows_read; ++r) {
    const int row = mode == kSync ? static_cast<int>(rank) : r;
    for (int c0 = tid; c0 < kCols; c0 += kThreads) {
      const int c = (c0 + shift) % kCols;
      sum += rows[row][c] == static_cast<float>(row * kCols + c) ? 0.0f : 1.0f;
    }
  }
  atomicAdd(out, sum);
  // the plant waits after its reads: every byte sent to a block lands before it leaves
  if (mode == kStAsyncRace) mbar_wait_cluster(&bar);
}

// The named-barrier modes in one block of kNbThreads, no cluster (see the top of the file).
constexpr int kNbThreads = 256;  // 8 warps
constexpr int kNbMet = 6;        // warps 0 .. 5 meet at named barrier 1 (sg_cluster: the LayerNorm warps)
constexpr int kNbWriters = 3;    // warps 0 .. 2 write a row each (sg_cluster: the projection warps)

__global__ void named_barriers(int mode, float* out) {
  __shared__ float rows[kNbWriters][kCols];
  const int tid = static_cast<int>(threadIdx.x), warp = tid / 32, lane = tid % 32;
  if (warp < kNbMet) {
    asm volatile("bar.sync 1, %0;" ::"n"(kNbMet * 32) : "memory");
  } else if (mode == kNamedBarEven) {
    asm volatile("bar.sync 2, %0;" ::"n"(kNbThreads - kNbMet * 32) : "memory");
  }
  if (warp < kNbWriters) {
    for (int c = lane; c < kCols; c += 32) rows[warp][c] = static_cast<float>(warp * kCols + c);
  }
  if (mode == kNamedBarRace) {
    if (warp < kNbMet) asm volatile("bar.sync 3, %0;" ::"n"(kNbMet * 32) : "memory");
  } else {
    __syncthreads();
  }
  float sum = 0.0f;
  for (int idx = tid; idx < kNbWriters * kCols; idx += kNbThreads) {
    sum += rows[idx / kCols][idx % kCols] == static_cast<float>(idx) ? 0.0f : 1.0f;
  }
  atomicAdd(out, sum);
}

}  // namespace

int main(int argc, char** argv) {
  int mode = -1;
  for (int m = 0; m < kModes && argc > 1; ++m) {
    if (std::strcmp(argv[1], kModeNames[m]) == 0) mode = m;
  }
  if (mode < 0) {
    std::fprintf(stderr, "usage: cluster_exchange MODE, MODE one of:");
    for (const char* name : kModeNames) std::fprintf(stderr, " %s", name);
    std::fprintf(stderr, "\n");
    return 2;
  }
  float* out = nullptr;
  cudaMalloc(&out, sizeof(float));
  cudaMemset(out, 0, sizeof(float));
  if (mode >= kNamedBar) {
    named_barriers<<<1, kNbThreads>>>(mode, out);
  } else {
    exchange<<<kBlocks, kThreads>>>(mode, out);
  }
  float wrong = -1.0f;
  const cudaError_t err = cudaMemcpy(&wrong, out, sizeof(float), cudaMemcpyDeviceToHost);
  std::printf("%s: %s, %g wrong element(s)\n", kModeNames[mode], cudaGetErrorString(err), wrong);
  cudaFree(out);
  return err == cudaSuccess && wrong == 0.0f ? 0 : 1;
}

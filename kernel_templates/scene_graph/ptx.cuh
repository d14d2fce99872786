#pragma once
// The inline PTX of the scene_graph kernels beyond tune_common.cuh's: cp.async without a
// source size, prefetches, thread-block clusters (rank, barriers, distributed shared memory),
// mbarriers, the bulk-copy engine and st.async (sm_90).
// Part of the scene_graph template (scene_graph.cuh).

namespace tune_kernels {

__device__ __forceinline__ unsigned sg_dynamic_smem_size() {
  unsigned bytes;
  asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(bytes));
  return bytes;
}
__device__ __forceinline__ unsigned sg_smem_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
// Asynchronous global -> shared copies (sm_80+), so weight transfers overlap compute.
__device__ __forceinline__ void sg_copy16(float* dst, const float* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(sg_smem_address(dst)), "l"(src) : "memory");
}
__device__ __forceinline__ void sg_copy4(float* dst, const float* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(sg_smem_address(dst)), "l"(src) : "memory");
}
__device__ __forceinline__ void sg_prefetch_l2(const float* p) { asm volatile("prefetch.global.L2 [%0];" ::"l"(p)); }
__device__ __forceinline__ void sg_prefetch_l1(const float* p) { asm volatile("prefetch.global.L1 [%0];" ::"l"(p)); }
// Thread-block clusters (sm_90): this block's rank, a barrier over the cluster's blocks (it also
// orders their shared-memory writes before the reads that follow), and a load from the shared
// memory of block `rank` at the offset of `p` in this block's.
__device__ __forceinline__ unsigned sg_cluster_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
__device__ __forceinline__ void sg_cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
// The shared::cluster address of `p`'s offset in the shared memory of block `rank`.
__device__ __forceinline__ unsigned sg_cluster_address(const void* p, unsigned rank) {
  unsigned remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(sg_smem_address(p)), "r"(rank));
  return remote;
}
__device__ __forceinline__ float sg_cluster_load(const float* p, unsigned rank) {
  const unsigned remote = sg_cluster_address(p, rank);
  float v;
  asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(remote) : "memory");
  return v;
}
// A store into the shared memory of block `rank` of this cluster, at the offset of `p` in this
// block's; the split cluster barrier (arrive early, wait before the first remote access) lets
// a block run ahead until it first writes into another one.
__device__ __forceinline__ void sg_cluster_store(float* p, unsigned rank, float v) {
  const unsigned remote = sg_cluster_address(p, rank);
  asm volatile("st.shared::cluster.f32 [%0], %1;" ::"r"(remote), "f"(v) : "memory");
}
__device__ __forceinline__ void sg_cluster_arrive_relaxed() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
}
__device__ __forceinline__ void sg_cluster_wait() { asm volatile("barrier.cluster.wait.aligned;" ::: "memory"); }
// The Hopper bulk-copy engine (TMA, sm_90): one thread starts a copy of BYTES (a multiple of 16,
// both ends 16-byte aligned) into this block's shared memory; the mbarrier's transaction count
// tracks the bytes, and a wait on its phase returns once all expected bytes have landed.
__device__ __forceinline__ void sg_mbar_init(void* bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(sg_smem_address(bar)), "r"(count) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
__device__ __forceinline__ void sg_mbar_expect_bytes(void* bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(sg_smem_address(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void sg_bulk_copy(float* dst, const float* src, unsigned bytes, void* bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                   sg_smem_address(dst)),
               "l"(src), "r"(bytes), "r"(sg_smem_address(bar))
               : "memory");
}
// Waits until the mbarrier's phase `phase` has completed. CLUSTER: acquire semantics at cluster
// scope, so the data other blocks of the cluster delivered with sg_st_async in that phase is
// visible after it (default: cta scope, enough for this block's own bulk copies).
template <bool CLUSTER = false>
__device__ __forceinline__ void sg_mbar_wait(void* bar, unsigned phase) {
  unsigned done = 0;
  while (!done) {
    if constexpr (CLUSTER) {
      asm volatile(
          "{\n .reg .pred p;\n mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}"
          : "=r"(done)
          : "r"(sg_smem_address(bar)), "r"(phase)
          : "memory");
    } else {
      asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}"
                   : "=r"(done)
                   : "r"(sg_smem_address(bar)), "r"(phase)
                   : "memory");
    }
  }
}
// A store of v into the shared memory of block `rank` of the cluster, at the offset of `p` in this
// block's, that completes 4 bytes of the transaction count of that block's mbarrier at the offset
// of `bar` (sm_90 st.async): no fence and no cluster barrier; the receiver waits on its mbarrier.
__device__ __forceinline__ void sg_st_async(float* p, unsigned rank, float v, void* bar) {
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%0], %1, [%2];" ::"r"(
                   sg_cluster_address(p, rank)),
               "r"(__float_as_uint(v)), "r"(sg_cluster_address(bar, rank))
               : "memory");
}

// As sg_st_async, two floats at an 8-byte aligned p (8 bytes of the transaction count).
__device__ __forceinline__ void sg_st_async2(float* p, unsigned rank, float v0, float v1, void* bar) {
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.b32 [%0], {%1, %2}, [%3];" ::"r"(
                   sg_cluster_address(p, rank)),
               "r"(__float_as_uint(v0)), "r"(__float_as_uint(v1)), "r"(sg_cluster_address(bar, rank))
               : "memory");
}

}  // namespace tune_kernels

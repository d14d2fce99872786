#pragma once
// The scene_graph kernels' dynamic shared memory, declared once: every phase function finds its
// buffers in sg_smem at the offsets of its kernel's layout (sizes.cuh, kernels/*.cuh), naming it
// with `using tune_kernels::sg_smem;` where it is outside the namespace. The array itself, not a
// pointer to it, so that the compiler keeps every access a shared-memory one (a pointer returned
// by a function, or handed from the kernel, changed the machine code).
// Part of the scene_graph template (scene_graph.cuh).

#include "tune_common.cuh"

namespace tune_kernels {

extern __shared__ float4 sg_smem[];

}  // namespace tune_kernels

// A compiled variant loaded into the current context and the device buffers it launches on
// (measure/runner.cpp times and checks them).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cuda/driver.hpp"
#include "cuda/owners.hpp"
#include "tune/measure.hpp"

namespace tune::device_run {

// Device copies of one set of parameters and inputs, plus the output. `id` names this upload for
// the argument bindings (LoadedVariant::bind): never its address, which the next set may reuse.
struct BufferSet {
  std::map<std::string, cuda::DeviceBuffer> buffers;
  std::size_t out_elements = 0;
  std::uint64_t id = 0;
};

// One launch's output: the device's bytes and their values (an int64 output's integers exactly).
struct Output {
  std::vector<std::byte> bytes;
  OutputValues values;
  static Output of(DType t, std::vector<std::byte> bytes);
};

// Uploads the parameters and inputs and allocates the output.
BufferSet upload(const ProblemData& data, const TensorSpec& out);

// Kernel arguments of every launch, resolved against one buffer set: launching is then only
// the driver call (the timing loops launch thousands of times).
struct BoundArgs {
  std::vector<std::vector<CUdeviceptr>> values;
  std::vector<std::vector<void*>> params;  // point into values
};

// A compiled variant loaded into the current context, ready to launch on either buffer set.
// Its bindings are keyed by the set's upload id: the gate uploads each further input into a set at
// the same stack address, and a binding keyed by that address launched the next input's kernels on
// the previous input's freed buffers. On the H200 (ln_linear_gelu M1000 K260 N300) the second
// input's x and fc.weight took their predecessors' addresses again, its small buffers did not, so
// every finalist, the baseline too, read the first input's norm.weight, norm.bias and fc.bias.
struct LoadedVariant {
  cuda::Module module;
  std::vector<CUfunction> functions;
  std::vector<KernelLaunch> launches;
  std::map<std::string, cuda::DeviceBuffer> scratch;
  mutable std::map<std::uint64_t, BoundArgs> bound;

  // The arguments of every launch against `set`, bound once per set; throws InputError when a
  // launch names a buffer that is neither the set's nor a scratch buffer.
  BoundArgs& bind(const BufferSet& set) const;

  // Drops the binding of a set about to be freed.
  void unbind(const BufferSet& set) const { bound.erase(set.id); }
};

}  // namespace tune::device_run

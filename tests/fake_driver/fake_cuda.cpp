// A stand-in for libcuda.so.1 with the ordering the CUDA documentation gives ("API
// synchronization behavior", "Stream synchronization behavior") and no GPU: device memory is host
// memory, and the one kernel it runs copies its first argument to its last. Where the
// documentation leaves an order open, the fake takes the worst one:
//   - cuMemcpyHtoD from pageable memory returns once the data is staged; the DMA of the final
//     staged chunk (kStagingBytes) is still in flight on the legacy default stream.
//   - Work on a CU_STREAM_NON_BLOCKING stream is queued: it runs when the host waits for it
//     (cuStreamSynchronize of that stream, cuEventSynchronize, cuCtxSynchronize, cuMemFree), and
//     then before any DMA still in flight lands, as nothing orders the two.
//   - The legacy stream (cuMemcpy*, work on stream 0 or a blocking stream) waits for its own DMA
//     but not for the non-blocking streams' work; cuMemcpyDtoH then reads what memory holds.
//   - Freed device memory is never handed out again: a real driver gives the address to a later
//     allocation, maybe of another buffer, so a launch that names a freed buffer reads something
//     else's bytes; here it fails (CUDA_ERROR_INVALID_VALUE) instead of working by luck.
// Every entry point tune's driver table names exists (the loader refuses a driver that lacks one);
// those the tests do not use return CUDA_ERROR_NOT_SUPPORTED.
#include <cuda.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace {

constexpr std::size_t kStagingBytes = 64 * 1024;

struct Allocation {
  std::vector<unsigned char> bytes;
};

struct PendingCopy {
  unsigned char* dst;
  std::vector<unsigned char> data;
};

struct FakeStream {
  unsigned flags;
};

struct FakeModule {
  int args = 0;  // the copy kernel's parameter count, from the image "tune-fake-copy <args>"
};

std::mutex m;
std::map<CUdeviceptr, Allocation*> allocations;
std::vector<Allocation*> freed;             // kept, so that no later allocation takes a freed address
std::vector<PendingCopy> pending;           // DMA in flight on the legacy stream
std::vector<std::function<void()>> queued;  // work of the non-blocking streams, in issue order

void land_pending() {
  for (auto& p : pending) std::memcpy(p.dst, p.data.data(), p.data.size());
  pending.clear();
}

// The host waits for everything: the queued work first (it may overtake the DMA), then the DMA.
void run_all() {
  for (auto& w : queued) w();
  queued.clear();
  land_pending();
}

bool non_blocking(CUstream s) {
  return s != nullptr && s != CU_STREAM_LEGACY && s != CU_STREAM_PER_THREAD &&
         (reinterpret_cast<FakeStream*>(s)->flags & CU_STREAM_NON_BLOCKING) != 0;
}

// Runs `work` on stream `s`: queued on a non-blocking stream; otherwise now, after the legacy
// stream's DMA.
void issue(CUstream s, std::function<void()> work) {
  if (non_blocking(s)) {
    queued.push_back(std::move(work));
  } else {
    land_pending();
    work();
  }
}

Allocation* find(CUdeviceptr p, std::size_t* offset) {
  auto it = allocations.upper_bound(p);
  if (it == allocations.begin()) return nullptr;
  --it;
  if (p - it->first >= it->second->bytes.size()) return nullptr;
  *offset = p - it->first;
  return it->second;
}

}  // namespace

extern "C" {

// Tests ask for this symbol to know they run on the fake.
__attribute__((visibility("default"))) int tune_fake_cuda_driver = 1;

CUresult CUDAAPI cuInit(unsigned int) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuDriverGetVersion(int* v) {
  *v = CUDA_VERSION;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGet(CUdevice* d, int ordinal) {
  if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
  *d = 0;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetCount(int* n) {
  *n = 1;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetName(char* name, int len, CUdevice) {
  std::strncpy(name, "Fake CUDA driver", static_cast<std::size_t>(len));
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetUuid(CUuuid* u, CUdevice) {
  std::memset(u, 0, sizeof(*u));
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetAttribute(int*, CUdevice_attribute, CUdevice) { return CUDA_ERROR_NOT_SUPPORTED; }
CUresult CUDAAPI cuDeviceTotalMem(size_t* bytes, CUdevice) {
  *bytes = std::size_t{1} << 32;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext* c, CUdevice) {
  static int ctx;
  *c = reinterpret_cast<CUcontext>(&ctx);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuDevicePrimaryCtxReset(CUdevice) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuCtxSetCurrent(CUcontext) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuCtxSynchronize(void) {
  const std::lock_guard lock(m);
  run_all();
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemGetInfo(size_t* free_bytes, size_t* total) {
  *free_bytes = *total = std::size_t{1} << 32;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleLoadData(CUmodule* module, const void* image) {
  const char* text = static_cast<const char*>(image);
  const char* kPrefix = "tune-fake-copy ";
  if (std::strncmp(text, kPrefix, std::strlen(kPrefix)) != 0) return CUDA_ERROR_INVALID_IMAGE;
  auto* f = new FakeModule{std::atoi(text + std::strlen(kPrefix))};
  if (f->args < 2) {
    delete f;
    return CUDA_ERROR_INVALID_IMAGE;
  }
  *module = reinterpret_cast<CUmodule>(f);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuModuleUnload(CUmodule module) {
  delete reinterpret_cast<FakeModule*>(module);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuModuleGetFunction(CUfunction* fn, CUmodule module, const char*) {
  *fn = reinterpret_cast<CUfunction>(module);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuFuncGetAttribute(int* v, CUfunction_attribute, CUfunction) {
  *v = 0;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuFuncSetAttribute(CUfunction, CUfunction_attribute, int) { return CUDA_SUCCESS; }

// The copy kernel: its last argument gets the bytes of its first (as many as both hold).
CUresult CUDAAPI cuLaunchKernel(CUfunction fn, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int,
                                unsigned int, unsigned int, CUstream stream, void** params, void**) {
  const std::lock_guard lock(m);
  const int args = reinterpret_cast<FakeModule*>(fn)->args;
  const CUdeviceptr src = *static_cast<CUdeviceptr*>(params[0]);
  const CUdeviceptr dst = *static_cast<CUdeviceptr*>(params[args - 1]);
  std::size_t so = 0, d_o = 0;
  Allocation* a = find(src, &so);
  Allocation* b = find(dst, &d_o);
  if (a == nullptr || b == nullptr) return CUDA_ERROR_INVALID_VALUE;
  issue(stream, [=] {
    const std::size_t n = std::min(a->bytes.size() - so, b->bytes.size() - d_o);
    std::memcpy(b->bytes.data() + d_o, a->bytes.data() + so, n);
  });
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemAlloc(CUdeviceptr* p, size_t bytes) {
  const std::lock_guard lock(m);
  auto* a = new Allocation{std::vector<unsigned char>(bytes, 0)};
  *p = reinterpret_cast<CUdeviceptr>(a->bytes.data());
  allocations[*p] = a;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemFree(CUdeviceptr p) {
  const std::lock_guard lock(m);
  auto it = allocations.find(p);
  if (it == allocations.end()) return CUDA_ERROR_INVALID_VALUE;
  run_all();  // cuMemFree synchronizes the device
  freed.push_back(it->second);
  allocations.erase(it);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemcpyHtoD(CUdeviceptr dst, const void* src, size_t bytes) {
  const std::lock_guard lock(m);
  std::size_t off = 0;
  Allocation* a = find(dst, &off);
  if (a == nullptr || off + bytes > a->bytes.size()) return CUDA_ERROR_INVALID_VALUE;
  land_pending();  // "a stream sync is performed before the copy is initiated"
  const std::size_t last = bytes == 0 ? 0 : (bytes - 1) / kStagingBytes * kStagingBytes;
  std::memcpy(a->bytes.data() + off, src, last);
  const auto* s = static_cast<const unsigned char*>(src);
  pending.push_back({a->bytes.data() + off + last, std::vector<unsigned char>(s + last, s + bytes)});
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemcpyDtoH(void* dst, CUdeviceptr src, size_t bytes) {
  const std::lock_guard lock(m);
  std::size_t off = 0;
  Allocation* a = find(src, &off);
  if (a == nullptr || off + bytes > a->bytes.size()) return CUDA_ERROR_INVALID_VALUE;
  land_pending();  // on the legacy stream, after its earlier work
  std::memcpy(dst, a->bytes.data() + off, bytes);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemsetD32Async(CUdeviceptr p, unsigned int v, size_t n, CUstream stream) {
  const std::lock_guard lock(m);
  std::size_t off = 0;
  Allocation* a = find(p, &off);
  if (a == nullptr || off + 4 * n > a->bytes.size()) return CUDA_ERROR_INVALID_VALUE;
  issue(stream, [=] {
    for (std::size_t k = 0; k < n; ++k) std::memcpy(a->bytes.data() + off + 4 * k, &v, 4);
  });
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr p, unsigned char v, size_t n, CUstream stream) {
  const std::lock_guard lock(m);
  std::size_t off = 0;
  Allocation* a = find(p, &off);
  if (a == nullptr || off + n > a->bytes.size()) return CUDA_ERROR_INVALID_VALUE;
  issue(stream, [=] { std::memset(a->bytes.data() + off, v, n); });
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamCreate(CUstream* s, unsigned int flags) {
  *s = reinterpret_cast<CUstream>(new FakeStream{flags});
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamDestroy(CUstream s) {
  const std::lock_guard lock(m);
  run_all();  // the stream's work still runs
  delete reinterpret_cast<FakeStream*>(s);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamSynchronize(CUstream s) {
  const std::lock_guard lock(m);
  if (non_blocking(s)) {
    for (auto& w : queued) w();  // one queue for every non-blocking stream: this one's work and more
    queued.clear();
  } else {
    land_pending();
  }
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuEventCreate(CUevent* e, unsigned int) {
  static int event;
  *e = reinterpret_cast<CUevent>(&event);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuEventDestroy(CUevent) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuEventRecord(CUevent, CUstream) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuEventSynchronize(CUevent) {
  const std::lock_guard lock(m);
  run_all();
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuEventElapsedTime(float* ms, CUevent, CUevent) {
  *ms = 0;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamBeginCapture(CUstream, CUstreamCaptureMode) { return CUDA_ERROR_NOT_SUPPORTED; }
CUresult CUDAAPI cuStreamEndCapture(CUstream, CUgraph*) { return CUDA_ERROR_NOT_SUPPORTED; }
CUresult CUDAAPI cuGraphInstantiateWithFlags(CUgraphExec*, CUgraph, unsigned long long) { return CUDA_ERROR_NOT_SUPPORTED; }
CUresult CUDAAPI cuGraphLaunch(CUgraphExec, CUstream) { return CUDA_ERROR_NOT_SUPPORTED; }
CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuGraphDestroy(CUgraph) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuGetErrorName(CUresult, const char** s) {
  *s = "CUDA_ERROR_FAKE";
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGetErrorString(CUresult, const char** s) {
  *s = "an error of the fake CUDA driver";
  return CUDA_SUCCESS;
}

}  // extern "C"

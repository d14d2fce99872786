#include "cuda/owners.hpp"

#include "cuda/driver.hpp"

namespace tune::cuda {

Context::Context(int ordinal) {
  TUNE_CU(cuDeviceGet(&device_, ordinal));
  TUNE_CU(cuDevicePrimaryCtxRetain(&ctx_, device_));
  make_current();
}

Context& Context::operator=(Context&& other) noexcept {
  if (this != &other) {
    this->~Context();
    device_ = other.device_;
    ctx_ = take(other.ctx_);
  }
  return *this;
}

Context::~Context() {
  if (ctx_ != nullptr) check_nothrow(api().cuDevicePrimaryCtxRelease(device_));
}

void Context::make_current() const { TUNE_CU(cuCtxSetCurrent(ctx_)); }

void Context::reset() {
  check_nothrow(api().cuDevicePrimaryCtxRelease(device_));
  ctx_ = nullptr;
  TUNE_CU(cuDevicePrimaryCtxReset(device_));
  TUNE_CU(cuDevicePrimaryCtxRetain(&ctx_, device_));
  make_current();
}

Module::Module(const std::vector<char>& cubin) { TUNE_CU(cuModuleLoadData(&module_, cubin.data())); }

Module& Module::operator=(Module&& other) noexcept {
  if (this != &other) {
    this->~Module();
    module_ = take(other.module_);
  }
  return *this;
}

Module::~Module() {
  if (module_ != nullptr) check_nothrow(api().cuModuleUnload(module_));
}

CUfunction Module::function(const std::string& lowered_name) const {
  CUfunction fn = nullptr;
  TUNE_CU(cuModuleGetFunction(&fn, module_, lowered_name.c_str()));
  return fn;
}

Stream::Stream() { TUNE_CU(cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING)); }

Stream& Stream::operator=(Stream&& other) noexcept {
  if (this != &other) {
    this->~Stream();
    stream_ = take(other.stream_);
  }
  return *this;
}

Stream::~Stream() {
  if (stream_ != nullptr) check_nothrow(api().cuStreamDestroy(stream_));
}

void Stream::synchronize() const { TUNE_CU(cuStreamSynchronize(stream_)); }

Event::Event() { TUNE_CU(cuEventCreate(&event_, CU_EVENT_DEFAULT)); }

Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    this->~Event();
    event_ = take(other.event_);
  }
  return *this;
}

Event::~Event() {
  if (event_ != nullptr) check_nothrow(api().cuEventDestroy(event_));
}

void Event::record(const Stream& stream) const { TUNE_CU(cuEventRecord(event_, stream.get())); }

float Event::elapsed_ms(const Event& start, const Event& stop) {
  TUNE_CU(cuEventSynchronize(stop.event_));
  float ms = 0;
  TUNE_CU(cuEventElapsedTime(&ms, start.event_, stop.event_));
  return ms;
}

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) { TUNE_CU(cuMemAlloc(&ptr_, bytes == 0 ? 4 : bytes)); }

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    this->~DeviceBuffer();
    ptr_ = take(other.ptr_);
    bytes_ = take(other.bytes_);
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_ != 0) check_nothrow(api().cuMemFree(ptr_));
}

// cuMemcpyHtoD from pageable memory returns once the data is staged, with the DMA of the last
// staged chunk possibly still in flight on the legacy default stream (the driver API's "API
// synchronization behavior"), and a CU_STREAM_NON_BLOCKING stream does not wait for that stream.
// The context synchronisation waits for the DMA: without it the H200 launched contact kernels
// that read the last 1280 or 2816 bytes of a 1 MiB + 2816 byte input as zeros.
void DeviceBuffer::upload(const void* host, std::size_t bytes) const {
  TUNE_CU(cuMemcpyHtoD(ptr_, host, bytes));
  TUNE_CU(cuCtxSynchronize());
}

// The copy runs on the legacy default stream, which does not wait for a non-blocking stream's
// work: the context synchronisation first.
void DeviceBuffer::download(void* host, std::size_t bytes) const {
  TUNE_CU(cuCtxSynchronize());
  TUNE_CU(cuMemcpyDtoH(host, ptr_, bytes));
}

GraphExec& GraphExec::operator=(GraphExec&& other) noexcept {
  if (this != &other) {
    this->~GraphExec();
    exec_ = take(other.exec_);
  }
  return *this;
}

GraphExec::~GraphExec() {
  if (exec_ != nullptr) check_nothrow(api().cuGraphExecDestroy(exec_));
}

void GraphExec::begin_capture(const Stream& stream) {
  TUNE_CU(cuStreamBeginCapture(stream.get(), CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
}

GraphExec GraphExec::finish_capture(const Stream& stream) {
  CUgraph graph = nullptr;
  TUNE_CU(cuStreamEndCapture(stream.get(), &graph));
  GraphExec out;
  const CUresult r = api().cuGraphInstantiateWithFlags(&out.exec_, graph, 0);
  check_nothrow(api().cuGraphDestroy(graph));
  if (r != CUDA_SUCCESS) throw_error(r, "cuGraphInstantiateWithFlags", __FILE__, __LINE__);
  return out;
}

void GraphExec::launch(const Stream& stream) const { TUNE_CU(cuGraphLaunch(exec_, stream.get())); }

}  // namespace tune::cuda

#pragma once
// Move-only owners of driver handles. Destructors never throw.
#include <cuda.h>

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace tune::cuda {

// Moves a handle out, leaving a null one behind.
template <typename T>
T take(T& handle) noexcept {
  return std::exchange(handle, T{});
}

// The device's primary context, retained for the owner's lifetime and made current.
class Context {
 public:
  explicit Context(int ordinal);
  Context(Context&& other) noexcept : device_(other.device_), ctx_(take(other.ctx_)) {}
  Context& operator=(Context&& other) noexcept;
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  ~Context();
  [[nodiscard]] CUdevice device() const { return device_; }
  [[nodiscard]] CUcontext get() const { return ctx_; }
  void make_current() const;
  // Destroys every resource of the primary context (after a sticky error); the owner stays valid.
  void reset();

 private:
  CUdevice device_ = 0;
  CUcontext ctx_ = nullptr;
};

class Module {
 public:
  Module() = default;
  explicit Module(const std::vector<char>& cubin);
  Module(Module&& other) noexcept : module_(take(other.module_)) {}
  Module& operator=(Module&& other) noexcept;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  ~Module();
  [[nodiscard]] CUfunction function(const std::string& lowered_name) const;
  [[nodiscard]] CUmodule get() const { return module_; }

 private:
  CUmodule module_ = nullptr;
};

class Stream {
 public:
  Stream();
  Stream(Stream&& other) noexcept : stream_(take(other.stream_)) {}
  Stream& operator=(Stream&& other) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream();
  [[nodiscard]] CUstream get() const { return stream_; }
  void synchronize() const;

 private:
  CUstream stream_ = nullptr;
};

class Event {
 public:
  Event();
  Event(Event&& other) noexcept : event_(take(other.event_)) {}
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event();
  [[nodiscard]] CUevent get() const { return event_; }
  void record(const Stream& stream) const;
  // Milliseconds between two recorded events, after waiting for the second.
  [[nodiscard]] static float elapsed_ms(const Event& start, const Event& stop);

 private:
  CUevent event_ = nullptr;
};

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes);
  DeviceBuffer(DeviceBuffer&& other) noexcept : ptr_(take(other.ptr_)), bytes_(take(other.bytes_)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();
  [[nodiscard]] CUdeviceptr get() const { return ptr_; }
  [[nodiscard]] std::size_t bytes() const { return bytes_; }
  // Both return with the copy complete: work on any stream (the runner's is non-blocking) sees
  // every byte uploaded.
  void upload(const void* host, std::size_t bytes) const;
  void download(void* host, std::size_t bytes) const;

 private:
  CUdeviceptr ptr_ = 0;
  std::size_t bytes_ = 0;
};

class GraphExec {
 public:
  GraphExec() = default;
  // Captures what `record` enqueues on the stream into a graph and instantiates it.
  template <typename Fn>
  static GraphExec capture(const Stream& stream, Fn&& record);
  GraphExec(GraphExec&& other) noexcept : exec_(take(other.exec_)) {}
  GraphExec& operator=(GraphExec&& other) noexcept;
  GraphExec(const GraphExec&) = delete;
  GraphExec& operator=(const GraphExec&) = delete;
  ~GraphExec();
  void launch(const Stream& stream) const;

 private:
  static GraphExec finish_capture(const Stream& stream);
  static void begin_capture(const Stream& stream);
  CUgraphExec exec_ = nullptr;
};

template <typename Fn>
GraphExec GraphExec::capture(const Stream& stream, Fn&& record) {
  begin_capture(stream);
  try {
    record();
  } catch (...) {
    finish_capture(stream);
    throw;
  }
  return finish_capture(stream);
}

}  // namespace tune::cuda

#pragma once
// Error checks that throw perfsim::RuntimeFailure naming the failed call, and owners of CUDA
// resources (device and pinned buffers, streams, events) that release them on scope exit.
#include <cublas_api.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstddef>
#include <utility>

namespace perfsim::microbench::cuda {

void check_cuda(cudaError_t status, const char* call);
void check_cublas(cublasStatus_t status, const char* call);
void check_nccl(ncclResult_t status, const char* call);

// Owns bytes of device memory on the current device.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes);
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();

  void* data() const { return data_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(data_);
  }
  std::size_t bytes() const { return bytes_; }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

// Page-locked host memory (for host<->device copies at full PCIe speed).
class PinnedBuffer {
 public:
  explicit PinnedBuffer(std::size_t bytes);
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  ~PinnedBuffer();
  void* data() const { return data_; }

 private:
  void* data_ = nullptr;
};

class Stream {
 public:
  Stream();
  Stream(Stream&& other) noexcept : stream_(std::exchange(other.stream_, nullptr)) {}
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream();
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

class Event {
 public:
  Event();
  Event(Event&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event();
  cudaEvent_t get() const { return event_; }
  void record(cudaStream_t stream);

 private:
  cudaEvent_t event_ = nullptr;
};

// Microseconds between two recorded events (waits for `stop`).
double elapsed_us(const Event& start, const Event& stop);

}  // namespace perfsim::microbench::cuda

#include "microbench/cuda/cuda_resources.hpp"

#include <string>

#include "perfsim/error.hpp"

namespace perfsim::microbench::cuda {

void check_cuda(cudaError_t status, const char* call) {
  if (status != cudaSuccess)
    throw RuntimeFailure(std::string(call) + ": " + cudaGetErrorName(status) + ": " +
                         cudaGetErrorString(status));
}

void check_cublas(cublasStatus_t status, const char* call) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw RuntimeFailure(std::string(call) + ": cuBLAS status " +
                         std::to_string(static_cast<int>(status)));
}

void check_nccl(ncclResult_t status, const char* call) {
  if (status != ncclSuccess)
    throw RuntimeFailure(std::string(call) + ": " + ncclGetErrorString(status));
}

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
  check_cuda(cudaMalloc(&data_, bytes == 0 ? 1 : bytes), "cudaMalloc");
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr)
      cudaFree(data_);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() {
  if (data_ != nullptr)
    cudaFree(data_);
}

PinnedBuffer::PinnedBuffer(std::size_t bytes) {
  check_cuda(cudaMallocHost(&data_, bytes == 0 ? 1 : bytes), "cudaMallocHost");
}

PinnedBuffer::~PinnedBuffer() {
  cudaFreeHost(data_);
}

Stream::Stream() {
  check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
}

Stream::~Stream() {
  if (stream_ != nullptr)
    cudaStreamDestroy(stream_);
}

Event::Event() {
  check_cuda(cudaEventCreate(&event_), "cudaEventCreate");
}

Event::~Event() {
  if (event_ != nullptr)
    cudaEventDestroy(event_);
}

void Event::record(cudaStream_t stream) {
  check_cuda(cudaEventRecord(event_, stream), "cudaEventRecord");
}

double elapsed_us(const Event& start, const Event& stop) {
  check_cuda(cudaEventSynchronize(stop.get()), "cudaEventSynchronize");
  float ms = 0;
  check_cuda(cudaEventElapsedTime(&ms, start.get(), stop.get()), "cudaEventElapsedTime");
  return static_cast<double>(ms) * 1e3;
}

}  // namespace perfsim::microbench::cuda

#include "microbench/cuda/device_query.hpp"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <unistd.h>

#include <array>

#include "microbench/cuda/cuda_resources.hpp"
#include "microbench/cuda/device_kernels.hpp"

namespace perfsim::microbench::cuda {
namespace {

constexpr double kClockProbeUs = 2000;

std::string dotted(int version, int major_divisor, int minor_divisor) {
  return std::to_string(version / major_divisor) + "." +
         std::to_string(version % major_divisor / minor_divisor);
}

int device_attribute(cudaDeviceAttr attribute, int device) {
  int value = 0;
  check_cuda(cudaDeviceGetAttribute(&value, attribute, device), "cudaDeviceGetAttribute");
  return value;
}

}  // namespace

int visible_device_count() {
  int count = 0;
  check_cuda(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
  return count;
}

GpuInfo query_gpu(int device, bool measure_clock) {
  cudaDeviceProp properties{};
  check_cuda(cudaGetDeviceProperties(&properties, device), "cudaGetDeviceProperties");
  GpuInfo gpu;
  gpu.index = device;
  gpu.name = properties.name;
  std::array<char, 64> bus{};
  check_cuda(cudaDeviceGetPCIBusId(bus.data(), static_cast<int>(bus.size()), device),
             "cudaDeviceGetPCIBusId");
  gpu.pci_bus_id = bus.data();
  gpu.memory_bytes = static_cast<Bytes>(properties.totalGlobalMem);
  gpu.sm_count = properties.multiProcessorCount;
  gpu.compute_capability = properties.major * 10 + properties.minor;
  gpu.max_sm_clock_MHz = device_attribute(cudaDevAttrClockRate, device) / 1000;
  gpu.max_memory_clock_MHz = device_attribute(cudaDevAttrMemoryClockRate, device) / 1000;
  if (measure_clock)
    gpu.measured_sm_clock_MHz = measure_sm_clock_MHz(device, kClockProbeUs);
  return gpu;
}

LocalTopology query_local_topology(const std::vector<int>& devices, bool measure_clock) {
  LocalTopology topology;
  topology.host = host_name();
  for (int device : devices)
    topology.gpus.push_back(query_gpu(device, measure_clock));
  for (int from : devices) {
    for (int to : devices) {
      if (from == to)
        continue;
      PeerLink link{from, to, false, false, 0};
      int value = 0;
      check_cuda(cudaDeviceGetP2PAttribute(&value, cudaDevP2PAttrAccessSupported, from, to),
                 "cudaDeviceGetP2PAttribute");
      link.access = value != 0;
      check_cuda(cudaDeviceGetP2PAttribute(&value, cudaDevP2PAttrNativeAtomicSupported, from, to),
                 "cudaDeviceGetP2PAttribute");
      link.native_atomics = value != 0;
      check_cuda(cudaDeviceGetP2PAttribute(&value, cudaDevP2PAttrPerformanceRank, from, to),
                 "cudaDeviceGetP2PAttribute");
      link.performance_rank = value;
      topology.links.push_back(link);
    }
  }
  return topology;
}

std::string nccl_version() {
  int version = 0;
  check_nccl(ncclGetVersion(&version), "ncclGetVersion");
  // NCCL >= 2.9 encodes major * 10000 + minor * 100 + patch.
  return std::to_string(version / 10000) + "." + std::to_string(version % 10000 / 100) + "." +
         std::to_string(version % 100);
}

std::string software_versions() {
  int runtime = 0, driver = 0;
  check_cuda(cudaRuntimeGetVersion(&runtime), "cudaRuntimeGetVersion");
  check_cuda(cudaDriverGetVersion(&driver), "cudaDriverGetVersion");
  int major = 0, minor = 0, patch = 0;
  check_cublas(cublasGetProperty(MAJOR_VERSION, &major), "cublasGetProperty");
  check_cublas(cublasGetProperty(MINOR_VERSION, &minor), "cublasGetProperty");
  check_cublas(cublasGetProperty(PATCH_LEVEL, &patch), "cublasGetProperty");
  return "CUDA runtime " + dotted(runtime, 1000, 10) + ", driver " + dotted(driver, 1000, 10) +
         ", cuBLAS " + std::to_string(major) + "." + std::to_string(minor) + "." +
         std::to_string(patch) + ", NCCL " + nccl_version();
}

Bytes free_device_memory_bytes(int device) {
  check_cuda(cudaSetDevice(device), "cudaSetDevice");
  std::size_t free_bytes = 0, total_bytes = 0;
  check_cuda(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  return static_cast<Bytes>(free_bytes);
}

std::string host_name() {
  std::array<char, 256> name{};
  if (gethostname(name.data(), name.size() - 1) != 0)
    return "unknown-host";
  return name.data();
}

}  // namespace perfsim::microbench::cuda

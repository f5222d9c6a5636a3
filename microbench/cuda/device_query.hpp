#pragma once
// What the CUDA runtime says about the GPUs and the software stack, in the host library's
// terms (microbench/host/gpu_topology.hpp).
#include <string>
#include <vector>

#include "microbench/host/gpu_topology.hpp"
#include "perfsim/units.hpp"

namespace perfsim::microbench::cuda {

int visible_device_count();
// Name, PCI id, memory, SMs, compute capability and peak clocks of one device; with
// measure_clock, also the SM clock measured now (device_kernels.hpp).
GpuInfo query_gpu(int device, bool measure_clock);
// The given devices and, per ordered pair, the peer-access attributes.
LocalTopology query_local_topology(const std::vector<int>& devices, bool measure_clock);
// "CUDA runtime 13.0, driver 13.0, cuBLAS 13.0.0, NCCL 2.28.9".
std::string software_versions();
std::string nccl_version();
// Free memory on a device now.
Bytes free_device_memory_bytes(int device);
std::string host_name();

}  // namespace perfsim::microbench::cuda

#pragma once
// What a benchmark saw of the machine, as the CUDA runtime reports it (no NVML needed):
// GPU models, PCI addresses, clocks, and per GPU pair whether peer access works, with native
// atomics (in practice an NVLink/NVSwitch path) and NVIDIA's relative performance rank. NICs
// are NCCL's business: set NCCL_TOPO_DUMP_FILE to keep NCCL's view (microbench/README.md).
#include <string>
#include <vector>

#include "perfsim/units.hpp"

namespace perfsim::microbench {

struct GpuInfo {
  int index = 0;
  std::string name;  // cudaDeviceProp::name, a configs/devices alias
  std::string pci_bus_id;
  Bytes memory_bytes = 0;
  int sm_count = 0;
  int compute_capability = 0;  // 90 for 9.0
  int max_sm_clock_MHz = 0;
  int max_memory_clock_MHz = 0;
  double measured_sm_clock_MHz = 0;  // 0 when not measured
};

struct PeerLink {
  int from = 0;
  int to = 0;
  bool access = false;
  bool native_atomics = false;
  int performance_rank = 0;
};

struct LocalTopology {
  std::string host;
  std::vector<GpuInfo> gpus;
  std::vector<PeerLink> links;
};

// "NVIDIA H100 80GB HBM3" for one GPU, "8x NVIDIA H100 80GB HBM3" for identical ones,
// "NVIDIA A100-SXM4-40GB + Tesla V100-SXM2-32GB" otherwise; "" for none.
std::string device_label(const std::vector<GpuInfo>& gpus);

// One line per GPU and a peer matrix, e.g.
//   host gpu-node-1: GPU0 NVIDIA H100 80GB HBM3 0000:18:00.0 sm_90 132 SMs 1980/2619 MHz ...
//   peer access (rank, A = native atomics: NVLink-class; P = PCIe-class; - = none): ...
std::string describe_topology(const LocalTopology& topology);

}  // namespace perfsim::microbench

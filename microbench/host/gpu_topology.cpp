#include "microbench/host/gpu_topology.hpp"

#include <sstream>

namespace perfsim::microbench {

std::string device_label(const std::vector<GpuInfo>& gpus) {
  if (gpus.empty())
    return "";
  bool identical = true;
  for (const GpuInfo& gpu : gpus)
    identical = identical && gpu.name == gpus.front().name;
  if (identical)
    return gpus.size() == 1 ? gpus.front().name
                            : std::to_string(gpus.size()) + "x " + gpus.front().name;
  std::string label;
  for (const GpuInfo& gpu : gpus)
    label += (label.empty() ? "" : " + ") + gpu.name;
  return label;
}

std::string describe_topology(const LocalTopology& topology) {
  std::ostringstream out;
  out << "host " << topology.host << ":";
  for (const GpuInfo& gpu : topology.gpus) {
    out << " GPU" << gpu.index << " " << gpu.name << " " << gpu.pci_bus_id << " sm_"
        << gpu.compute_capability << " " << gpu.sm_count << " SMs "
        << gpu.memory_bytes / (Bytes{1} << 20) << " MiB max " << gpu.max_sm_clock_MHz << "/"
        << gpu.max_memory_clock_MHz << " MHz";
    if (gpu.measured_sm_clock_MHz > 0)
      out << " measured " << static_cast<int>(gpu.measured_sm_clock_MHz) << " MHz";
    out << ";";
  }
  if (!topology.links.empty()) {
    out << " peer access (from-to: A = with native atomics, NVLink-class; P = without, "
           "PCIe-class; - = none; then the performance rank):";
    for (const PeerLink& link : topology.links) {
      out << " " << link.from << "-" << link.to << ":"
          << (!link.access ? "-" : (link.native_atomics ? "A" : "P")) << link.performance_rank;
    }
  }
  return out.str();
}

}  // namespace perfsim::microbench

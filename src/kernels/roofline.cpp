#include "kernels/roofline.hpp"

#include <algorithm>

namespace perfsim::kernels {

DurationUs roofline_duration_us(const ElementwiseWork& work, const devices::DeviceSpec& device) {
  const DurationUs compute_us =
      work.flops / device.elementwise_peak_flops_per_s(work.dtype) * kUsPerSecond;
  const DurationUs memory_us =
      transfer_time_us(work.bytes_read + work.bytes_written, device.streaming_bandwidth_GBps());
  return std::max(compute_us, memory_us);
}

DurationUs host_transfer_duration_us(const HostTransferWork& work,
                                     const devices::DeviceSpec& device) {
  return transfer_time_us(work.bytes, device.pcie_bandwidth_GBps.value);
}

}  // namespace perfsim::kernels

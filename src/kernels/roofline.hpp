#pragma once
// Roofline model for element-wise, reduction and memory kernels (seed 000 Sec. 4.3.2.1.2):
//   t = max(FLOP / peak_throughput, (bytes_read + bytes_write) / streaming_BW), streaming_BW
// being the device's measured STREAM-copy bandwidth where the file has one, else its peak.
#include "devices/device_spec.hpp"
#include "kernels/kernel_work.hpp"

namespace perfsim::kernels {

DurationUs roofline_duration_us(const ElementwiseWork& work, const devices::DeviceSpec& device);
// A host <-> device copy at the PCIe bandwidth of the device file.
DurationUs host_transfer_duration_us(const HostTransferWork& work,
                                     const devices::DeviceSpec& device);

}  // namespace perfsim::kernels

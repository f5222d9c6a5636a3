#include "kernels/memory_bound_model.hpp"

namespace perfsim::kernels {

DurationUs memory_bound_duration_us(const MemoryBoundWork& work,
                                    const devices::DeviceSpec& device) {
  return device.min_kernel_duration_us.value +
         transfer_time_us(work.bytes_read + work.bytes_written,
                          kAchievableHbmFraction * device.hbm_bandwidth_GBps.value);
}

}  // namespace perfsim::kernels

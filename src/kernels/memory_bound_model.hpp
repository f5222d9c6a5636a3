#pragma once
// Memory-bound CNN kernels (batch-norm forward and backward, max and average pooling):
//   t = launch latency + (bytes read + bytes written) / (achievable fraction x HBM bandwidth).
// The launch latency is the device's min_kernel_duration_us (the time an almost empty kernel
// takes from start to end); the achievable fraction is an estimate (streaming kernels reach
// about 85% of the datasheet HBM bandwidth). No measured table is behind either term on any
// device, so the model is reported as nominal.
#include <string>

#include "devices/device_spec.hpp"
#include "kernels/kernel_work.hpp"

namespace perfsim::kernels {

inline constexpr double kAchievableHbmFraction = 0.85;

DurationUs memory_bound_duration_us(const MemoryBoundWork& work, const devices::DeviceSpec& device);

}  // namespace perfsim::kernels

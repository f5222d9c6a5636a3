#pragma once
// A compute kernel that runs beside a communication kernel shares the GPU with it. A NCCL
// collective launches one CTA per channel and each CTA holds an SM for the whole collective
// (its CTAs are resident first: Megatron issues the collective before the GEMM it overlaps,
// with CUDA_DEVICE_MAX_CONNECTIONS=1). A GEMM launched beside it is tiled onto the SMs left:
// the same tiles in waves of (SMs - comm SMs), each SM at its usual speed, so the GEMM slows
// by about SMs / (SMs - comm SMs), more or less as the waves quantize. The generator marks the
// op with the attribute "contention_sms"; the slowdown is applied to the whole op, which
// assumes the collective lasts as long as the op (an upper bound when it is shorter).
// Memory-bound kernels are left as they are: a few SMs less do not lower the HBM bandwidth
// they reach, and the HBM the NCCL kernel itself moves is not modelled.
#include "devices/device_spec.hpp"
#include "kernels/kernel_work.hpp"
#include "perfsim/trace.hpp"

namespace perfsim::kernels {

// The SMs of the communication kernel beside `op` (attribute "contention_sms"), 0 if none.
int contention_sms_of(const Op& op);

// The duration of `spec`, `alone_us` without contention, beside a communication kernel that
// holds `comm_sms` SMs of `device`. Unchanged for comm_sms <= 0 and for memory-bound work.
DurationUs contended_duration_us(const KernelSpec& spec, DurationUs alone_us, int comm_sms,
                                 const devices::DeviceSpec& device);

}  // namespace perfsim::kernels

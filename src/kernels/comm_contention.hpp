#pragma once
// A compute kernel that runs beside a communication kernel shares the GPU with it: SMs and HBM.
//
// SMs. A NCCL collective launches one CTA per channel and each CTA holds an SM for the whole
// collective (its CTAs are resident first: Megatron issues the collective before the GEMM it
// overlaps, with CUDA_DEVICE_MAX_CONNECTIONS=1). A GEMM launched beside it is tiled onto the
// SMs left: the same tiles in waves of (SMs - comm SMs), each SM at its usual speed, so the
// GEMM slows by about SMs / (SMs - comm SMs), more or less as the waves quantize.
//
// HBM. The communication kernel also streams its data through HBM (kernels/comm_hbm_traffic.hpp:
// about 3 bytes per bus byte for a NCCL ring, so ~1 TB/s beside a 360 GB/s NVLink all-reduce,
// a third of an H100's HBM). The compute kernel beside it gets what is left. Its time is the
// roofline of its work with both reduced resources, max(compute time x SMs / SMs left, memory
// time x HBM / HBM left), relative to the same roofline with the whole GPU, applied to the
// time its own model predicts: memory-bound kernels (norms, element-wise, optimizer) slow by
// HBM / (HBM - comm rate) and ignore the SMs (a few SMs less still saturate HBM); large GEMMs
// slow by the SM share only. When the two together ask for more than the device has, each
// keeps at least half of it (two streams saturating HBM are served about equally).
//
// The generator marks the op with "contention_sms" and "contention_hbm_GBps" (the HBM
// bandwidth the communication kernel uses while it runs). The slowdown is applied to the whole
// op, which assumes the collective lasts as long as the op (an upper bound when it is shorter),
// and the collective is not slowed in return (the collective model does not see the kernel).
#include "devices/device_spec.hpp"
#include "kernels/kernel_work.hpp"
#include "perfsim/trace.hpp"

namespace perfsim::kernels {

// What the communication kernel beside an op holds while it runs.
struct CommLoad {
  int sms = 0;
  double hbm_GBps = 0;
};

// The SMs of the communication kernel beside `op` (attribute "contention_sms"), 0 if none.
int contention_sms_of(const Op& op);
// Both resources (attributes "contention_sms", "contention_hbm_GBps"), 0 where absent.
CommLoad comm_load_of(const Op& op);

// The duration of `spec`, `alone_us` without contention, beside a communication kernel
// holding `load` of `device`. Unchanged without a load and for host transfers.
DurationUs contended_duration_us(const KernelSpec& spec, DurationUs alone_us, CommLoad load,
                                 const devices::DeviceSpec& device);
inline DurationUs contended_duration_us(const KernelSpec& spec, DurationUs alone_us, int comm_sms,
                                        const devices::DeviceSpec& device) {
  return contended_duration_us(spec, alone_us, CommLoad{comm_sms, 0.0}, device);
}

}  // namespace perfsim::kernels

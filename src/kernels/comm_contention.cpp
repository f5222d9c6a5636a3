#include "kernels/comm_contention.hpp"

#include <algorithm>

#include "kernels/analytical_gemm.hpp"

namespace perfsim::kernels {

int contention_sms_of(const Op& op) {
  const Attribute* attribute = op.find_attribute("contention_sms");
  if (!attribute)
    return 0;
  if (const auto* sms = std::get_if<std::int64_t>(&attribute->value))
    return static_cast<int>(*sms);
  return 0;
}

DurationUs contended_duration_us(const KernelSpec& spec, DurationUs alone_us, int comm_sms,
                                 const devices::DeviceSpec& device) {
  const double sms = device.sm_count.value;
  if (comm_sms <= 0 || sms <= 0)
    return alone_us;
  // The compute kernel keeps at least one SM.
  const double left = std::max(1.0, sms - comm_sms);
  const double share = left / sms;
  if (const auto* gemm = std::get_if<GemmWork>(&spec.work)) {
    // The same tiles on fewer SMs: wave quantization as the analytical model sees it.
    devices::DeviceSpec fewer_sms = device;
    fewer_sms.sm_count.value = left;
    for (auto& [dtype, figure] : fewer_sms.tensor_core_tflops)
      figure.value *= share;
    for (auto& [dtype, figure] : fewer_sms.cuda_core_tflops)
      figure.value *= share;
    const DurationUs full = analytical_gemm_duration_us(*gemm, device);
    const DurationUs contended = analytical_gemm_duration_us(*gemm, fewer_sms);
    return full > 0 ? alone_us * contended / full : alone_us;
  }
  if (spec.category == KernelCategory::kGemm)  // attention and other compute-bound kernels
    return alone_us / share;
  return alone_us;
}

}  // namespace perfsim::kernels

#include "kernels/comm_contention.hpp"

#include <algorithm>

#include "kernels/analytical_gemm.hpp"

namespace perfsim::kernels {
namespace {

double attribute_number(const Op& op, const char* name) {
  const Attribute* attribute = op.find_attribute(name);
  if (!attribute)
    return 0;
  if (const auto* integer = std::get_if<std::int64_t>(&attribute->value))
    return static_cast<double>(*integer);
  if (const auto* real = std::get_if<double>(&attribute->value))
    return *real;
  return 0;
}

// A kernel's time on the whole device, split into its two roofline terms (microseconds).
struct Roofline {
  double compute_us = 0;
  double memory_us = 0;
};

double memory_us(double bytes, const devices::DeviceSpec& device) {
  const double hbm_GBps = device.hbm_bandwidth_GBps.value;
  return hbm_GBps > 0 ? bytes / (hbm_GBps * 1e3) : 0.0;
}

Roofline attention_roofline(const AttentionWork& work, const devices::DeviceSpec& device) {
  const double peak = device.gemm_peak_flops_per_s(work.dtype);
  // Q and O per query, K and V per key, each once; the backward also reads dO and writes
  // dQ, dK, dV: twice the traffic.
  const double elements = work.value_dim() == work.head_dim
                              ? static_cast<double>(work.batch_heads) *
                                    static_cast<double>(work.head_dim) * 2.0 *
                                    static_cast<double>(work.q_len + work.kv_len)
                              : static_cast<double>(work.batch_heads) *
                                    static_cast<double>(work.head_dim + work.value_dim()) *
                                    static_cast<double>(work.q_len + work.kv_len);
  const double bytes = elements * element_bytes(work.dtype) * (work.backward ? 2.0 : 1.0);
  return {peak > 0 ? work.flops() / peak * 1e6 : 0.0, memory_us(bytes, device)};
}

// The time of a kernel of `roofline` with `sm_share` of the SMs and `hbm_share` of the HBM
// bandwidth, relative to its time on the whole device.
double slowdown(const Roofline& roofline, double sm_share, double hbm_share) {
  const double alone = std::max(roofline.compute_us, roofline.memory_us);
  if (alone <= 0)
    return 1.0;
  return std::max(roofline.compute_us / sm_share, roofline.memory_us / hbm_share) / alone;
}

}  // namespace

int contention_sms_of(const Op& op) {
  return static_cast<int>(attribute_number(op, "contention_sms"));
}

CommLoad comm_load_of(const Op& op) {
  return {contention_sms_of(op), attribute_number(op, "contention_hbm_GBps")};
}

DurationUs contended_duration_us(const KernelSpec& spec, DurationUs alone_us, CommLoad load,
                                 const devices::DeviceSpec& device) {
  const double sms = device.sm_count.value;
  const double hbm_GBps = device.hbm_bandwidth_GBps.value;
  const bool sm_load = load.sms > 0 && sms > 0;
  const bool hbm_load = load.hbm_GBps > 0 && hbm_GBps > 0;
  if (!sm_load && !hbm_load)
    return alone_us;
  // The compute kernel keeps at least one SM, and at least half the HBM bandwidth: when both
  // kernels saturate HBM the memory system serves them about equally.
  const double sms_left = sm_load ? std::max(1.0, sms - load.sms) : sms;
  const double sm_share = sms_left / sms;
  const double hbm_share = hbm_load ? std::max(0.5, (hbm_GBps - load.hbm_GBps) / hbm_GBps) : 1.0;
  if (const auto* gemm = std::get_if<GemmWork>(&spec.work)) {
    // The same tiles on fewer SMs (wave quantization as the analytical model sees it), and
    // its operands streamed at the HBM bandwidth left.
    devices::DeviceSpec contended = device;
    contended.sm_count.value = sms_left;
    for (auto& [dtype, figure] : contended.tensor_core_tflops)
      figure.value *= sm_share;
    for (auto& [dtype, figure] : contended.cuda_core_tflops)
      figure.value *= sm_share;
    contended.hbm_bandwidth_GBps.value *= hbm_share;
    const DurationUs full = analytical_gemm_duration_us(*gemm, device);
    const DurationUs slowed = analytical_gemm_duration_us(*gemm, contended);
    return full > 0 ? alone_us * slowed / full : alone_us;
  }
  if (const auto* attention = std::get_if<AttentionWork>(&spec.work)) {
    const Roofline roofline = attention_roofline(*attention, device);
    // Compute-bound as flash attention is: the SM share alone, as before HBM was modelled.
    if (roofline.compute_us / sm_share >= roofline.memory_us / hbm_share &&
        roofline.compute_us >= roofline.memory_us)
      return alone_us / sm_share;
    return alone_us * slowdown(roofline, sm_share, hbm_share);
  }
  if (spec.category == KernelCategory::kGemm)  // convolutions, math-bound kernels: compute-bound
    return alone_us / sm_share;
  if (const auto* elementwise = std::get_if<ElementwiseWork>(&spec.work)) {
    // CUDA-core peak of its dtype, else fp32's (as the roofline model prices it); none: no
    // compute term.
    const double peak =
        device.peak_flops_per_s(elementwise->dtype, devices::MathUnit::kCudaCore)
            .value_or(device.peak_flops_per_s(DType::kFloat32, devices::MathUnit::kCudaCore)
                          .value_or(0.0));
    const Roofline roofline{
        peak > 0 ? elementwise->flops / peak * 1e6 : 0.0,
        memory_us(elementwise->bytes_read + elementwise->bytes_written, device)};
    return alone_us * slowdown(roofline, sm_share, hbm_share);
  }
  if (std::holds_alternative<MemoryBoundWork>(spec.work) ||
      std::holds_alternative<EmbeddingWork>(spec.work))
    return alone_us / hbm_share;  // streams through HBM (lookups: gathers of table rows)
  return alone_us;
}

}  // namespace perfsim::kernels

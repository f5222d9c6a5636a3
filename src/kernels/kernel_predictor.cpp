#include "kernels/kernel_predictor.hpp"

#include <algorithm>
#include <array>

#include "kernels/analytical_gemm.hpp"
#include "kernels/attention_model.hpp"
#include "kernels/conv_model.hpp"
#include "kernels/embedding_heuristic.hpp"
#include "kernels/embedding_mlp.hpp"
#include "kernels/memory_bound_model.hpp"
#include "kernels/roofline.hpp"

namespace perfsim::kernels {

KernelPredictor::KernelPredictor(devices::DeviceSpec device, std::vector<MlpKernelAsset> assets)
    : device_(std::move(device)) {
  for (MlpKernelAsset& asset : assets) {
    bool matches = asset.device == device_.name;
    for (const std::string& alias : device_.aliases)
      matches = matches || asset.device == alias;
    if (matches)
      assets_by_kind_.insert_or_assign(asset.kernel_kind, std::move(asset));
  }
}

const MlpKernelAsset* KernelPredictor::asset_for(const std::string& kind, DType dtype) const {
  auto it = assets_by_kind_.find(kind);
  if (it == assets_by_kind_.end())
    return nullptr;
  const std::vector<DType>& known = it->second.features.dtypes;
  return std::find(known.begin(), known.end(), dtype) != known.end() ? &it->second : nullptr;
}

KernelPrediction KernelPredictor::raw_prediction(const KernelSpec& kernel) const {
  if (const auto* gemm = std::get_if<GemmWork>(&kernel.work)) {
    if (const MlpKernelAsset* asset = asset_for("gemm", gemm->dtype)) {
      const std::array<double, 4> sizes{static_cast<double>(gemm->m), static_cast<double>(gemm->n),
                                        static_cast<double>(gemm->k),
                                        static_cast<double>(gemm->batch)};
      return {asset->predict_us(sizes, gemm->dtype), "mlp:" + asset->name};
    }
    // "(fitted)": the device file's efficiency for this dtype was fitted on measured GEMMs.
    // The fitted terms describe short benchmarks; training holds the GPU at its power limit.
    const GemmEfficiencyParameters efficiency =
        sustained_clock_gemm_efficiency(device_, gemm->dtype);
    KernelPrediction prediction{
        analytical_gemm_estimate(*gemm, device_, efficiency).duration_us,
        efficiency.measured ? "analytical-gemm(fitted)" : "analytical-gemm"};
    if (efficiency.peak_fraction < gemm_efficiency_for(device_, gemm->dtype).peak_fraction)
      prediction.model += "+sustained-clock";
    if (const DurationUs sustained_us = sustained_gemm_floor_us(*gemm, device_);
        sustained_us > prediction.duration_us) {
      prediction.duration_us = sustained_us;
      prediction.model += "+sustained";
    }
    return prediction;
  }
  if (const auto* attention = std::get_if<AttentionWork>(&kernel.work)) {
    // The tables were measured in short benchmarks at the boost clock: a saturated GPU keeps
    // the device's sustained clock fraction of them (1 without the figure).
    if (const double tflops = measured_attention_tflops(*attention, device_); tflops > 0) {
      const double clock = device_.tensor_core_clock_fraction();
      return {attention->flops() / (tflops * clock * 1e12) * 1e6,
              "attention-table(" + device_.attention->implementation + ")" +
                  (clock < 1 ? "+sustained-clock" : "") +
                  (attention->windowed() ? "+window(nominal)" : "")};
    }
    KernelSpec as_gemm = kernel;
    as_gemm.work = attention_as_gemm(*attention);
    KernelPrediction prediction = raw_prediction(as_gemm);
    prediction.model += "(attention)";
    return prediction;
  }
  if (const auto* embedding = std::get_if<EmbeddingWork>(&kernel.work)) {
    const std::string kind = embedding_asset_kind(embedding->backward);
    if (const MlpKernelAsset* asset = asset_for(kind, embedding->dtype)) {
      return {embedding_mlp_duration_us(*asset, *embedding),
              "mlp:" + asset->name + (embedding_reuse_assumed(*embedding) ? "+uniform-reuse" : "")};
    }
    return {embedding_heuristic_duration_us(*embedding, device_), "embedding-heuristic"};
  }
  if (const auto* conv = std::get_if<ConvWork>(&kernel.work)) {
    ConvWork run = *conv;
    run.dtype = conv_math_dtype(conv->dtype, device_);
    const ConvEfficiencyParameters efficiency = conv_efficiency_for(device_, run.dtype);
    return {conv_estimate(run, device_, efficiency).duration_us,
            efficiency.fitted ? "conv-implicit-gemm(fitted)" : "conv-implicit-gemm(nominal)"};
  }
  if (const auto* streaming = std::get_if<MemoryBoundWork>(&kernel.work))
    return {memory_bound_duration_us(*streaming, device_), "memory-bound(nominal)"};
  if (const auto* elementwise = std::get_if<ElementwiseWork>(&kernel.work))
    return {roofline_duration_us(*elementwise, device_), "roofline"};
  const auto& transfer = std::get<HostTransferWork>(kernel.work);
  return {host_transfer_duration_us(transfer, device_), "pcie-transfer"};
}

KernelPrediction KernelPredictor::predict(const KernelSpec& kernel) const {
  KernelPrediction prediction = raw_prediction(kernel);
  const double floor_us = device_.min_kernel_duration_us.value;
  if (prediction.duration_us < floor_us) {
    prediction.duration_us = floor_us;
    prediction.model += "+floor";
  }
  return prediction;
}

}  // namespace perfsim::kernels

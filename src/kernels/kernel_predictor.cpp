#include "kernels/kernel_predictor.hpp"

#include <algorithm>
#include <array>

#include "kernels/analytical_gemm.hpp"
#include "kernels/embedding_heuristic.hpp"
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

KernelPrediction KernelPredictor::raw_prediction(const KernelSpec& kernel) const {
  if (const auto* gemm = std::get_if<GemmWork>(&kernel.work)) {
    auto it = assets_by_kind_.find("gemm");
    const bool dtype_known =
        it != assets_by_kind_.end() &&
        std::find(it->second.features.dtypes.begin(), it->second.features.dtypes.end(),
                  gemm->dtype) != it->second.features.dtypes.end();
    if (dtype_known) {
      const std::array<double, 4> sizes{static_cast<double>(gemm->m), static_cast<double>(gemm->n),
                                        static_cast<double>(gemm->k),
                                        static_cast<double>(gemm->batch)};
      return {it->second.predict_us(sizes, gemm->dtype), "mlp:" + it->second.name};
    }
    return {analytical_gemm_duration_us(*gemm, device_), "analytical-gemm"};
  }
  if (const auto* embedding = std::get_if<EmbeddingWork>(&kernel.work))
    return {embedding_heuristic_duration_us(*embedding, device_), "embedding-heuristic"};
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

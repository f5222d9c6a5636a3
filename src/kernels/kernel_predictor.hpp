#pragma once
// Picks the model for each kernel and says which one produced the time:
//   GEMM        "mlp:<asset>" when an MLP asset trained on this device exists, else
//               "analytical-gemm";
//   embedding   "mlp:<asset>" when an embedding_forward / embedding_backward asset trained on
//               this device knows the weight dtype (seed 001 Sec. IV-C; "+uniform-reuse" is
//               appended when the kernel carries no reuse factors and uniform indices are
//               assumed, kernels/uniform_reuse_factors.hpp), else "embedding-heuristic"
//               (seed 000, with L2 hit rate);
//   convolutions   "conv-implicit-gemm(fitted)" when the device file has a conv_efficiency
//               fitted on measured data, else "conv-implicit-gemm(nominal)";
//   batch-norm, pooling   "memory-bound(nominal)";
//   element-wise, reductions, device copies   "roofline";
//   host <-> device copies   "pcie-transfer".
// Every time is at least the device's min_kernel_duration_us; when the floor wins the model
// name gets a "+floor" suffix.
#include <map>
#include <string>
#include <vector>

#include "devices/device_spec.hpp"
#include "kernels/kernel_work.hpp"
#include "kernels/mlp_asset.hpp"

namespace perfsim::kernels {

struct KernelPrediction {
  DurationUs duration_us = 0;
  std::string model;
};

class KernelPredictor {
 public:
  // Assets for other devices are ignored (a V100 GEMM MLP says nothing about an H100).
  explicit KernelPredictor(devices::DeviceSpec device, std::vector<MlpKernelAsset> assets = {});

  KernelPrediction predict(const KernelSpec& kernel) const;
  const devices::DeviceSpec& device() const { return device_; }

 private:
  KernelPrediction raw_prediction(const KernelSpec& kernel) const;
  // The asset of this kernel kind when its dtype one-hot knows dtype, else nullptr.
  const MlpKernelAsset* asset_for(const std::string& kind, DType dtype) const;

  devices::DeviceSpec device_;
  std::map<std::string, MlpKernelAsset> assets_by_kind_;
};

}  // namespace perfsim::kernels

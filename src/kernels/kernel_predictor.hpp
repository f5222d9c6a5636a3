#pragma once
// Picks the model for each kernel and says which one produced the time:
//   GEMM        "mlp:<asset>" when an MLP asset trained on this device exists, else
//               "analytical-gemm";
//   embedding   "embedding-heuristic" (seed 000, with L2 hit rate);
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

  devices::DeviceSpec device_;
  std::map<std::string, MlpKernelAsset> assets_by_kind_;
};

}  // namespace perfsim::kernels

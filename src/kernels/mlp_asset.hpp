#pragma once
// A trained MLP kernel model as stored in the model-assets HDF5 file, one group per asset:
//   /kernel_models/<name>/features      table: name (string), modulo (int64), log2 (int64 0/1);
//                                        attributes
//                                        kernel_kind, device, dtypes, layers, target,
//                                        training_source, gmae_pct, mape_pct
//   /kernel_models/<name>/normalization table: input_mean, input_scale (float64)
//   /kernel_models/<name>/target        table: mean, scale (float64, one row)
//   /kernel_models/<name>/layer_<i>     table: values (float64: weights row-major, then bias);
//                                        attributes rows, cols
// Every number is stored as float64, so a model round-trips bit-exactly.
#include <string>
#include <vector>

#include "kernels/mlp.hpp"
#include "kernels/mlp_features.hpp"

namespace perfsim::kernels {

struct MlpKernelAsset {
  std::string name;         // "gemm-V100-SXM2"
  std::string kernel_kind;  // "gemm"
  std::string device;       // DeviceSpec::name the data was measured on
  FeatureDefinition features;
  Mlp mlp;                      // trained on log2 features, predicts log2(time_us)
  std::string training_source;  // benchmark file and group
  double gmae_pct = 0;          // on the held-back split
  double mape_pct = 0;

  double predict_us(std::span<const double> sizes, DType dtype) const;
};

void write_mlp_asset(const std::string& file_path, const MlpKernelAsset& asset);
MlpKernelAsset read_mlp_asset(const std::string& file_path, const std::string& name);
// Names of the assets in a file (empty when the file has no /kernel_models group).
std::vector<std::string> list_mlp_assets(const std::string& file_path);
// Every asset of a file, for KernelPredictor.
std::vector<MlpKernelAsset> read_all_mlp_assets(const std::string& file_path);

}  // namespace perfsim::kernels

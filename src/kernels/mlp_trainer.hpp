#pragma once
// Training an MLP kernel model from benchmark samples: a seeded random 80/20 split, a small
// grid over seed 000 Table 4.2 chosen on a validation slice of the training part, and the
// GMAE/MAPE of the chosen model on the held-back 20%.
#include <string>
#include <vector>

#include "kernels/accuracy.hpp"
#include "kernels/gemm_benchmark_table.hpp"
#include "kernels/mlp_asset.hpp"

namespace perfsim::kernels {

struct TrainingSet {
  std::vector<std::vector<double>> sizes;  // one row of size values per sample
  std::vector<DType> dtypes;               // per sample
  std::vector<double> time_us;             // per sample
};

struct TrainingPlan {
  std::vector<MlpTrainingOptions> candidates;  // the grid; default_training_grid() if empty
  double held_back_fraction = 0.2;
  double validation_fraction = 0.125;  // of the training part, for picking a candidate
  std::uint64_t split_seed = 7;
};

// Table 4.2 cut down to what trains in minutes on two cores: {3, 4} layers x {64, 128}
// neurons x {1e-3, 3e-3} learning rate, Adam, `epochs` epochs.
std::vector<MlpTrainingOptions> default_training_grid(int epochs);

struct TrainingReport {
  MlpKernelAsset asset;  // trained model with its held-back GMAE/MAPE filled in
  Accuracy held_back;
  std::size_t training_samples = 0;
  MlpTrainingOptions chosen;
  double chosen_validation_gmae_pct = 0;
};

// Trains on set; `asset_template` supplies name, kind, device, features, training_source.
TrainingReport train_kernel_asset(const TrainingSet& set, MlpKernelAsset asset_template,
                                  const TrainingPlan& plan);

// GEMM: features m, n, k, batch (log2, % modulo one-hot) and the benchmark's dtypes.
TrainingReport train_gemm_asset(const GemmBenchmark& benchmark, const std::string& source,
                                std::int64_t modulo, const TrainingPlan& plan);

}  // namespace perfsim::kernels

#pragma once
// Fits the analytical GEMM model's two efficiency parameters (kernels/analytical_gemm.hpp) to
// measured GEMM times, and measures how well the fitted model predicts GEMMs it was not fitted
// on (K-fold cross-validation). Measured tables: DeepBench's GEMM results (M, N, K, time_ms),
// as in ../shared/data/kernels/deepbench-v100.
#include <span>
#include <string>
#include <vector>

#include "devices/device_spec.hpp"
#include "kernels/accuracy.hpp"
#include "kernels/analytical_gemm.hpp"
#include "kernels/kernel_work.hpp"

namespace perfsim::kernels {

struct MeasuredGemm {
  GemmWork work;
  double measured_us = 0;
};

// A DeepBench GEMM CSV (columns M, N, K, time_ms, and optionally batch for batched GEMMs as
// in tests/data/kernels/xla-h100; others ignored) in `dtype`. A table with a "dtype" column
// (tests/data/kernels/hopper-gemm-public) gives only its rows of `dtype`. Throws InputError
// naming file, line and column.
std::vector<MeasuredGemm> read_deepbench_gemm_table(const std::string& path, DType dtype);

using GemmPredictionErrors = RelativeErrors;

GemmPredictionErrors gemm_prediction_errors(std::span<const MeasuredGemm> table,
                                            const devices::DeviceSpec& device,
                                            const GemmEfficiencyParameters& efficiency);

// Grid search over peak fraction, pipeline depth and fixed latency (0-8 us) minimizing the mean
// absolute log ratio of predicted to measured time (equal weight to over- and under-prediction, and
// to small and large GEMMs).
GemmEfficiencyParameters fit_gemm_efficiency(std::span<const MeasuredGemm> table,
                                             const devices::DeviceSpec& device);

// Held-fold errors of K-fold cross-validation (row i in fold i mod K).
GemmPredictionErrors cross_validate_gemm_efficiency(std::span<const MeasuredGemm> table,
                                                    const devices::DeviceSpec& device, int folds);

}  // namespace perfsim::kernels

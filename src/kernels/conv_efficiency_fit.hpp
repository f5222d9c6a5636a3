#pragma once
// Fits the convolution model's efficiency parameters (kernels/conv_model.hpp) to measured
// convolution times and measures how well the fitted model predicts shapes it was not fitted
// on (K-fold cross-validation by shape: the passes and repeats of a shape share a fold). Measured
// tables: DeepBench's convolution results, as in ../shared/data/kernels/deepbench-v100.
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "devices/device_spec.hpp"
#include "kernels/accuracy.hpp"
#include "kernels/conv_model.hpp"
#include "kernels/kernel_work.hpp"

namespace perfsim::kernels {

struct MeasuredConv {
  ConvWork work;
  double measured_us = 0;
  std::size_t shape_row = 0;  // data row of the table: the passes of one shape share it
  std::string application;
};

// A DeepBench convolution CSV (W, H, C, N, K, S, R, pad_w, pad_h, stride_w, stride_h,
// fwd_ms, bwd_inputs_ms, bwd_params_ms, P, Q; others ignored) in `dtype`: one entry per
// measured pass ("N/A" cells, passes DeepBench did not run, are skipped). P pairs with W and Q
// with H; a row whose P or Q disagrees with the stride and padding is an error. Throws
// InputError naming file, line and column.
std::vector<MeasuredConv> read_deepbench_conv_table(const std::string& path, DType dtype);

// The shape class a convolution belongs to, for per-class errors: "C<8" (image input
// layers), "1x1", "RxS stride 1" (R, S >= 2), "RxS strided".
std::string conv_shape_class(const ConvShape& shape);

using ConvPredictionErrors = RelativeErrors;

// Model times of every row (at least the device's kernel floor).
std::vector<double> predict_conv_table(std::span<const MeasuredConv> table,
                                       const devices::DeviceSpec& device,
                                       const ConvEfficiencyParameters& efficiency);
// The plain roofline's times of every row (conv_roofline_duration_us, floored the same way).
std::vector<double> roofline_conv_table(std::span<const MeasuredConv> table,
                                        const devices::DeviceSpec& device);

// Errors of predicted[i] against table[i] over the rows `keep` accepts (all when empty).
ConvPredictionErrors conv_prediction_errors(
    std::span<const MeasuredConv> table, std::span<const double> predicted,
    const std::function<bool(const MeasuredConv&)>& keep = {});

// Grid search minimizing the mean absolute log ratio of predicted to measured time over peak
// fraction (0.30-1.00), pipeline depth (1-256 k-steps), fixed latency (0-60 us), FFT/Winograd
// flop fraction (0.3-1.0) and max split-K (1-80).
ConvEfficiencyParameters fit_conv_efficiency(std::span<const MeasuredConv> table,
                                             const devices::DeviceSpec& device);

// Each row's prediction by the parameters fitted on the other folds (distinct shape i, in order
// of first appearance, in fold i mod K; a repeated shape stays in its fold). Throws InputError
// unless 2 <= folds <= distinct shapes.
std::vector<double> cross_validated_conv_predictions(std::span<const MeasuredConv> table,
                                                     const devices::DeviceSpec& device, int folds);

}  // namespace perfsim::kernels

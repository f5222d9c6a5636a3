#include "kernels/conv_efficiency_fit.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>

#include "io/csv_table.hpp"
#include "perfsim/error.hpp"

namespace perfsim::kernels {
namespace {

constexpr std::array<double, 7> kDepths{1, 8, 16, 32, 64, 128, 256};
constexpr std::array<double, 8> kFastFractions{0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0};
constexpr std::array<double, 7> kMaxSplits{1, 2, 4, 8, 16, 32, 80};
constexpr int kMinPeakPercent = 30;
constexpr int kPeakPercentStep = 2;
constexpr int kMaxLatencyUs = 60;

// One row's model time split into what the peak fraction scales and what it does not.
struct RowTerms {
  double compute_at_full_peak_us;
  double memory_us;
};

double combine(const RowTerms& terms, double peak_fraction, double latency_us, double floor_us) {
  return std::max(
      std::max(terms.compute_at_full_peak_us / peak_fraction, terms.memory_us) + latency_us,
      floor_us);
}

}  // namespace

std::vector<MeasuredConv> read_deepbench_conv_table(const std::string& path, DType dtype) {
  const io::CsvTable csv = io::CsvTable::read(path, "convolution table");
  csv.require_columns({"W", "H", "C", "N", "K", "S", "R", "pad_w", "pad_h", "stride_w", "stride_h",
                       "fwd_ms", "bwd_inputs_ms", "bwd_params_ms", "P", "Q"});
  std::vector<MeasuredConv> table;
  std::size_t shape_row = 0;
  for (const io::CsvTable::Row& row : csv.rows()) {
    auto cell_at = [&](const char* name) { return csv.cell(row, name); };
    auto where = [&](const char* name) { return io::CsvTable::where(row, name); };
    auto number_at = [&](const char* name, double minimum) {
      return csv.number(row, name, minimum, 1e9);
    };
    auto extent_at = [&](const char* name, double minimum) {
      const double value = number_at(name, minimum);
      if (value != std::floor(value))
        throw InputError(path, where(name), "must be a whole number");
      return static_cast<std::int64_t>(value);
    };
    ConvShape shape;
    shape.in_w = extent_at("W", 1);
    shape.in_h = extent_at("H", 1);
    shape.in_channels = extent_at("C", 1);
    shape.batch = extent_at("N", 1);
    shape.out_channels = extent_at("K", 1);
    shape.filter_w = extent_at("S", 1);
    shape.filter_h = extent_at("R", 1);
    shape.stride_w = extent_at("stride_w", 1);
    shape.stride_h = extent_at("stride_h", 1);
    shape.out_w = extent_at("P", 1);
    shape.out_h = extent_at("Q", 1);
    const std::int64_t pad_w = extent_at("pad_w", 0);
    const std::int64_t pad_h = extent_at("pad_h", 0);
    if (conv_output_extent(shape.in_w, shape.filter_w, shape.stride_w, pad_w, 1) != shape.out_w)
      throw InputError(path, where("P"), "disagrees with W, S, pad_w and stride_w");
    if (conv_output_extent(shape.in_h, shape.filter_h, shape.stride_h, pad_h, 1) != shape.out_h)
      throw InputError(path, where("Q"), "disagrees with H, R, pad_h and stride_h");
    const std::string application = csv.has_column("application") ? cell_at("application") : "";
    for (const auto& [name, pass] : {std::pair{"fwd_ms", ConvPass::kForward},
                                     std::pair{"bwd_inputs_ms", ConvPass::kBackwardData},
                                     std::pair{"bwd_params_ms", ConvPass::kBackwardFilter}}) {
      if (cell_at(name).starts_with("N/A"))
        continue;  // DeepBench did not run it (no input gradient for an image layer)
      const double measured_ms = number_at(name, 0);
      if (measured_ms <= 0)
        throw InputError(path, where(name), "must be a positive time");
      table.push_back({ConvWork{shape, pass, dtype}, measured_ms * 1000.0, shape_row, application});
    }
    ++shape_row;
  }
  if (table.empty())
    throw InputError(path, "", "no convolution rows");
  return table;
}

std::string conv_shape_class(const ConvShape& shape) {
  if (shape.in_channels / std::max<std::int64_t>(1, shape.groups) < 8)
    return "C<8";
  if (shape.filter_h == 1 && shape.filter_w == 1)
    return "1x1";
  if (shape.stride_h == 1 && shape.stride_w == 1)
    return "RxS stride 1";
  return "RxS strided";
}

std::vector<double> predict_conv_table(std::span<const MeasuredConv> table,
                                       const devices::DeviceSpec& device,
                                       const ConvEfficiencyParameters& efficiency) {
  std::vector<double> out;
  out.reserve(table.size());
  for (const MeasuredConv& row : table)
    out.push_back(std::max(conv_estimate(row.work, device, efficiency).duration_us,
                           device.min_kernel_duration_us.value));
  return out;
}

std::vector<double> roofline_conv_table(std::span<const MeasuredConv> table,
                                        const devices::DeviceSpec& device) {
  std::vector<double> out;
  out.reserve(table.size());
  for (const MeasuredConv& row : table)
    out.push_back(
        std::max(conv_roofline_duration_us(row.work, device), device.min_kernel_duration_us.value));
  return out;
}

ConvPredictionErrors conv_prediction_errors(std::span<const MeasuredConv> table,
                                            std::span<const double> predicted,
                                            const std::function<bool(const MeasuredConv&)>& keep) {
  ConvPredictionErrors errors;
  for (std::size_t i = 0; i < table.size() && i < predicted.size(); ++i) {
    if (keep && !keep(table[i]))
      continue;
    errors.add(predicted[i], table[i].measured_us);
  }
  return errors.mean();
}

ConvEfficiencyParameters fit_conv_efficiency(std::span<const MeasuredConv> table,
                                             const devices::DeviceSpec& device) {
  ConvEfficiencyParameters best;
  if (table.empty())
    return best;
  const double floor_us = device.min_kernel_duration_us.value;
  double best_loss = std::numeric_limits<double>::infinity();
  std::vector<RowTerms> terms(table.size());
  std::vector<double> log_measured(table.size());
  for (std::size_t i = 0; i < table.size(); ++i)
    log_measured[i] = std::log(table[i].measured_us);
  // The peak fraction scales the compute term and the latency adds to the result, so the
  // tiles are evaluated once per (depth, fast fraction, split) at full peak and no latency.
  for (double depth : kDepths) {
    for (double fast : kFastFractions) {
      for (double split : kMaxSplits) {
        const ConvEfficiencyParameters shape_terms{1.0, depth, 0.0, fast, split, false};
        for (std::size_t i = 0; i < table.size(); ++i) {
          const ConvEstimate estimate = conv_estimate(table[i].work, device, shape_terms);
          terms[i] = {estimate.compute_us, estimate.memory_us};
        }
        for (int percent = kMinPeakPercent; percent <= 100; percent += kPeakPercentStep) {
          for (int latency_us = 0; latency_us <= kMaxLatencyUs; ++latency_us) {
            double loss = 0;
            for (std::size_t i = 0; i < table.size(); ++i)
              loss += std::abs(std::log(combine(terms[i], percent / 100.0, latency_us, floor_us)) -
                               log_measured[i]);
            if (loss < best_loss) {
              best_loss = loss;
              best = {percent / 100.0, depth, static_cast<double>(latency_us), fast, split, true};
            }
          }
        }
      }
    }
  }
  return best;
}

std::vector<double> cross_validated_conv_predictions(std::span<const MeasuredConv> table,
                                                     const devices::DeviceSpec& device, int folds) {
  // Tables repeat shapes (DeepBench lists some ResNet layers twice, and under two
  // applications): a shape's every row and pass share a fold, numbered by first appearance.
  std::map<std::array<std::int64_t, 10>, std::size_t> shape_index;
  std::vector<std::size_t> fold_key(table.size());
  for (std::size_t i = 0; i < table.size(); ++i) {
    const ConvShape& shape = table[i].work.shape;
    const std::array<std::int64_t, 10> key{
        shape.batch,    shape.in_channels, shape.in_h,  shape.in_w,     shape.out_channels,
        shape.filter_h, shape.filter_w,    shape.out_h, shape.stride_h, shape.groups};
    fold_key[i] = shape_index.emplace(key, shape_index.size()).first->second;
  }
  if (folds < 2 || static_cast<std::size_t>(folds) > shape_index.size())
    throw InputError("--cv", "", "needs 2 .. distinct shapes folds");
  std::vector<double> predicted(table.size(), 0.0);
  std::vector<int> fold_of_row(table.size());
  for (std::size_t i = 0; i < table.size(); ++i)
    fold_of_row[i] = static_cast<int>(fold_key[i] % static_cast<std::size_t>(folds));
  for (int fold = 0; fold < folds; ++fold) {
    std::vector<MeasuredConv> training;
    for (std::size_t i = 0; i < table.size(); ++i)
      if (fold_of_row[i] != fold)
        training.push_back(table[i]);
    const ConvEfficiencyParameters fitted = fit_conv_efficiency(training, device);
    for (std::size_t i = 0; i < table.size(); ++i)
      if (fold_of_row[i] == fold)
        predicted[i] = std::max(conv_estimate(table[i].work, device, fitted).duration_us,
                                device.min_kernel_duration_us.value);
  }
  return predicted;
}

}  // namespace perfsim::kernels

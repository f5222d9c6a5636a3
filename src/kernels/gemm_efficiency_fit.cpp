#include "kernels/gemm_efficiency_fit.hpp"

#include <cmath>
#include <limits>
#include <optional>

#include "io/csv_table.hpp"
#include "perfsim/error.hpp"

namespace perfsim::kernels {
namespace {

double predicted_us(const MeasuredGemm& gemm, const devices::DeviceSpec& device,
                    const GemmEfficiencyParameters& efficiency) {
  return std::max(analytical_gemm_estimate(gemm.work, device, efficiency).duration_us,
                  device.min_kernel_duration_us.value);
}

double mean_abs_log_ratio(std::span<const MeasuredGemm> table, const devices::DeviceSpec& device,
                          const GemmEfficiencyParameters& efficiency) {
  double total = 0;
  for (const MeasuredGemm& gemm : table)
    total += std::abs(std::log(predicted_us(gemm, device, efficiency) / gemm.measured_us));
  return total / static_cast<double>(table.size());
}

}  // namespace

std::vector<MeasuredGemm> read_deepbench_gemm_table(const std::string& path, DType dtype) {
  const io::CsvTable csv = io::CsvTable::read(path, "GEMM table");
  csv.require_columns({"M", "N", "K", "time_ms"});
  std::vector<MeasuredGemm> table;
  const bool typed_rows = csv.has_column("dtype");
  for (const io::CsvTable::Row& row : csv.rows()) {
    if (typed_rows) {
      const std::string name = csv.cell(row, "dtype");
      const std::optional<DType> row_dtype = parse_dtype(name);
      if (!row_dtype)
        throw InputError(path, io::CsvTable::where(row, "dtype"), "unknown dtype '" + name + "'");
      if (*row_dtype != dtype)
        continue;
    }
    auto positive = [&](const char* name) {
      const double value = csv.number(row, name, 0, 1e12);
      if (value <= 0)
        throw InputError(path, io::CsvTable::where(row, name), "must be a positive number");
      return value;
    };
    MeasuredGemm gemm;
    gemm.work.m = static_cast<std::int64_t>(positive("M"));
    gemm.work.n = static_cast<std::int64_t>(positive("N"));
    gemm.work.k = static_cast<std::int64_t>(positive("K"));
    if (csv.has_column("batch"))
      gemm.work.batch = static_cast<std::int64_t>(positive("batch"));
    gemm.work.dtype = dtype;
    gemm.measured_us = positive("time_ms") * 1000.0;
    table.push_back(gemm);
  }
  if (table.empty())
    throw InputError(path, "", std::string("no GEMM rows in ") + std::string(dtype_name(dtype)));
  return table;
}

GemmPredictionErrors gemm_prediction_errors(std::span<const MeasuredGemm> table,
                                            const devices::DeviceSpec& device,
                                            const GemmEfficiencyParameters& efficiency) {
  GemmPredictionErrors errors;
  for (const MeasuredGemm& gemm : table)
    errors.add(predicted_us(gemm, device, efficiency), gemm.measured_us);
  return errors.mean();
}

GemmEfficiencyParameters fit_gemm_efficiency(std::span<const MeasuredGemm> table,
                                             const devices::DeviceSpec& device) {
  GemmEfficiencyParameters best;
  if (table.empty())
    return best;
  double best_loss = std::numeric_limits<double>::infinity();
  for (int percent = 20; percent <= 100; ++percent) {
    for (double depth : {1.0, 8.0, 16.0, 32.0, 48.0, 64.0, 96.0, 128.0, 192.0, 256.0, 384.0, 512.0,
                         768.0, 1024.0}) {
      for (int half_us = 0; half_us <= 16; ++half_us) {
        const GemmEfficiencyParameters candidate{percent / 100.0, depth, half_us / 2.0};
        const double loss = mean_abs_log_ratio(table, device, candidate);
        if (loss < best_loss) {
          best_loss = loss;
          best = candidate;
        }
      }
    }
  }
  return best;
}

GemmPredictionErrors cross_validate_gemm_efficiency(std::span<const MeasuredGemm> table,
                                                    const devices::DeviceSpec& device, int folds) {
  if (folds < 2 || static_cast<std::size_t>(folds) > table.size())
    throw InputError("--cv", "", "needs 2 .. rows folds");
  GemmPredictionErrors total;
  double signed_sum = 0, abs_sum = 0;
  for (int fold = 0; fold < folds; ++fold) {
    std::vector<MeasuredGemm> training, held;
    for (std::size_t i = 0; i < table.size(); ++i)
      (static_cast<int>(i % static_cast<std::size_t>(folds)) == fold ? held : training)
          .push_back(table[i]);
    const GemmEfficiencyParameters fitted = fit_gemm_efficiency(training, device);
    const GemmPredictionErrors errors = gemm_prediction_errors(held, device, fitted);
    abs_sum += errors.gmae * static_cast<double>(errors.count);
    signed_sum += errors.mean_signed * static_cast<double>(errors.count);
    total.max_abs = std::max(total.max_abs, errors.max_abs);
    total.count += errors.count;
  }
  total.gmae = abs_sum / static_cast<double>(total.count);
  total.mean_signed = signed_sum / static_cast<double>(total.count);
  return total;
}

}  // namespace perfsim::kernels

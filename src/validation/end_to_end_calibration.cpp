#include "validation/end_to_end_calibration.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "io/input_file.hpp"
#include "perfsim/error.hpp"

namespace perfsim::validation {
namespace {

constexpr const char* kSchema = "perfsim-llm-calibration/1";

double non_negative(const nlohmann::json& doc, const char* field, const std::string& source) {
  if (!doc.contains(field) || !doc[field].is_number())
    throw InputError(source, field, "a number is needed");
  const double value = doc[field].get<double>();
  if (!std::isfinite(value) || value < 0 || value > 1e9)
    throw InputError(source, field, "must be finite and in [0, 1e9]");
  return value;
}

// The c >= 0 minimizing sum |(p_i + c) / m_i - 1| = sum (1/m_i) |c - (m_i - p_i)|: a weighted
// median of the residuals with weights 1/m_i.
double best_offset(std::span<const CalibrationSample> samples, std::size_t grid_index) {
  std::vector<std::pair<double, double>> residuals;  // (residual, weight)
  double total = 0;
  for (const CalibrationSample& sample : samples) {
    const double weight = 1.0 / sample.measured_us;
    residuals.emplace_back(sample.measured_us - sample.simulated_us_by_grid[grid_index], weight);
    total += weight;
  }
  std::sort(residuals.begin(), residuals.end());
  double running = 0;
  for (const auto& [residual, weight] : residuals) {
    running += weight;
    if (running >= 0.5 * total)
      return std::max(0.0, residual);
  }
  return 0;
}

std::size_t grid_index_of(const EndToEndCalibration& calibration) {
  const auto& grid = host_cost_grid();
  auto distance = [&](const HostCostPoint& point) {
    return std::abs(point.host_us_per_op - calibration.host_us_per_op) +
           std::abs(point.host_us_per_micro_batch - calibration.host_us_per_micro_batch);
  };
  std::size_t best = 0;
  for (std::size_t i = 1; i < grid.size(); ++i)
    if (distance(grid[i]) < distance(grid[best]))
      best = i;
  return best;
}

}  // namespace

EndToEndCalibration parse_calibration(std::string_view json_text, const std::string& source) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::parse_error& error) {
    throw InputError(source, "byte " + std::to_string(error.byte), "not JSON");
  }
  if (!doc.is_object() || doc.value("schema", "") != kSchema)
    throw InputError(source, "schema", std::string("expected \"") + kSchema + "\"");
  EndToEndCalibration calibration;
  calibration.host_us_per_op = non_negative(doc, "host_us_per_op", source);
  calibration.host_us_per_micro_batch = non_negative(doc, "host_us_per_micro_batch", source);
  calibration.iteration_us = non_negative(doc, "iteration_us", source);
  if (doc.contains("fitted_on") && doc["fitted_on"].is_string())
    calibration.fitted_on = doc["fitted_on"].get<std::string>();
  if (doc.contains("fitted_rows") && doc["fitted_rows"].is_number_unsigned())
    calibration.fitted_rows = doc["fitted_rows"].get<std::size_t>();
  if (doc.contains("fit_mean_abs_error") && doc["fit_mean_abs_error"].is_number())
    calibration.fit_mean_abs_error = doc["fit_mean_abs_error"].get<double>();
  return calibration;
}

EndToEndCalibration load_calibration(const std::string& path) {
  return parse_calibration(io::read_file_decompressed(path), path);
}

std::string calibration_json(const EndToEndCalibration& calibration) {
  nlohmann::ordered_json doc;
  doc["schema"] = kSchema;
  doc["host_us_per_op"] = calibration.host_us_per_op;
  doc["host_us_per_micro_batch"] = calibration.host_us_per_micro_batch;
  doc["iteration_us"] = calibration.iteration_us;
  doc["fitted_on"] = calibration.fitted_on;
  doc["fitted_rows"] = calibration.fitted_rows;
  doc["fit_mean_abs_error"] = calibration.fit_mean_abs_error;
  doc["note"] =
      "host_us_per_op: CPU time per top-level op (eager framework dispatch + launch); "
      "host_us_per_micro_batch: CPU time of loading a micro-batch after the host waited for the "
      "GPU; iteration_us: fixed per-iteration cost outside the traced ops. Fitted by `perfsim "
      "validate runs --fit-calibration`; the fit error is in-sample.";
  return doc.dump(2) + "\n";
}

const std::vector<HostCostPoint>& host_cost_grid() {
  static const std::vector<HostCostPoint> grid = [] {
    std::vector<HostCostPoint> points;
    // Per op 0 .. 80 us (a C++ loop up to slow eager Python); per micro-batch 0 .. 4 ms.
    for (int op = 0; op <= 20; ++op)
      for (int batch = 0; batch <= 16; ++batch)
        points.push_back({4.0 * op, 250.0 * batch});
    return points;
  }();
  return grid;
}

EndToEndCalibration fit_calibration(std::span<const CalibrationSample> samples) {
  EndToEndCalibration best;
  best.fit_mean_abs_error = std::numeric_limits<double>::infinity();
  if (samples.empty())
    return best;
  const auto& grid = host_cost_grid();
  for (std::size_t g = 0; g < grid.size(); ++g) {
    const double offset = best_offset(samples, g);
    double error = 0;
    for (const CalibrationSample& sample : samples)
      error += std::abs((sample.simulated_us_by_grid[g] + offset) / sample.measured_us - 1.0);
    error /= static_cast<double>(samples.size());
    if (error < best.fit_mean_abs_error) {
      best.fit_mean_abs_error = error;
      best.host_us_per_op = grid[g].host_us_per_op;
      best.host_us_per_micro_batch = grid[g].host_us_per_micro_batch;
      best.iteration_us = offset;
    }
  }
  best.fitted_rows = samples.size();
  return best;
}

double calibrated_us(const CalibrationSample& sample, const EndToEndCalibration& calibration) {
  return sample.simulated_us_by_grid.at(grid_index_of(calibration)) + calibration.iteration_us;
}

}  // namespace perfsim::validation

#include "validation/end_to_end_calibration.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "io/input_file.hpp"
#include "io/json_document.hpp"
#include "perfsim/error.hpp"

namespace perfsim::validation {
namespace {

constexpr const char* kSchema = "perfsim-llm-calibration/1";
constexpr int kMaxSweeps = 6;

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
double best_offset(std::span<const double> measured, std::span<const double> simulated) {
  std::vector<std::pair<double, double>> residuals;  // (residual, weight)
  double total = 0;
  for (std::size_t i = 0; i < measured.size(); ++i) {
    const double weight = 1.0 / measured[i];
    residuals.emplace_back(measured[i] - simulated[i], weight);
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

std::vector<double> simulate_all(std::size_t rows, const CalibrationPoint& point,
                                 const RowSimulator& simulate, int jobs) {
  std::vector<double> out(rows);
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t i = next++; i < rows; i = next++)
      out[i] = simulate(i, point);
  };
  std::vector<std::thread> threads;
  for (int j = 1; j < std::min<int>(jobs, static_cast<int>(rows)); ++j)
    threads.emplace_back(worker);
  worker();
  for (std::thread& thread : threads)
    thread.join();
  return out;
}

struct Candidate {
  CalibrationPoint point;
  double offset_us = 0;
  double error = std::numeric_limits<double>::infinity();
};

Candidate score(std::span<const double> measured, const CalibrationPoint& point,
                const RowSimulator& simulate, int jobs) {
  const std::vector<double> simulated = simulate_all(measured.size(), point, simulate, jobs);
  Candidate candidate;
  candidate.point = point;
  candidate.offset_us = best_offset(measured, simulated);
  candidate.error = 0;
  for (std::size_t i = 0; i < measured.size(); ++i)
    candidate.error += std::abs((simulated[i] + candidate.offset_us) / measured[i] - 1.0);
  candidate.error /= static_cast<double>(measured.size());
  return candidate;
}

std::vector<double> steps(double step, int count) {
  std::vector<double> values;
  for (int i = 0; i <= count; ++i)
    values.push_back(step * i);
  return values;
}

}  // namespace

EndToEndCalibration parse_calibration(std::string_view json_text, const std::string& source) {
  const nlohmann::json doc = io::parse_json_document(json_text, source);
  // value() would throw type_error for a schema that is not a string.
  if (!doc.is_object() || !doc.contains("schema") || !doc["schema"].is_string() ||
      doc["schema"].get<std::string>() != kSchema)
    throw InputError(source, "schema", std::string("expected \"") + kSchema + "\"");
  EndToEndCalibration calibration;
  // One cost for every op (host_us_per_op), or one for ops issued from Python and one for the
  // backward pass's.
  const bool split =
      doc.contains("host_us_per_forward_op") || doc.contains("host_us_per_backward_op");
  if (split && doc.contains("host_us_per_op"))
    throw InputError(source, "host_us_per_op",
                     "give either host_us_per_op or host_us_per_forward_op and "
                     "host_us_per_backward_op, not both");
  if (split) {
    calibration.host.host_us_per_forward_op = non_negative(doc, "host_us_per_forward_op", source);
    calibration.host.host_us_per_backward_op = non_negative(doc, "host_us_per_backward_op", source);
  } else {
    calibration.host.host_us_per_forward_op = non_negative(doc, "host_us_per_op", source);
    calibration.host.host_us_per_backward_op = calibration.host.host_us_per_forward_op;
  }
  calibration.host.host_us_per_collective = non_negative(doc, "host_us_per_collective", source);
  calibration.host.host_us_per_micro_batch = non_negative(doc, "host_us_per_micro_batch", source);
  calibration.iteration_us = non_negative(doc, "iteration_us", source);
  if (doc.contains("gemm_time_scale")) {
    const double scale = non_negative(doc, "gemm_time_scale", source);
    if (scale < 0.1 || scale > 10)
      throw InputError(source, "gemm_time_scale", "must be in [0.1, 10]");
    calibration.host.gemm_time_scale = scale;
  }
  if (doc.contains("device")) {
    if (!doc["device"].is_string())
      throw InputError(source, "device", "must be a device name");
    calibration.device = doc["device"].get<std::string>();
  }
  if (calibration.host.gemm_time_scale != 1 && calibration.device.empty())
    throw InputError(source, "device", "a gemm_time_scale other than 1 needs the device it is for");
  if (doc.contains("fitted_on") && doc["fitted_on"].is_string())
    calibration.fitted_on = doc["fitted_on"].get<std::string>();
  if (calibration.fitted_on.empty())
    calibration.fitted_on = source;
  if (doc.contains("fitted_rows") && doc["fitted_rows"].is_number_unsigned())
    calibration.fitted_rows = doc["fitted_rows"].get<std::size_t>();
  if (doc.contains("fit_mean_abs_error") && doc["fit_mean_abs_error"].is_number())
    calibration.fit_mean_abs_error = doc["fit_mean_abs_error"].get<double>();
  return calibration;
}

EndToEndCalibration load_calibration(const std::string& path) {
  return parse_calibration(io::read_file_decompressed(path), path);
}

nlohmann::ordered_json calibration_terms_json(const EndToEndCalibration& calibration) {
  nlohmann::ordered_json terms;
  // One cost for every op is written as before, so that files without a split read as they
  // did.
  if (calibration.host.host_us_per_forward_op == calibration.host.host_us_per_backward_op) {
    terms["host_us_per_op"] = calibration.host.host_us_per_forward_op;
  } else {
    terms["host_us_per_forward_op"] = calibration.host.host_us_per_forward_op;
    terms["host_us_per_backward_op"] = calibration.host.host_us_per_backward_op;
  }
  terms["host_us_per_collective"] = calibration.host.host_us_per_collective;
  terms["host_us_per_micro_batch"] = calibration.host.host_us_per_micro_batch;
  terms["iteration_us"] = calibration.iteration_us;
  terms["gemm_time_scale"] = calibration.host.gemm_time_scale;
  terms["device"] = calibration.device;
  terms["fitted_on"] = calibration.fitted_on;
  return terms;
}

std::string calibration_json(const EndToEndCalibration& calibration) {
  nlohmann::ordered_json doc;
  doc["schema"] = kSchema;
  // A named object: the range of a range-for over a temporary's items() would outlive it.
  const nlohmann::ordered_json terms = calibration_terms_json(calibration);
  for (const auto& [key, value] : terms.items())
    doc[key] = value;
  const bool split =
      calibration.host.host_us_per_forward_op != calibration.host.host_us_per_backward_op;
  doc["fitted_rows"] = calibration.fitted_rows;
  doc["fit_mean_abs_error"] = calibration.fit_mean_abs_error;
  doc["note"] =
      std::string(split ? "CPU time per top-level op issued from Python and per op of the backward "
                          "pass (issued by the autograd engine)"
                        : "CPU time per top-level op") +
      ", extra per communication call, per micro-batch load (after a host wait), a fixed "
      "per-iteration cost, and measured over modelled GEMM time on `device` (applied to that "
      "device only). Fitted by `perfsim validate runs --fit-calibration`; fit_mean_abs_error is "
      "in-sample.";
  return doc.dump(2) + "\n";
}

const CalibrationAxes& calibration_axes() {
  static const CalibrationAxes axes = [] {
    // Per op 0-160 us: wide enough that the fits of the shipped tables (80 us on H100 and the
    // split A100 fit, 56 us one-cost) are interior points, not the grid's edge.
    CalibrationAxes made{steps(4.0, 40), steps(20.0, 20), steps(250.0, 32), {}, {}};
    for (int i = 0; i <= 35; ++i)
      made.gemm_time_scale.push_back((80 + 2 * i) / 100.0);  // 0.80 .. 1.50, 1 exactly
    made.backward_over_forward = {1.0, 0.75, 0.5, 0.25};
    return made;
  }();
  return axes;
}

EndToEndCalibration fit_calibration(std::span<const double> measured_us,
                                    const RowSimulator& simulate, int jobs, FitAxes fit_axes) {
  EndToEndCalibration fitted;
  if (measured_us.empty())
    return fitted;
  const CalibrationAxes& axes = calibration_axes();
  const std::vector<double>* values[4] = {&axes.per_op_us, &axes.per_collective_us,
                                          &axes.per_micro_batch_us, &axes.gemm_time_scale};
  const int axis_count = fit_axes.gemm_time_scale ? 4 : 3;
  auto coordinate = [](CalibrationPoint& point, int axis) -> double& {
    return axis == 0   ? point.host_us_per_forward_op
           : axis == 1 ? point.host_us_per_collective
           : axis == 2 ? point.host_us_per_micro_batch
                       : point.gemm_time_scale;
  };
  std::map<CalibrationPoint, Candidate> scored;
  auto evaluate = [&](const CalibrationPoint& point) {
    auto it = scored.find(point);
    if (it == scored.end())
      it = scored.emplace(point, score(measured_us, point, simulate, jobs)).first;
    return it->second;
  };
  // Pattern search on the grid indices: from zero host cost, try steps of 8, 4, 2 and 1 grid
  // points along each axis and move while the error falls. Where no single axis helps, try
  // the diagonals of every pair of axes: the host costs trade against each other (time per op
  // against time per micro-batch, host against GEMM time near the host/GPU crossover), so the
  // error falls along a valley no axis follows, and a search along the axes alone stops on its
  // wall (in sample on vTrain's table: 8.05% where a point of 7.64% existed).
  const auto unit_scale =
      std::min_element(axes.gemm_time_scale.begin(), axes.gemm_time_scale.end(),
                       [](double a, double b) { return std::abs(a - 1) < std::abs(b - 1); });
  std::vector<std::array<int, 4>> axis_moves, diagonal_moves;
  for (int axis = 0; axis < axis_count; ++axis) {
    for (int direction : {-1, 1}) {
      std::array<int, 4> move{};
      move[static_cast<std::size_t>(axis)] = direction;
      axis_moves.push_back(move);
    }
    for (int other = axis + 1; other < axis_count; ++other) {
      for (int direction : {-1, 1}) {
        for (int other_direction : {-1, 1}) {
          std::array<int, 4> move{};
          move[static_cast<std::size_t>(axis)] = direction;
          move[static_cast<std::size_t>(other)] = other_direction;
          diagonal_moves.push_back(move);
        }
      }
    }
  }
  // The search with per backward op = `backward_ratio` x per forward op.
  auto search = [&](double backward_ratio) {
    auto point_at = [&](const std::array<int, 4>& at) -> std::optional<CalibrationPoint> {
      CalibrationPoint point;
      point.gemm_time_scale = *unit_scale;
      for (int axis = 0; axis < axis_count; ++axis) {
        const int i = at[static_cast<std::size_t>(axis)];
        if (i < 0 || i >= static_cast<int>(values[axis]->size()))
          return std::nullopt;
        coordinate(point, axis) = (*values[axis])[static_cast<std::size_t>(i)];
      }
      point.host_us_per_backward_op = point.host_us_per_forward_op * backward_ratio;
      return point;
    };
    std::array<int, 4> index = {0, 0, 0,
                                static_cast<int>(unit_scale - axes.gemm_time_scale.begin())};
    Candidate best = evaluate(*point_at(index));
    // Moves along `move` while the error falls; true when it moved at all.
    auto follow = [&](const std::array<int, 4>& move, int step) {
      bool moved = false;
      for (;;) {
        std::array<int, 4> next = index;
        for (std::size_t axis = 0; axis < next.size(); ++axis)
          next[axis] += step * move[axis];
        const std::optional<CalibrationPoint> point = point_at(next);
        if (!point)
          return moved;
        const Candidate candidate = evaluate(*point);
        if (candidate.error >= best.error - 1e-12)
          return moved;
        best = candidate;
        index = next;
        moved = true;
      }
    };
    for (int sweep = 0; sweep < kMaxSweeps; ++sweep) {
      bool moved = false;
      for (int step : {8, 4, 2, 1}) {
        for (bool improved = true; improved;) {
          improved = false;
          for (const std::array<int, 4>& move : axis_moves)
            improved = follow(move, step) || improved;
          if (!improved) {
            for (const std::array<int, 4>& move : diagonal_moves) {
              if (follow(move, step)) {
                improved = true;
                break;  // back to the axes from the new point
              }
            }
          }
          moved = moved || improved;
        }
      }
      if (!moved)
        break;  // no step along any axis or pair of axes helps: a local minimum on the grid
    }
    return best;
  };
  // One cost for every op first; with the backward axis, the same search at each other ratio
  // of its coarse grid, each from zero host cost, the best kept (a tie keeps the single
  // cost). A profile, not one search over the ratio too: moving the ratio at a fixed cost per
  // forward op shifts every row's host time by a few percent, more than the valley between
  // cost per op and per micro-batch allows, so a joint search stops wherever it first moved
  // the ratio (on rows generated with 56 us forward, 35 us backward it stopped at 52 / 45.5).
  Candidate best = search(1.0);
  if (fit_axes.backward_over_forward) {
    for (double ratio : axes.backward_over_forward) {
      if (ratio == 1.0)
        continue;
      const Candidate candidate = search(ratio);
      if (candidate.error < best.error - 1e-12)
        best = candidate;
    }
  }
  fitted.host = best.point;
  fitted.iteration_us = best.offset_us;
  fitted.fit_mean_abs_error = best.error;
  fitted.fitted_rows = measured_us.size();
  return fitted;
}

}  // namespace perfsim::validation

#pragma once
// What the kernel and collective models cannot see, fitted end to end on measured runs as two
// physical parameters (never a per-row or per-model multiplier):
//   host_us_per_op   CPU time the framework spends per top-level op (PyTorch eager dispatch,
//                    Megatron's Python, the launch call). The engine's CPU clock runs it, so it
//                    costs time only where the GPU would otherwise outrun the CPU: small layers,
//                    small micro-batches, many ranks of tensor parallelism.
//   host_us_per_micro_batch  CPU time of loading one micro-batch (the data loader's next
//                    batch, Megatron's get_batch broadcast and masks), spent after the host
//                    waited for the GPU (get_batch copies the batch sizes to the host).
//   iteration_us     a fixed cost per iteration outside the traced ops (the scheduler's
//                    bookkeeping, logging, the loss scaler's and gradient norm's host syncs).
// Stored as JSON ("perfsim-llm-calibration/1") with the table it was fitted on.
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace perfsim::validation {

struct EndToEndCalibration {
  double host_us_per_op = 0;
  double host_us_per_micro_batch = 0;
  double iteration_us = 0;
  std::string fitted_on;  // the run table (and rows) it was fitted on; "" = not calibrated
  std::size_t fitted_rows = 0;
  double fit_mean_abs_error = 0;  // in-sample, on the rows it was fitted on
};

EndToEndCalibration parse_calibration(std::string_view json_text, const std::string& source);
EndToEndCalibration load_calibration(const std::string& path);
std::string calibration_json(const EndToEndCalibration& calibration);

// The two host costs are searched on a grid (each point needs its own simulation of every
// row); the per-iteration cost is then solved in closed form.
struct HostCostPoint {
  double host_us_per_op = 0;
  double host_us_per_micro_batch = 0;
};
const std::vector<HostCostPoint>& host_cost_grid();

// One run for fitting: its measured time and the simulated iteration (without the
// per-iteration term) at every point of host_cost_grid().
struct CalibrationSample {
  double measured_us = 0;
  std::vector<double> simulated_us_by_grid;  // host_cost_grid().size() values
};

// Minimizes the mean absolute relative error over `samples` (the per-iteration term is the
// weighted median that minimizes it for each grid value, kept non-negative).
EndToEndCalibration fit_calibration(std::span<const CalibrationSample> samples);

// Predicted iteration of a sample under a calibration fitted on the same grid.
double calibrated_us(const CalibrationSample& sample, const EndToEndCalibration& calibration);

}  // namespace perfsim::validation

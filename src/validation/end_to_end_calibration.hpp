#pragma once
// What the kernel and collective models cannot see, fitted end to end on measured runs as a few
// physical parameters (never a per-row or per-model multiplier):
//   host_us_per_op          CPU time the framework spends per top-level op (PyTorch eager
//                           dispatch, the framework's Python, the launch call). The engine's CPU
//                           clock runs it, so it costs time only where the GPU would otherwise
//                           outrun the CPU: small layers, small micro-batches, wide TP.
//   host_us_per_collective  extra CPU time of a communication call (the process group's work
//                           object, events and stream waits around the NCCL launch).
//   host_us_per_micro_batch CPU time of loading one micro-batch (the data loader's next batch,
//                           Megatron's get_batch broadcast and masks), spent after the host
//                           waited for the GPU (get_batch copies the batch sizes to the host).
//   iteration_us            a fixed cost per iteration outside the traced ops (the scheduler's
//                           bookkeeping, logging, the loss scaler's and gradient norm's syncs).
//   gemm_time_scale         the GPU side: measured GEMM time over the analytical model's on the
//                           one device the table ran on (1.1 = cuBLAS reaches 1/1.1 of the peak
//                           fraction the device file assumes). Applied only to that device, and
//                           fitted only when every fitting row ran on one device.
// Stored as JSON ("perfsim-llm-calibration/1") with the table it was fitted on.
#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace perfsim::validation {

// The host costs and GEMM time scale a simulation runs with.
struct CalibrationPoint {
  double host_us_per_op = 0;
  double host_us_per_collective = 0;
  double host_us_per_micro_batch = 0;
  double gemm_time_scale = 1;

  auto operator<=>(const CalibrationPoint&) const = default;
};

struct EndToEndCalibration {
  CalibrationPoint host;
  std::string device;  // whose GEMM time host.gemm_time_scale scales; "" = none (scale 1)
  double iteration_us = 0;
  std::string fitted_on;  // the run table (and rows) it was fitted on; "" = not calibrated
  std::size_t fitted_rows = 0;
  double fit_mean_abs_error = 0;  // in-sample, on the rows it was fitted on
};

EndToEndCalibration parse_calibration(std::string_view json_text, const std::string& source);
EndToEndCalibration load_calibration(const std::string& path);
std::string calibration_json(const EndToEndCalibration& calibration);

// The values each host cost is searched over (one simulation of every row per point visited).
struct CalibrationAxes {
  std::vector<double> per_op_us;
  std::vector<double> per_collective_us;
  std::vector<double> per_micro_batch_us;
  std::vector<double> gemm_time_scale;  // the search starts at its value 1
};
const CalibrationAxes& calibration_axes();

// The simulated iteration of fitting row `row` (without the per-iteration term) at `point`.
// Called from up to `jobs` threads at once for different rows.
using RowSimulator = std::function<double(std::size_t row, const CalibrationPoint& point)>;

// Minimizes the mean absolute relative error over the rows: pattern search over the three
// host costs on calibration_axes() (starting at zero) and, with fit_gemm_time_scale, the GEMM
// time scale (starting at 1), along each axis and, where no axis helps, along the diagonals of
// each pair of axes; the per-iteration term solved for each candidate in closed form
// (the weighted median of the residuals, kept non-negative).
EndToEndCalibration fit_calibration(std::span<const double> measured_us,
                                    const RowSimulator& simulate, int jobs = 1,
                                    bool fit_gemm_time_scale = false);

}  // namespace perfsim::validation

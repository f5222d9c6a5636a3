#pragma once
// What the kernel and collective models cannot see, fitted end to end on measured runs as a few
// physical parameters (never a per-row or per-model multiplier):
//   host_us_per_forward_op  CPU time the framework spends per top-level op issued from Python
//                           (PyTorch eager dispatch, module __call__ and hooks, the launch call):
//                           the forward, the recomputed forward, the loss, the optimizer, the
//                           gradient reduction and pipeline exchanges. The engine's CPU clock runs
//                           it, so it costs time only where the GPU would otherwise outrun the
//                           CPU: small layers, small micro-batches, wide TP.
//   host_us_per_backward_op the same for ops of the backward pass, which the C++ autograd engine
//                           issues (custom autograd Functions with a Python backward, such as
//                           Megatron's linear layers, still run Python: this is their mean).
//                           The file's single host_us_per_op (schema as before) sets both.
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
#include <nlohmann/json_fwd.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace perfsim::validation {

// The host costs and GEMM time scale a simulation runs with.
struct CalibrationPoint {
  double host_us_per_forward_op = 0;   // and every op not of the backward phase
  double host_us_per_backward_op = 0;  // ops of the backward phase
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

// The fitted terms, the device and the table as calibration_json writes them (one
// host_us_per_op, or the forward / backward pair where they differ), for reports that show a
// calibration without its file's schema, row count and note.
nlohmann::ordered_json calibration_terms_json(const EndToEndCalibration& calibration);

// The values each host cost is searched over (one simulation of every row per point visited).
struct CalibrationAxes {
  std::vector<double> per_op_us;  // per forward op (and per backward op, unless split)
  std::vector<double> per_collective_us;
  std::vector<double> per_micro_batch_us;
  std::vector<double> gemm_time_scale;  // the search starts at its value 1
  // Per backward op over per forward op: each value costs a search of its own (a profile), so
  // the grid is coarse; 1 (one cost for every op) first. Not above 1: the autograd engine
  // issues the backward's ops from C++, without the forward's module and hook Python.
  std::vector<double> backward_over_forward;
};
const CalibrationAxes& calibration_axes();

// The simulated iteration of fitting row `row` (without the per-iteration term) at `point`.
// Called from up to `jobs` threads at once for different rows.
using RowSimulator = std::function<double(std::size_t row, const CalibrationPoint& point)>;

// Which optional axes the fit searches (the others stay at 1).
struct FitAxes {
  bool gemm_time_scale = false;        // fitted only when every row ran on one device
  bool backward_over_forward = false;  // per backward op cost apart from per forward op
};

// Minimizes the mean absolute relative error over the rows: pattern search over the three
// host costs on calibration_axes() (starting at zero) and, with axes.gemm_time_scale, the GEMM
// time scale (starting at 1), along each axis and, where no axis helps, along the diagonals of
// each pair of axes; with axes.backward_over_forward that search once per value of its grid,
// the best kept; the per-iteration term solved for each candidate in closed form (the weighted
// median of the residuals, kept non-negative).
EndToEndCalibration fit_calibration(std::span<const double> measured_us,
                                    const RowSimulator& simulate, int jobs = 1, FitAxes axes = {});

}  // namespace perfsim::validation

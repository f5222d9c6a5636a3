// perfsim calibrate gemm: fits the analytical GEMM model's efficiency parameters to a measured
// GEMM table on one device, reports the error before and after (and out of sample with --cv),
// and prints the device-file entry that carries the fit.
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "kernels/gemm_efficiency_fit.hpp"
#include "mpi_sim/cli/calibrate_conv_command.hpp"
#include "mpi_sim/cli/command_line.hpp"
#include "mpi_sim/cli/prediction_errors_line.hpp"
#include "perfsim/error.hpp"
#include "scenario/device_argument.hpp"

namespace perfsim::cli {
namespace {

struct CalibrateGemmOptions {
  std::vector<std::string> tables;
  std::string device;
  std::string dtype = "fp16";
  int folds = 5;
};

void print_gemm_errors(const std::string& label, const kernels::GemmPredictionErrors& errors) {
  print_prediction_errors(label, errors, 46, 8, "GEMMs");
}

int run_calibrate_gemm(const CalibrateGemmOptions& options) {
  const std::optional<DType> dtype = parse_dtype(options.dtype);
  if (!dtype ||
      (*dtype != DType::kFloat16 && *dtype != DType::kBFloat16 && *dtype != DType::kFloat32 &&
       *dtype != DType::kTFloat32 && *dtype != DType::kFloat8))
    throw InputError("--dtype", "", "must be fp16, bf16, tf32, fp32 or fp8, got " + options.dtype);
  const devices::DeviceSpec device = scenario::read_device_argument(options.device);
  std::vector<kernels::MeasuredGemm> table;
  std::string table_names;
  for (const std::string& path : options.tables) {
    const auto rows = kernels::read_deepbench_gemm_table(path, *dtype);
    table.insert(table.end(), rows.begin(), rows.end());
    table_names += (table_names.empty() ? "" : " --table ") + path;
  }
  const kernels::GemmEfficiencyParameters current = kernels::gemm_efficiency_for(device, *dtype);
  const kernels::GemmEfficiencyParameters fitted = kernels::fit_gemm_efficiency(table, device);
  const bool tensor_core = device.gemm_unit(*dtype) == devices::MathUnit::kTensorCore;
  std::cout << "analytical GEMM model on " << device.name << " ("
            << (tensor_core ? "tensor cores" : "CUDA cores") << ", " << options.dtype
            << "), measured table " << table_names << "\n";
  print_gemm_errors("device file's parameters (" +
                        std::to_string(current.peak_fraction).substr(0, 4) + ", " +
                        std::to_string(static_cast<int>(current.pipeline_depth_k)) + ", " +
                        std::to_string(current.fixed_latency_us).substr(0, 3) + " us)",
                    kernels::gemm_prediction_errors(table, device, current));
  print_gemm_errors("fitted on every row (IN SAMPLE)",
                    kernels::gemm_prediction_errors(table, device, fitted));
  if (options.folds > 1)
    print_gemm_errors(std::to_string(options.folds) + "-fold cross-validation (OUT OF SAMPLE)",
                      kernels::cross_validate_gemm_efficiency(table, device, options.folds));
  nlohmann::ordered_json entry;
  const std::string source = "fitted by `perfsim calibrate gemm --table " + table_names +
                             " --device " + device.name + " --dtype " + options.dtype + "`";
  const std::string unit_key =
      *dtype == DType::kFloat8 ? "tensor_core_fp8" : (tensor_core ? "tensor_core" : "cuda_core");
  entry[unit_key] = {
      {"peak_fraction",
       {{"value", fitted.peak_fraction}, {"provenance", "measured"}, {"source", source}}},
      {"pipeline_depth_k",
       {{"value", fitted.pipeline_depth_k}, {"provenance", "measured"}, {"source", source}}}};
  // A device file's figures are positive; a zero latency is the default and stays unwritten.
  if (fitted.fixed_latency_us > 0)
    entry[unit_key]["fixed_latency_us"] = {
        {"value", fitted.fixed_latency_us}, {"provenance", "measured"}, {"source", source}};
  std::cout << "fitted: peak fraction " << fitted.peak_fraction << ", pipeline depth "
            << fitted.pipeline_depth_k << " k-steps, fixed latency " << fitted.fixed_latency_us
            << " us\ndevice-file entry (\"gemm_efficiency\"):\n"
            << entry.dump(2) << "\n";
  return 0;
}

}  // namespace

void add_calibrate_command(CLI::App& app, CommandRegistry& registry) {
  CLI::App* calibrate =
      app.add_subcommand("calibrate", "Fit kernel-model efficiencies to measured kernel tables");
  calibrate->require_subcommand(1);
  CLI::App* gemm = calibrate->add_subcommand(
      "gemm",
      "Fit the analytical GEMM model's peak fraction and pipeline depth to a measured GEMM "
      "table (DeepBench CSV: M, N, K, time_ms) on one device");
  auto options = std::make_shared<CalibrateGemmOptions>();
  gemm->add_option("--table", options->tables,
                   "measured GEMM CSV (DeepBench columns); repeat to fit several tables")
      ->required()
      ->check(CLI::ExistingFile);
  gemm->add_option("--device", options->device,
                   "the GPU the table was measured on: device file or name in configs/devices")
      ->required();
  gemm->add_option("--dtype", options->dtype,
                   "the table's dtype: fp16 (default), bf16, tf32, fp32, fp8");
  gemm->add_option("--cv", options->folds,
                   "K-fold cross-validation of the fit (default 5; 0 or 1: none)")
      ->check(CLI::Range(0, 100));
  registry.add(gemm, RankScope::kRankZeroOnly,
               [options](const CommandContext&) { return run_calibrate_gemm(*options); });
  add_calibrate_conv_subcommand(*calibrate, registry);
}

}  // namespace perfsim::cli

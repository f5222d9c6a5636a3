// perfsim calibrate conv: fits the convolution model's efficiency parameters to a measured
// convolution table on one device; reports the plain roofline, the model with its nominal
// parameters, the fit in sample and out of sample (K-fold by shape), the out-of-sample error
// per shape class and pass, and prints the device-file entry that carries the fit.
#include "mpi_sim/cli/calibrate_conv_command.hpp"

#include <iomanip>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "kernels/conv_efficiency_fit.hpp"
#include "mpi_sim/cli/prediction_errors_line.hpp"
#include "perfsim/error.hpp"
#include "scenario/device_argument.hpp"

namespace perfsim::cli {
namespace {

struct CalibrateConvOptions {
  std::string table;
  std::string device;
  std::string dtype = "fp32";
  int folds = 5;
};

void print_conv_errors(const std::string& label, const kernels::ConvPredictionErrors& errors) {
  print_prediction_errors(label, errors, 52, 9, "passes");
}

std::string describe(const kernels::ConvEfficiencyParameters& parameters) {
  std::ostringstream out;
  out << "peak " << parameters.peak_fraction << ", depth " << parameters.pipeline_depth_k
      << ", latency " << parameters.fixed_latency_us << " us, fast "
      << parameters.fast_algorithm_flop_fraction << ", split " << parameters.max_split_k;
  return out.str();
}

nlohmann::ordered_json device_file_entry(const kernels::ConvEfficiencyParameters& fitted,
                                         const std::string& source) {
  auto figure = [&](double value) {
    return nlohmann::ordered_json{{"value", value}, {"provenance", "measured"}, {"source", source}};
  };
  nlohmann::ordered_json entry{{"peak_fraction", figure(fitted.peak_fraction)},
                               {"pipeline_depth_k", figure(fitted.pipeline_depth_k)}};
  // A device file's figures are positive; a zero latency is the default and stays unwritten.
  if (fitted.fixed_latency_us > 0)
    entry["fixed_latency_us"] = figure(fitted.fixed_latency_us);
  entry["fast_algorithm_flop_fraction"] = figure(fitted.fast_algorithm_flop_fraction);
  entry["max_split_k"] = figure(fitted.max_split_k);
  return entry;
}

int run_calibrate_conv(const CalibrateConvOptions& options) {
  const std::optional<DType> dtype = parse_dtype(options.dtype);
  if (!dtype ||
      (*dtype != DType::kFloat16 && *dtype != DType::kBFloat16 && *dtype != DType::kFloat32))
    throw InputError("--dtype", "", "must be fp16, bf16 or fp32, got " + options.dtype);
  const devices::DeviceSpec device = scenario::read_device_argument(options.device);
  const auto table = kernels::read_deepbench_conv_table(options.table, *dtype);
  const bool tensor_core = device.gemm_unit(*dtype) == devices::MathUnit::kTensorCore;
  std::set<std::size_t> shapes;
  for (const kernels::MeasuredConv& row : table)
    shapes.insert(row.shape_row);
  std::cout << "convolution model on " << device.name << " ("
            << (tensor_core ? "tensor cores" : "CUDA cores") << ", " << options.dtype
            << "), measured table " << options.table << " (" << shapes.size() << " shapes, "
            << table.size() << " passes)\n";
  const kernels::ConvEfficiencyParameters file_parameters =
      kernels::conv_efficiency_for(device, *dtype);
  print_conv_errors(
      "plain roofline max(flops/peak, bytes/HBM)",
      kernels::conv_prediction_errors(table, kernels::roofline_conv_table(table, device)));
  kernels::ConvEfficiencyParameters nominal = file_parameters;
  if (file_parameters.fitted) {  // what a device without a conv table gets
    devices::DeviceSpec without_fit = device;
    without_fit.conv_efficiency.clear();
    nominal = kernels::conv_efficiency_for(without_fit, *dtype);
    print_conv_errors("implicit GEMM, nominal parameters",
                      kernels::conv_prediction_errors(
                          table, kernels::predict_conv_table(table, without_fit, nominal)));
    std::cout << "    (nominal: " << describe(nominal) << ")\n";
  }
  print_conv_errors(std::string("implicit GEMM, device file (") +
                        (file_parameters.fitted ? "fitted" : "nominal") + ")",
                    kernels::conv_prediction_errors(
                        table, kernels::predict_conv_table(table, device, file_parameters)));
  const kernels::ConvEfficiencyParameters fitted = kernels::fit_conv_efficiency(table, device);
  const std::vector<double> in_sample = kernels::predict_conv_table(table, device, fitted);
  print_conv_errors("fitted on every row (IN SAMPLE)",
                    kernels::conv_prediction_errors(table, in_sample));
  if (options.folds > 1) {
    const std::vector<double> held =
        kernels::cross_validated_conv_predictions(table, device, options.folds);
    print_conv_errors(std::to_string(options.folds) + "-fold CV by shape (OUT OF SAMPLE)",
                      kernels::conv_prediction_errors(table, held));
    std::cout << "per shape class and pass, OUT OF SAMPLE:\n";
    std::set<std::string> classes;
    for (const kernels::MeasuredConv& row : table)
      classes.insert(kernels::conv_shape_class(row.work.shape));
    for (const std::string& shape_class : classes) {
      for (kernels::ConvPass pass : {kernels::ConvPass::kForward, kernels::ConvPass::kBackwardData,
                                     kernels::ConvPass::kBackwardFilter}) {
        const auto errors =
            kernels::conv_prediction_errors(table, held, [&](const kernels::MeasuredConv& row) {
              return row.work.pass == pass &&
                     kernels::conv_shape_class(row.work.shape) == shape_class;
            });
        if (errors.count > 0)
          print_conv_errors(shape_class + " " + std::string(kernels::conv_pass_name(pass)), errors);
      }
    }
  }
  const std::string source = "fitted by `perfsim calibrate conv --table " + options.table +
                             " --device " + device.name + " --dtype " + options.dtype + "`";
  nlohmann::ordered_json entry;
  entry[tensor_core ? "tensor_core" : "cuda_core"] = device_file_entry(fitted, source);
  std::cout << "fitted: " << describe(fitted) << "\ndevice-file entry (\"conv_efficiency\"):\n"
            << entry.dump(2) << "\n";
  return 0;
}

}  // namespace

void add_calibrate_conv_subcommand(CLI::App& calibrate, CommandRegistry& registry) {
  CLI::App* conv = calibrate.add_subcommand(
      "conv",
      "Fit the convolution model's efficiency parameters to a measured convolution table "
      "(DeepBench CSV) on one device");
  auto options = std::make_shared<CalibrateConvOptions>();
  conv->add_option("--table", options->table, "measured convolution CSV (DeepBench columns)")
      ->required()
      ->check(CLI::ExistingFile);
  conv->add_option("--device", options->device,
                   "the GPU the table was measured on: device file or name in configs/devices")
      ->required();
  conv->add_option("--dtype", options->dtype, "the table's dtype: fp32 (default), fp16, bf16");
  conv->add_option("--folds,--cv", options->folds,
                   "K-fold cross-validation by shape (default 5; 0 or 1: none)")
      ->check(CLI::Range(0, 100));
  registry.add(conv, RankScope::kRankZeroOnly,
               [options](const CommandContext&) { return run_calibrate_conv(*options); });
}

}  // namespace perfsim::cli

// `perfsim models`: every kernel model with what it needs and where its data came from, the
// device files with the provenance of each figure, and the MLP assets of an assets file.
#include <iomanip>
#include <iostream>
#include <string>
#include <vector>

#include "devices/device_spec.hpp"
#include "kernels/mlp_asset.hpp"
#include "kernels/model_catalog.hpp"
#include "kernels/op_kernel_registry.hpp"
#include "mpi_sim/cli/command_line.hpp"
#include "validation/end_to_end_calibration.hpp"
#include "validation/shipped_calibration.hpp"

namespace perfsim::cli {
namespace {

// Which shipped end-to-end calibration a device's LLM runs take, and whether runs on this device
// (measured) or on another platform (carried over) are behind it.
std::string llm_host_cost_provenance(const devices::DeviceSpec& device) {
  const validation::ShippedCalibration& shipped = validation::shipped_calibration_for(device.name);
  const validation::EndToEndCalibration& calibration = shipped.calibration;
  const bool own = calibration.device == device.name;
  return std::string(own ? "measured" : "carried over") + ": end-to-end fit on " +
         calibration.fitted_on + " (" + std::string(shipped.path) + "; " +
         std::string(shipped.platform) + ")" + (own ? std::string() : "; no runs on this device") +
         " (its per-micro-batch host wait only after a host synchronization, e.g. "
         "--get-batch-sync)";
}

struct ModelsOptions {
  // The shipped device files, found from any working directory as device names are elsewhere
  // (scenario/config_path.hpp).
  std::string device_folder = std::string(PERFSIM_SOURCE_DIR) + "/configs/devices";
  std::string assets;
  bool list_ops = false;
};

void print_figure(const char* name, const devices::Figure& figure) {
  std::cout << "    " << name << " = " << std::setprecision(15) << figure.value << " ("
            << devices::provenance_name(figure.provenance) << ": " << figure.source << ")\n";
}

// Where the figures behind each op class come from on this device: measured data, values
// carried over from another device's data, or vendor specifications and estimates alone.
void print_data_behind(const devices::DeviceSpec& device,
                       const std::vector<std::string>& mlp_devices) {
  auto gemm = [&](devices::MathUnit unit) -> std::string {
    for (const std::string& name : mlp_devices)
      if (name == device.name)
        return "measured (MLP asset trained on this device)";
    auto it = device.gemm_efficiency.find(unit);
    if (it == device.gemm_efficiency.end())
      return "analytical only: vendor peaks, efficiency estimated (no measured GEMM table)";
    const devices::Figure& fraction = it->second.peak_fraction;
    return std::string(fraction.provenance == devices::Provenance::kMeasured ? "measured: "
                                                                             : "carried over: ") +
           fraction.source;
  };
  auto conv = [&](devices::MathUnit unit) -> std::string {
    auto it = device.conv_efficiency.find(unit);
    if (it == device.conv_efficiency.end())
      return "nominal: analytical implicit GEMM with the GEMM efficiency (no measured conv table)";
    return std::string(it->second.peak_fraction.provenance == devices::Provenance::kMeasured
                           ? "fitted: "
                           : "carried over: ") +
           it->second.peak_fraction.source;
  };
  const std::string attention =
      device.attention ? std::string(device.attention->provenance == devices::Provenance::kMeasured
                                         ? "measured: "
                                         : "carried over: ") +
                             device.attention->implementation + ", " + device.attention->source
                       : std::string(
                             "analytical only: the GEMM model on the unmasked work (no measured "
                             "attention table)");
  const std::string fp8_gemm =
      device.fp8_gemm_efficiency
          ? std::string(device.fp8_gemm_efficiency->terms.peak_fraction.provenance ==
                                devices::Provenance::kMeasured
                            ? "measured: "
                            : "carried over: ") +
                device.fp8_gemm_efficiency->terms.peak_fraction.source +
                "; backward (split accumulator) x " +
                std::to_string(device.fp8_gemm_efficiency->split_accumulator_time_factor.value)
                    .substr(0, 4) +
                " (" +
                std::string(devices::provenance_name(
                    device.fp8_gemm_efficiency->split_accumulator_time_factor.provenance)) +
                ": " + device.fp8_gemm_efficiency->split_accumulator_time_factor.source + ")"
          : std::string("analytical only: FP8 estimate (no measured FP8 GEMM table)");
  std::cout << "    measured data behind each op class:\n"
            << "      GEMM, tensor cores     " << gemm(devices::MathUnit::kTensorCore) << "\n"
            << "      GEMM, FP8 tensor cores " << fp8_gemm << "\n"
            << "      GEMM, CUDA cores       " << gemm(devices::MathUnit::kCudaCore) << "\n"
            << "      conv, tensor cores     " << conv(devices::MathUnit::kTensorCore) << "\n"
            << "      conv, CUDA cores       " << conv(devices::MathUnit::kCudaCore) << "\n"
            << "      fused attention        " << attention << "\n"
            << "      batch-norm, pooling    nominal: memory-bound at the "
            << devices::provenance_name(device.hbm_bandwidth_GBps.provenance)
            << " HBM bandwidth (no measured kernel table)\n"
            << "      element-wise, memory   analytical only: roofline at the "
            << devices::provenance_name(device.hbm_bandwidth_GBps.provenance)
            << " HBM bandwidth (no measured kernel table)\n"
            << "      embedding lookups      analytical only: seed 000 heuristic (no measured "
               "table)\n"
            << "      kernel floor           "
            << devices::provenance_name(device.min_kernel_duration_us.provenance) << "\n"
            << "      LLM host costs         " << llm_host_cost_provenance(device) << "\n";
}

int run_models(const ModelsOptions& options) {
  std::cout << "kernel models:\n";
  for (const kernels::ModelDescription& model : kernels::kernel_model_catalog()) {
    std::cout << "  " << model.name << "\n    applies to: " << model.applies_to
              << "\n    needs: " << model.needs << "\n    data: " << model.data_source << "\n";
  }
  std::vector<std::string> mlp_devices;
  if (!options.assets.empty())
    for (const std::string& name : kernels::list_mlp_assets(options.assets))
      mlp_devices.push_back(kernels::read_mlp_asset(options.assets, name).device);
  std::cout << "\ndevices (" << options.device_folder << "):\n";
  for (const devices::DeviceSpec& device : devices::load_device_folder(options.device_folder)) {
    std::cout << "  " << device.name << " [" << device.architecture << "] " << device.file << "\n";
    print_figure("sm_count", device.sm_count);
    print_figure("hbm_bandwidth_GBps", device.hbm_bandwidth_GBps);
    print_figure("l2_size_bytes", device.l2_size_bytes);
    print_figure("l2_bandwidth_GBps", device.l2_bandwidth_GBps);
    print_figure("pcie_bandwidth_GBps", device.pcie_bandwidth_GBps);
    print_figure("min_kernel_duration_us", device.min_kernel_duration_us);
    for (const auto& [dtype, figure] : device.tensor_core_tflops)
      print_figure(("tensor_core_tflops." + std::string(dtype_name(dtype))).c_str(), figure);
    for (const auto& [dtype, figure] : device.cuda_core_tflops)
      print_figure(("cuda_core_tflops." + std::string(dtype_name(dtype))).c_str(), figure);
    print_data_behind(device, mlp_devices);
  }
  if (!options.assets.empty()) {
    std::cout << "\nMLP assets (" << options.assets << "):\n";
    for (const std::string& name : kernels::list_mlp_assets(options.assets)) {
      const kernels::MlpKernelAsset asset = kernels::read_mlp_asset(options.assets, name);
      std::cout << "  mlp:" << name << " kind " << asset.kernel_kind << ", device " << asset.device
                << ", " << asset.features.width() << " features, " << asset.mlp.layers.size()
                << " layers; held-back GMAE " << asset.gmae_pct << "%, MAPE " << asset.mape_pct
                << "%; trained on " << asset.training_source << "\n";
    }
  }
  if (options.list_ops) {
    std::cout << "\nops with a rule:\n";
    for (const std::string& name : kernels::registered_op_names())
      std::cout << "  " << name << "\n";
  }
  return 0;
}

}  // namespace

void add_models_command(CLI::App& app, CommandRegistry& registry) {
  auto options = std::make_shared<ModelsOptions>();
  CLI::App* sub = app.add_subcommand(
      "models", "List the kernel models, what each needs and where its data came from");
  sub->add_option("--devices", options->device_folder, "Folder of device JSON files")
      ->check(CLI::ExistingDirectory);
  sub->add_option("--assets", options->assets, "Model-assets HDF5 file to list (default: none)")
      ->check(CLI::ExistingFile);
  sub->add_flag("--ops", options->list_ops, "Also list every op name the registry knows");
  registry.add(sub, RankScope::kRankZeroOnly,
               [options](const CommandContext&) { return run_models(*options); });
}

}  // namespace perfsim::cli

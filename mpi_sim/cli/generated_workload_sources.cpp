#include "mpi_sim/cli/generated_workload_sources.hpp"

#include <memory>

#include "assets/collective_curve_assets.hpp"
#include "collectives/collective_model.hpp"
#include "generators/llm/nominal_collective_curves.hpp"
#include "kernels/model_duration_source.hpp"

namespace perfsim::cli {

devices::DeviceSpec attach_generated_workload_models(SimulationInputs& inputs,
                                                     GeneratedWorkloadModels models) {
  devices::DeviceSpec device = devices::parse_device_json(models.device_json, models.device_source);
  inputs.kernel_source =
      std::make_unique<kernels::ModelDurationSource>(kernels::KernelPredictor(device));
  collectives::CurveSet curves = models.assets_path.empty()
                                     ? generators::llm::nominal_collective_curves(models.topology)
                                     : assets::read_collective_curves(models.assets_path);
  inputs.comm_source = std::make_unique<collectives::CollectiveModel>(
      models.topology, std::move(curves), std::move(models.groups));
  inputs.notes.push_back("kernels: analytical models on " + device.name + " (" +
                         models.device_source + "); host overheads: " + models.host_overheads);
  inputs.notes.push_back(
      "collectives: " + models.topology.name + " with " +
      (models.assets_path.empty()
           ? std::string("NOMINAL curves (link bandwidth x 0.8, 10/20 us latency; pass --assets "
                         "from `perfsim fit` for fitted curves)")
           : "fitted curves from " + models.assets_path));
  return device;
}

}  // namespace perfsim::cli

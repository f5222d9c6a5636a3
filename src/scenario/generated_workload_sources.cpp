#include "scenario/generated_workload_sources.hpp"

#include <memory>

#include "assets/collective_curve_assets.hpp"
#include "assets/default_collective_curves.hpp"
#include "collectives/collective_model.hpp"
#include "kernels/model_duration_source.hpp"
#include "topology/leaf_spine.hpp"

namespace perfsim::scenario {
namespace {

// The leaf/spine term's provenance (topology/leaf_spine.hpp), appended to the collectives' own.
std::string spine_note(const topology::Topology& topology) {
  const std::string note = topology::leaf_spine_provenance(topology);
  return note.empty() ? note : "; " + note;
}

}  // namespace

devices::DeviceSpec attach_generated_workload_models(SimulationInputs& inputs,
                                                     GeneratedWorkloadModels models) {
  devices::DeviceSpec device = devices::parse_device_json(models.device_json, models.device_source);
  const double gemm_time_scale = models.gemm_time_scale ? models.gemm_time_scale(device) : 1.0;
  inputs.kernel_source = std::make_unique<kernels::ModelDurationSource>(
      kernels::KernelPredictor(device), gemm_time_scale);
  // No assets given: the shipped fitted curves where they cover the topology, else nominal.
  assets::CollectiveCurveChoice curves =
      models.assets_path.empty()
          ? assets::default_collective_curves_for(
                models.topology,
                std::string(PERFSIM_SOURCE_DIR) + "/configs/assets/collective_curves.h5")
          : assets::CollectiveCurveChoice{assets::read_collective_curves(models.assets_path),
                                          "fitted curves from " + models.assets_path, true};
  inputs.comm_source = std::make_unique<collectives::CollectiveModel>(
      models.topology, std::move(curves.curves), std::move(models.groups));
  inputs.notes.push_back("kernels: analytical models on " + device.name + " (" +
                         models.device_source + "); host overheads: " + models.host_overheads);
  inputs.notes.push_back(
      "collectives: " + models.topology.name + ", NCCL algorithm model with " + curves.provenance +
      (curves.fitted ? "" : " (pass --assets from `perfsim fit`)") + spine_note(models.topology));
  return device;
}

}  // namespace perfsim::scenario

#include "mpi_sim/cli/simulation_inputs.hpp"

#include <cstdio>

#include "mpi_sim/engine/measured_durations.hpp"
#include "perfsim/error.hpp"

namespace perfsim::cli {
namespace {

generators::SyntheticWorkload synthetic_workload(const SimulateOptions& options, int world_size) {
  generators::SyntheticWorkload workload = options.synthetic;
  workload.ranks = world_size;
  if (workload.group_size > 0 && workload.group_size != world_size) {
    workload.layout = options.group_layout == "strided" ? generators::GroupLayout::kStrided
                                                        : generators::GroupLayout::kConsecutive;
  } else {
    workload.layout = generators::GroupLayout::kWorld;
  }
  generators::validate(workload);
  return workload;
}

std::string decimal(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.6g", value);
  return buffer;
}

}  // namespace

int simulated_world_size(const SimulateOptions& options, int mpi_size) {
  if (!options.kineto_specs.empty()) {
    throw InputError("--kineto", "", "Kineto input is not wired into simulate yet");
  }
  return options.synthetic.ranks > 0 ? options.synthetic.ranks : mpi_size;
}

SimulationInputs load_simulation_inputs(const SimulateOptions& options, int world_size,
                                        const std::vector<int>& local_ranks) {
  SimulationInputs inputs;
  inputs.kernel_source = std::make_unique<engine::MeasuredKernelDurations>();
  inputs.comm_source = std::make_unique<engine::MeasuredCommDurations>();
  const engine::ProgramSources sources{inputs.kernel_source.get(), inputs.comm_source.get(), {}};

  const generators::SyntheticWorkload workload = synthetic_workload(options, world_size);
  for (int rank : local_ranks) {
    Trace trace = generators::generate_synthetic_rank(workload, rank);
    inputs.programs.push_back(engine::build_rank_program(trace, rank, workload.ranks, sources));
  }
  inputs.overheads.launch.kernel_gap_us = 0;
  inputs.notes.push_back(
      "workload: synthetic, " + std::to_string(workload.ranks) + " ranks x " +
      std::to_string(workload.repetitions) + " x (" + decimal(workload.compute_us) +
      " us compute, " + std::string(collective_name(workload.collective)) + " of " +
      std::to_string(workload.collective_bytes) + " bytes over " +
      (workload.layout == generators::GroupLayout::kWorld
           ? std::string("the world")
           : "groups of " + std::to_string(workload.group_size)) +
      ")");
  inputs.notes.push_back("durations: given by the synthetic workload (collective = " +
                         decimal(generators::synthetic_collective_us(workload)) +
                         " us: latency + bus bytes / bus bandwidth); host overheads: none");
  inputs.attributes["workload"] = "synthetic";
  return inputs;
}

}  // namespace perfsim::cli

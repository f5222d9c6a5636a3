#include "mpi_sim/cli/simulation_inputs.hpp"

#include <cstdio>

#include "io/input_file.hpp"
#include "mpi_sim/cli/llm_simulation.hpp"
#include "mpi_sim/engine/measured_durations.hpp"
#include "overheads/overhead_asset.hpp"
#include "overheads/overhead_extractor.hpp"
#include "perfsim/error.hpp"
#include "trace_io/kineto_loader.hpp"

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

// Every Kineto trace named: a whole archive expands to one trace per rank (ordered by
// distributedInfo.rank); files and archive members are taken in the order given.
std::vector<Trace> load_kineto_traces(const std::vector<std::string>& specs) {
  std::vector<Trace> traces;
  for (const std::string& spec : specs) {
    if (io::is_archive_path(spec)) {
      for (Trace& trace : trace_io::load_kineto_archive(spec)) traces.push_back(std::move(trace));
    } else {
      traces.push_back(trace_io::load_kineto_trace_file(spec));
    }
  }
  for (std::size_t rank = 0; rank < traces.size(); ++rank) {
    if (traces.size() > 1 && traces[rank].rank != static_cast<int>(rank)) {
      throw InputError(traces[rank].source, "distributedInfo.rank",
                       "trace is rank " + std::to_string(traces[rank].rank) + " but is given as "
                       "trace number " + std::to_string(rank) + "; give one trace per rank, in "
                       "rank order");
    }
  }
  return traces;
}

}  // namespace

int simulated_world_size(const SimulateOptions& options, int mpi_size) {
  if (options.llm.requested()) return options.llm.world_size();
  if (!options.kineto_specs.empty()) {
    // Counting needs the files; they are small next to the simulation, and every process
    // needs them all anyway for the shared overhead set.
    return static_cast<int>(load_kineto_traces(options.kineto_specs).size());
  }
  return options.synthetic.ranks > 0 ? options.synthetic.ranks : mpi_size;
}

namespace {

SimulationInputs load_kineto_inputs(const SimulateOptions& options, int world_size,
                                    const std::vector<int>& local_ranks) {
  SimulationInputs inputs;
  inputs.kernel_source = std::make_unique<engine::MeasuredKernelDurations>();
  inputs.comm_source = std::make_unique<engine::MeasuredCommDurations>();
  const engine::ProgramSources sources{inputs.kernel_source.get(), inputs.comm_source.get(), {}};
  std::vector<Trace> traces = load_kineto_traces(options.kineto_specs);
  const bool single_rank = options.single_rank >= 0;
  if (single_rank && options.single_rank >= static_cast<int>(traces.size())) {
    throw InputError("--single-rank", "", "rank " + std::to_string(options.single_rank) +
                                              " is not among the " +
                                              std::to_string(traces.size()) + " traces given");
  }
  // Overheads: one set for every rank (the same on every process, so results do not depend
  // on the process layout), from the asset or extracted from all given traces.
  if (!options.overheads_path.empty()) {
    inputs.overheads = overheads::load_host_overheads(options.overheads_path);
    inputs.notes.push_back("host overheads: " + options.overheads_path);
  } else {
    LaunchParameters extraction;
    if (options.overhead_extraction == "replay") {
      extraction.profiler_cpu_overhead_us = 0;
      extraction.profiler_gpu_overhead_us = 0;
      extraction.remove_iqr_outliers = false;
    }
    std::vector<HostOverheads> sets;
    if (single_rank) {
      sets.push_back(overheads::extract_host_overheads(traces[options.single_rank], extraction));
    } else {
      for (const Trace& trace : traces) {
        sets.push_back(overheads::extract_host_overheads(trace, extraction));
      }
    }
    inputs.overheads = overheads::merge_host_overheads(sets);
    inputs.notes.push_back("host overheads: extracted (" + options.overhead_extraction +
                           ") from the " + std::to_string(sets.size()) +
                           " input trace(s) (T1 mean " +
                           decimal(inputs.overheads.all_ops.t1.mean_us) + " us, T4 mean " +
                           decimal(inputs.overheads.t4_all.mean_us) + " us)");
  }
  // Measured step windows relative to the earliest start among the simulated ranks.
  TimestampUs earliest_start = 0;
  bool any_step = false;
  for (const Trace& trace : traces) {
    if (!trace.measured_step || (single_rank && trace.rank != options.single_rank)) continue;
    earliest_start = any_step ? std::min(earliest_start, trace.measured_step->start_us)
                              : trace.measured_step->start_us;
    any_step = true;
  }
  for (const Trace& trace : traces) {
    if (!trace.measured_step || (single_rank && trace.rank != options.single_rank)) continue;
    const TimestampUs start = trace.measured_step->start_us - earliest_start;
    inputs.measured_steps.push_back(
        {trace.rank, start, start + trace.measured_step->duration_us});
  }
  for (int rank : local_ranks) {
    const int program_world = single_rank ? traces[rank].world_size : world_size;
    engine::RankProgram program =
        engine::build_rank_program(traces[rank], rank, program_world, sources);
    if (options.start_skew == "measured" && traces[rank].measured_step) {
      program.start_us = traces[rank].measured_step->start_us - earliest_start;
    }
    inputs.programs.push_back(std::move(program));
  }
  if (options.start_skew == "measured" && any_step) {
    inputs.notes.push_back(
        "start skew: each rank starts at its measured ProfilerStep start relative to the "
        "earliest rank (--start-skew zero starts all at 0)");
  }
  inputs.notes.insert(inputs.notes.begin(),
                      "workload: " + std::to_string(traces.size()) + " Kineto trace(s), " +
                          (traces.empty() ? std::string() : traces.front().source) +
                          (traces.size() > 1 ? " ..." : ""));
  inputs.notes.push_back(
      "durations: measured (kernels as recorded; each collective takes the minimum over ranks "
      "of its NCCL kernel time)");
  inputs.attributes["workload"] = "kineto";
  inputs.attributes["kernel_durations"] = "measured";
  inputs.attributes["comm_durations"] = "measured";
  std::string sources_list;
  for (const std::string& spec : options.kineto_specs) sources_list += spec + ";";
  inputs.attributes["inputs"] = sources_list;
  return inputs;
}

}  // namespace

SimulationInputs load_simulation_inputs(const SimulateOptions& options, int world_size,
                                        const std::vector<int>& local_ranks) {
  if (!options.kineto_specs.empty()) return load_kineto_inputs(options, world_size, local_ranks);
  if (options.llm.requested())
    return load_llm_inputs(read_llm_scenario(options.llm), local_ranks);
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

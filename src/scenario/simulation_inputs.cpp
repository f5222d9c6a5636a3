#include "scenario/simulation_inputs.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include "assets/collective_curve_assets.hpp"
#include "assets/default_collective_curves.hpp"
#include "collectives/collective_model.hpp"
#include "devices/device_spec.hpp"
#include "io/input_file.hpp"
#include "kernels/mlp_asset.hpp"
#include "kernels/model_duration_source.hpp"
#include "kernels/model_vs_measured.hpp"
#include "mpi_sim/engine/measured_durations.hpp"
#include "mpi_sim/engine/program_sharing.hpp"
#include "mpi_sim/engine/topology_link_sharing.hpp"
#include "overheads/overhead_asset.hpp"
#include "overheads/overhead_extractor.hpp"
#include "perfsim/error.hpp"
#include "scenario/dlrm_simulation.hpp"
#include "scenario/llm_simulation.hpp"
#include "topology/leaf_spine.hpp"
#include "topology/node_resize.hpp"
#include "topology/topology.hpp"
#include "trace_io/content_hash.hpp"
#include "trace_io/execution_trace_loader.hpp"
#include "trace_io/kineto_loader.hpp"
#include "trace_io/trace_format.hpp"
#include "trace_io/trace_ranks.hpp"

namespace perfsim::scenario {
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

// The synthetic workload's collectives are priced by the collective model on --topology
// (with --comm model or no --comm), else take the workload's given durations; options that
// only trace inputs use are refused rather than ignored.
std::optional<topology::Topology> synthetic_topology(const SimulateOptions& options,
                                                     int world_size) {
  const std::string& path = options.llm.topology_path;
  if (options.comm_durations == "model" && path.empty())
    throw InputError("--comm", "model",
                     "the synthetic workload's collective model needs --topology");
  if (options.comm_durations == "measured" && !path.empty())
    throw InputError("--topology", path,
                     "--comm measured keeps the synthetic workload's given collective times; "
                     "drop --topology, or use --comm model");
  if (options.kernel_durations == "model")
    throw InputError("--durations", "model",
                     "the synthetic workload's compute kernels have given times (--compute-us)");
  const TopologySize& size = options.llm.topology_size;
  if (path.empty()) {
    if (size.nodes > 0 || size.gpus_per_node > 0)
      throw InputError("--nodes", "", "--nodes and --gpus-per-node need --topology");
    return std::nullopt;
  }
  topology::Topology topology =
      topology::resized(topology::load_topology(path), size.nodes, size.gpus_per_node);
  if (world_size > topology.world_size())
    throw InputError(path, "nodes",
                     std::to_string(world_size) + " synthetic ranks, the topology has " +
                         std::to_string(topology.world_size()) + " GPUs (--nodes N sizes it)");
  return topology;
}

std::string read_raw_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw InputError(path, "", "cannot open file");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return std::move(bytes).str();
}

std::string decimal(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.6g", value);
  return buffer;
}

std::string source_path(const std::string& relative) {
  return std::string(PERFSIM_SOURCE_DIR) + "/" + relative;
}

// Every process group some trace names (a rank's trace may list only its own groups) plus one
// two-member group per send/recv channel, so that the collective model can route pipeline
// traffic.
std::vector<ProcessGroup> groups_with_point_to_point_channels(const std::vector<Trace>& traces) {
  std::vector<ProcessGroup> groups;
  std::set<std::string> names;
  std::set<std::pair<int, int>> channels;
  for (const Trace& trace : traces) {
    for (const ProcessGroup& group : trace.process_groups) {
      if (names.insert(group.name).second)
        groups.push_back(group);
    }
    for (const Op& op : trace.ops) {
      if (!op.comm || !is_point_to_point(op.comm->kind) || op.comm->peer_rank < 0)
        continue;
      const bool sends = op.comm->kind == CollectiveKind::kSend;
      channels.emplace(sends ? trace.rank : op.comm->peer_rank,
                       sends ? op.comm->peer_rank : trace.rank);
    }
  }
  for (const auto& [from, to] : channels) {
    groups.push_back(
        {point_to_point_group_name(from, to), {std::min(from, to), std::max(from, to)}, "p2p"});
  }
  return groups;
}

// Execution traces (PyTorch ET JSON or Chakra protobuf, by content): a whole archive expands
// to its *.json and *.et members; ranks come from the traces (record_param_comms) or, failing
// that, from the order given.
std::vector<Trace> load_execution_traces(const std::vector<std::string>& specs) {
  std::vector<std::string> members;
  for (const std::string& spec : specs) {
    if (io::is_archive_path(spec) && spec.find(".tar.gz:") == std::string::npos) {
      for (const std::string& member : io::list_archive_members(spec)) {
        if (member.size() > 5 && (member.ends_with(".json") || member.ends_with(".et")) &&
            member.substr(member.find_last_of('/') + 1).rfind("._", 0) != 0) {
          members.push_back(spec + ":" + member);
        }
      }
    } else {
      members.push_back(spec);
    }
  }
  std::vector<Trace> traces;
  for (const std::string& member : members)
    traces.push_back(trace_io::load_execution_trace_any(io::read_input(member)));
  trace_io::order_by_rank(traces);
  return traces;
}

// Every Kineto trace named: a whole archive expands to one trace per rank (ordered by
// distributedInfo.rank); files and archive members are taken in the order given.
std::vector<Trace> load_kineto_traces(const std::vector<std::string>& specs) {
  std::vector<Trace> traces;
  for (const std::string& spec : specs) {
    if (io::is_archive_path(spec)) {
      for (Trace& trace : trace_io::load_kineto_archive(spec))
        traces.push_back(std::move(trace));
    } else {
      traces.push_back(trace_io::load_kineto_trace_file(spec));
    }
  }
  trace_io::order_by_rank(traces);
  return traces;
}

// The traces of the run, ordered by their metadata rank. Every rank of the job must be there
// unless one rank is simulated alone.
std::vector<Trace> load_recorded_traces(const SimulateOptions& options) {
  std::vector<Trace> traces = options.kineto_specs.empty()
                                  ? load_execution_traces(options.et_specs)
                                  : load_kineto_traces(options.kineto_specs);
  if (traces.empty())
    throw InputError("--kineto/--et", "", "no trace given");
  if (options.single_rank >= 0) {
    trace_io::trace_of_rank(traces, options.single_rank);  // throws when absent
  } else {
    trace_io::require_whole_world(
        traces, "give every rank's trace, or --single-rank R to simulate rank R alone");
  }
  return traces;
}

}  // namespace

int simulated_world_size(const SimulateOptions& options, int mpi_size) {
  if (options.llm.requested() && (!options.et_specs.empty() || !options.kineto_specs.empty())) {
    throw InputError("--model", "", "give a model to generate or traces to replay, not both");
  }
  if (options.dlrm.requested()) {
    if (options.llm.requested() || !options.et_specs.empty() || !options.kineto_specs.empty())
      throw InputError("--dlrm", "", "give one workload: --dlrm, --model or traces");
    return read_dlrm_config(options.dlrm).ranks;
  }
  if (options.llm.requested())
    return options.llm.world_size();
  if (!options.et_specs.empty() || !options.kineto_specs.empty()) {
    // Counting needs the files; they are small next to the simulation, and every process
    // needs them all anyway for the shared overhead set.
    return trace_io::rank_coverage(load_recorded_traces(options)).world_size;
  }
  return options.synthetic.ranks > 0 ? options.synthetic.ranks : mpi_size;
}

namespace {

SimulationInputs load_recorded_inputs(const SimulateOptions& options, int world_size,
                                      const std::vector<int>& local_ranks) {
  SimulationInputs inputs;
  const bool from_kineto = !options.kineto_specs.empty();
  std::vector<Trace> traces = load_recorded_traces(options);
  const std::string kernel_durations = options.kernel_durations.empty()
                                           ? (from_kineto ? "measured" : "model")
                                           : options.kernel_durations;
  const std::string comm_durations = options.comm_durations.empty()
                                         ? (from_kineto ? "measured" : "model")
                                         : options.comm_durations;
  // Chakra .et device nodes may carry durations (duration_micros); PyTorch ETs carry none.
  const bool all_chakra = std::all_of(traces.begin(), traces.end(), [](const Trace& trace) {
    return trace.format.starts_with("chakra-et");
  });
  if (!from_kineto && kernel_durations == "measured" && !all_chakra) {
    throw InputError("--durations", "", "execution traces carry no measured durations; use model");
  }
  if (!from_kineto && comm_durations == "measured") {
    throw InputError("--comm", "",
                     "execution traces carry no measured collective times; use model");
  }
  engine::ProgramSources sources;
  if (kernel_durations == "model") {
    std::string device_name = options.llm.device_path;
    if (device_name.empty())
      device_name = traces.front().device_name;
    if (device_name.empty()) {
      throw InputError("--device", "", "the traces name no GPU; give --device (e.g. V100-SXM2)");
    }
    devices::DeviceSpec device =
        device_name.ends_with(".json")
            ? devices::load_device_file(device_name)
            : devices::find_device(source_path("configs/devices"), device_name);
    std::vector<kernels::MlpKernelAsset> mlp_assets;
    if (!options.kernel_assets.empty())
      mlp_assets = kernels::read_all_mlp_assets(options.kernel_assets);
    auto model = std::make_unique<kernels::ModelDurationSource>(
        kernels::KernelPredictor(device, std::move(mlp_assets)));
    const kernels::ModelDurationSource* model_source = model.get();
    sources.expand_kernels = [model_source](const Trace& trace, std::size_t position) {
      std::vector<engine::ExpandedKernel> kernels;
      for (const auto& planned : model_source->expand_kernels(trace.ops[position], trace).kernels)
        kernels.push_back({planned.kernel, planned.predicted_us});
      return kernels;
    };
    if (from_kineto) {
      // How the models compare with what the profiler measured, all ranks together, with the
      // coverage table: the starting point for calibration (seed 001 Table II style).
      kernels::ModelVsMeasured total;
      for (const Trace& trace : traces)
        kernels::accumulate(total, kernels::compare_with_measured(trace, *model_source));
      inputs.notes.push_back("kernel models vs the measured kernels of all " +
                             std::to_string(traces.size()) + " traces (communication excluded):\n" +
                             kernels::format_comparison(total));
    }
    inputs.kernel_source = std::move(model);
    inputs.notes.push_back(
        "kernel durations: models for " + device_name +
        " (analytical GEMM / roofline / embedding heuristic" +
        (options.kernel_assets.empty() ? std::string(", no trained MLP assets")
                                       : ", MLP assets " + options.kernel_assets) +
        "; convolutions " +
        (device.conv_efficiency.empty() ? "nominal (no measured conv table for this GPU)"
                                        : "fitted on measured conv tables") +
        ", batch-norm and pooling nominal)");
  } else {
    inputs.kernel_source = std::make_unique<engine::MeasuredKernelDurations>();
  }
  if (comm_durations == "model") {
    if (options.llm.topology_path.empty()) {
      throw InputError("--topology", "",
                       "the collective model needs a topology file "
                       "(configs/topologies/*.json)");
    }
    const std::string assets = options.llm.assets_path.empty()
                                   ? source_path("configs/assets/collective_curves.h5")
                                   : options.llm.assets_path;
    topology::Topology topology =
        topology::resized(topology::load_topology(options.llm.topology_path),
                          options.llm.topology_size.nodes, options.llm.topology_size.gpus_per_node);
    const std::string spine = topology::leaf_spine_provenance(topology);
    inputs.comm_source = std::make_unique<collectives::CollectiveModel>(
        std::move(topology), assets::read_collective_curves(assets),
        groups_with_point_to_point_channels(traces));
    inputs.notes.push_back("communication: collective model on " + options.llm.topology_path +
                           " with curves " + assets + (spine.empty() ? "" : "; " + spine));
  } else {
    inputs.comm_source = std::make_unique<engine::MeasuredCommDurations>();
  }
  sources.kernels = inputs.kernel_source.get();
  sources.communication = inputs.comm_source.get();
  const bool single_rank = options.single_rank >= 0;
  // Overheads: one set for every rank (the same on every process, so results do not depend
  // on the process layout), from the asset or extracted from all given traces.
  if (!options.overheads_path.empty()) {
    inputs.overheads = overheads::load_host_overheads(options.overheads_path);
    inputs.notes.push_back("host overheads: " + options.overheads_path);
  } else if (!from_kineto) {
    inputs.notes.push_back(
        "host overheads: none (execution traces record no host timing; give --overheads from "
        "`perfsim overheads extract` on a Kineto trace of the same machine)");
  } else {
    LaunchParameters extraction;
    if (options.overhead_extraction == "replay") {
      extraction.profiler_cpu_overhead_us = 0;
      extraction.profiler_gpu_overhead_us = 0;
      extraction.remove_iqr_outliers = false;
    }
    std::vector<HostOverheads> sets;
    if (single_rank) {
      sets.push_back(overheads::extract_host_overheads(
          trace_io::trace_of_rank(traces, options.single_rank), extraction));
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
    if (!trace.measured_step || (single_rank && trace.rank != options.single_rank))
      continue;
    earliest_start = any_step ? std::min(earliest_start, trace.measured_step->start_us)
                              : trace.measured_step->start_us;
    any_step = true;
  }
  for (const Trace& trace : traces) {
    if (!trace.measured_step || (single_rank && trace.rank != options.single_rank))
      continue;
    const TimestampUs start = trace.measured_step->start_us - earliest_start;
    inputs.measured_steps.push_back({trace.rank, start, start + trace.measured_step->duration_us});
  }
  const std::string host_timing =
      !options.host_timing.empty() ? options.host_timing : (from_kineto ? "recorded" : "overheads");
  if (host_timing == "recorded" && !from_kineto)
    throw InputError("--host-timing", "", "execution traces record no host time; use overheads");
  engine::ProgramOptions program_options;
  program_options.replay_recorded_host = host_timing == "recorded";
  inputs.notes.push_back(
      host_timing == "recorded"
          ? "host time: each op's recorded CPU time replayed (blocking calls simulated; "
            "--host-timing overheads uses the T1..T5 means)"
          : "host time: T1..T5 overhead means per op name");
  inputs.attributes["host_timing"] = host_timing;
  for (int rank : local_ranks) {
    const Trace& trace = trace_io::trace_of_rank(traces, rank);
    const int program_world =
        single_rank ? trace_io::rank_coverage({trace}).world_size : world_size;
    engine::RankProgram program =
        engine::build_rank_program(trace, rank, program_world, sources, program_options);
    // A single rank starts at its own step start (0): its durations are from the step start.
    if (options.start_skew == "measured" && trace.measured_step) {
      program.start_us = trace.measured_step->start_us - earliest_start;
    }
    inputs.programs.push_back(std::move(program));
  }
  // Measured durations already hold the sharing the profiled run saw (the engine leaves them).
  if (comm_durations == "model" && options.llm.link_sharing) {
    engine::share_links_by_topology(
        inputs.programs, dynamic_cast<const collectives::CollectiveModel&>(*inputs.comm_source));
    inputs.notes.push_back(
        "collectives: concurrent ones share NIC/NVLink bandwidth (--link-sharing off: each alone)");
  }
  // GPU work launched in earlier iterations (the CPU ran ahead) runs first in the simulated
  // window and is part of every predicted end: say how much there is.
  for (int rank : local_ranks) {
    const Trace& trace = trace_io::trace_of_rank(traces, rank);
    DurationUs queued_us = 0;
    for (const Kernel& kernel : trace.unattributed_kernels)
      queued_us += kernel.measured_duration_us.value_or(0);
    // Worth saying when it is a noticeable part of the step (5%), or when no step is known.
    if (queued_us > 0 &&
        (!trace.measured_step || queued_us > 0.05 * trace.measured_step->duration_us)) {
      inputs.notes.push_back(
          "note: rank " + std::to_string(rank) + " starts with " + decimal(queued_us) +
          " us of GPU work queued before the trace (launched in earlier "
          "iterations: the CPU ran ahead of the GPU); predicted ends include it");
    }
  }
  engine::ProgramCoverage coverage;
  for (const engine::RankProgram& program : inputs.programs) {
    coverage.collectives += program.coverage.collectives;
    coverage.collectives_without_size += program.coverage.collectives_without_size;
    coverage.comm_kernels_without_collective += program.coverage.comm_kernels_without_collective;
    coverage.collectives_of_unlisted_groups += program.coverage.collectives_of_unlisted_groups;
  }
  inputs.notes.push_back(
      "coverage (ranks of this process): " + std::to_string(coverage.collectives) +
      " collectives, " + std::to_string(coverage.collectives_without_size) +
      " of them unsized by the trace (0 bytes), " +
      std::to_string(coverage.comm_kernels_without_collective) +
      " NCCL kernels no collective record names (run for their measured time)" +
      (coverage.collectives_of_unlisted_groups == 0
           ? std::string()
           : "; WARNING: " + std::to_string(coverage.collectives_of_unlisted_groups) +
                 " collectives of groups smaller than the world list no members and run over "
                 "the whole world"));
  if (options.start_skew == "measured" && any_step) {
    inputs.notes.push_back(
        "start skew: each rank starts at its measured ProfilerStep start relative to the "
        "earliest rank (--start-skew zero starts all at 0)");
  }
  inputs.notes.insert(inputs.notes.begin(),
                      "workload: " + std::to_string(traces.size()) +
                          (from_kineto ? " Kineto" : " execution") + " trace(s), " +
                          (traces.empty() ? std::string() : traces.front().source) +
                          (traces.size() > 1 ? " ..." : ""));
  if (kernel_durations == "measured") {
    inputs.notes.push_back("kernel durations: measured (as recorded)");
  }
  if (comm_durations == "measured") {
    inputs.notes.push_back(
        "communication: measured (each collective takes the minimum over ranks of its NCCL "
        "kernel time)");
  }
  inputs.attributes["workload"] = from_kineto ? "kineto" : "execution-trace";
  inputs.attributes["kernel_durations"] = kernel_durations;
  inputs.attributes["comm_durations"] = comm_durations;
  std::string sources_list;
  std::string hashes;
  for (const std::string& spec : from_kineto ? options.kineto_specs : options.et_specs) {
    sources_list += spec + ";";
    // The file itself (an archive member is hashed with its whole archive).
    const std::size_t member = spec.find(".tar.gz:");
    const std::string file = member == std::string::npos ? spec : spec.substr(0, member + 7);
    hashes += spec + "=" + trace_io::hash_hex(trace_io::hash_bytes(read_raw_file(file))) + ";";
  }
  inputs.attributes["inputs"] = sources_list;
  inputs.attributes["input_hashes"] = hashes;
  return inputs;
}

}  // namespace

SimulationInputs load_simulation_inputs(const SimulateOptions& options, int world_size,
                                        const std::vector<int>& local_ranks) {
  if (options.dlrm.requested())
    return load_dlrm_inputs(read_dlrm_scenario(options.dlrm, options.llm), local_ranks,
                            options.overheads_path);
  if (options.llm.requested())
    return load_llm_inputs(read_llm_scenario(options.llm), local_ranks);
  if (!options.kineto_specs.empty() || !options.et_specs.empty()) {
    if (!options.kineto_specs.empty() && !options.et_specs.empty()) {
      throw InputError("--kineto/--et", "", "give Kineto traces or execution traces, not both");
    }
    return load_recorded_inputs(options, world_size, local_ranks);
  }
  SimulationInputs inputs;
  inputs.kernel_source = std::make_unique<engine::MeasuredKernelDurations>();
  const generators::SyntheticWorkload workload = synthetic_workload(options, world_size);
  const std::optional<topology::Topology> topology = synthetic_topology(options, world_size);
  if (topology) {
    // Traces are generated again below, one at a time: holding every rank's trace at once
    // cost more than the programs (engine/program_sharing.hpp).
    std::vector<ProcessGroup> groups;
    std::set<std::string> seen;
    for (int rank : local_ranks) {
      for (ProcessGroup& group :
           generators::generate_synthetic_rank(workload, rank).process_groups) {
        if (seen.insert(group.name).second)
          groups.push_back(std::move(group));
      }
    }
    assets::CollectiveCurveChoice curves =
        options.llm.assets_path.empty()
            ? assets::default_collective_curves_for(
                  *topology, source_path("configs/assets/collective_curves.h5"))
            : assets::CollectiveCurveChoice{assets::read_collective_curves(options.llm.assets_path),
                                            "fitted curves from " + options.llm.assets_path, true};
    inputs.comm_source = std::make_unique<collectives::CollectiveModel>(
        *topology, std::move(curves.curves), std::move(groups));
    inputs.notes.push_back(
        "communication: collective model on " + topology->name + " (" +
        std::to_string(topology->nodes) + " x " + std::to_string(topology->node.gpus) +
        " GPUs) with " + curves.provenance +
        (topology::spine_can_bind(*topology) ? "; " + topology::leaf_spine_provenance(*topology)
                                             : ""));
  } else {
    inputs.comm_source = std::make_unique<engine::MeasuredCommDurations>();
  }
  const engine::ProgramSources sources{inputs.kernel_source.get(), inputs.comm_source.get(), {}};
  engine::ProgramSharing sharing;  // every rank runs the same ops on its own group
  for (int rank : local_ranks) {
    inputs.programs.push_back(sharing.share(engine::build_rank_program(
        generators::generate_synthetic_rank(workload, rank), rank, workload.ranks, sources)));
  }
  inputs.overheads.launch.kernel_gap_us = 0;
  inputs.notes.push_back("workload: synthetic, " + std::to_string(workload.ranks) + " ranks x " +
                         std::to_string(workload.repetitions) + " x (" +
                         decimal(workload.compute_us) + " us compute, " +
                         std::string(collective_name(workload.collective)) + " of " +
                         std::to_string(workload.collective_bytes) + " bytes over " +
                         (workload.layout == generators::GroupLayout::kWorld
                              ? std::string("the world")
                              : "groups of " + std::to_string(workload.group_size)) +
                         ")");
  inputs.notes.push_back(
      topology ? std::string("durations: compute given by the synthetic workload, collectives "
                             "from the collective model; host overheads: none")
               : "durations: given by the synthetic workload (collective = " +
                     decimal(generators::synthetic_collective_us(workload)) +
                     " us: latency + bus bytes / bus bandwidth); host overheads: none");
  inputs.attributes["workload"] = "synthetic";
  return inputs;
}

}  // namespace perfsim::scenario

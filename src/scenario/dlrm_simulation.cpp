#include "scenario/dlrm_simulation.hpp"

#include <algorithm>
#include <cstdio>

#include "assets/collective_curve_assets.hpp"
#include "collectives/collective_model.hpp"
#include "devices/device_spec.hpp"
#include "generators/dlrm/dlrm_rank_generator.hpp"
#include "io/input_file.hpp"
#include "kernels/model_duration_source.hpp"
#include "mpi_sim/engine/in_process_clock_sync.hpp"
#include "mpi_sim/engine/local_scheduler.hpp"
#include "mpi_sim/engine/rank_simulator.hpp"
#include "mpi_sim/engine/topology_link_sharing.hpp"
#include "overheads/overhead_asset.hpp"
#include "perfsim/error.hpp"
#include "scenario/generated_workload_sources.hpp"
#include "topology/node_resize.hpp"

namespace perfsim::scenario {
namespace {

namespace dlrm = generators::dlrm;

std::string describe_workload(const DlrmScenario& scenario) {
  const dlrm::DlrmConfig& config = scenario.config;
  return "DLRM " + config.name + ": " + std::to_string(config.ranks) + " GPUs, " +
         std::to_string(config.tables.size()) + " tables (dim " +
         std::to_string(config.embedding_dim()) + "), batch " +
         std::to_string(config.batch_per_gpu) + " per GPU (global " +
         std::to_string(config.global_batch()) + "), sharder " +
         std::string(dlrm::sharder_name(scenario.plan.sharder));
}

}  // namespace

dlrm::DlrmConfig read_dlrm_config(const DlrmSimulateOptions& options) {
  dlrm::DlrmOverrides overrides;
  overrides.batch_per_gpu = options.batch_per_gpu;
  overrides.ranks = options.ranks;
  overrides.tables = options.tables;
  overrides.seed = options.seed;
  overrides.memory_cap_GB = options.memory_cap_GB;
  if (!options.pooling.empty())
    overrides.pooling = options.pooling == "dlrm-2021" ? dlrm::PoolingProfile::kDlrm2021
                                                       : dlrm::PoolingProfile::kDlrm2022;
  if (options.heavy_only)
    overrides.heavy_only = true;
  return dlrm::apply_overrides(dlrm::load_dlrm_config(options.config_path), overrides);
}

DlrmScenario read_dlrm_scenario(const DlrmSimulateOptions& options,
                                const LlmSimulateOptions& shared) {
  if (shared.topology_path.empty())
    throw InputError("--topology", "", "--dlrm needs a topology file");
  if (shared.device_path.empty())
    throw InputError("--device", "", "--dlrm needs a device file");
  const std::optional<dlrm::Sharder> sharder = dlrm::parse_sharder(options.sharder);
  if (!sharder)
    throw InputError("--sharder", "", "unknown sharder '" + options.sharder + "'");
  dlrm::DlrmConfig config = read_dlrm_config(options);
  std::string device_json = io::read_file_decompressed(shared.device_path);
  if (!config.memory_cap_bytes) {
    // Seed 001 Sec. V-B1 keeps each rank's tables under 80% of the GPU's memory.
    const devices::DeviceSpec device = devices::parse_device_json(device_json, shared.device_path);
    config.memory_cap_bytes = static_cast<Bytes>(0.8 * device.hbm_capacity_bytes.value);
  }
  dlrm::ShardingOptions sharding{config.ranks, config.dtype, *config.memory_cap_bytes, config.seed};
  dlrm::ShardingPlan plan = dlrm::shard_tables(config.tables, *sharder, sharding, config.file);
  return {std::move(config),
          std::move(plan),
          topology::resized(topology::load_topology(shared.topology_path),
                            shared.topology_size.nodes, shared.topology_size.gpus_per_node),
          std::move(device_json),
          shared.device_path,
          shared.assets_path,
          shared.link_sharing};
}

SimulationInputs load_dlrm_inputs(const DlrmScenario& scenario, const std::vector<int>& local_ranks,
                                  const std::string& overheads_path) {
  const dlrm::DlrmConfig& config = scenario.config;
  if (config.ranks > scenario.topology.world_size()) {
    throw InputError(scenario.topology.source, "nodes",
                     "the DLRM runs on " + std::to_string(config.ranks) +
                         " GPUs, the topology has " +
                         std::to_string(scenario.topology.world_size()));
  }
  SimulationInputs inputs;
  inputs.notes.push_back("workload: generated DLRM " + config.name + " (" + config.file +
                         "), sharder " + std::string(dlrm::sharder_name(scenario.plan.sharder)));
  attach_generated_workload_models(inputs, {scenario.topology,
                                            scenario.device_json,
                                            scenario.device_source,
                                            scenario.assets_path,
                                            {},
                                            overheads_path.empty() ? "none" : overheads_path,
                                            {}});
  const engine::ProgramSources sources{inputs.kernel_source.get(), inputs.comm_source.get(), {}};
  for (int rank : local_ranks) {
    const Trace trace = dlrm::generate_dlrm_rank(config, scenario.plan, rank);
    inputs.programs.push_back(engine::build_rank_program(trace, rank, config.ranks, sources));
  }
  if (scenario.link_sharing) {
    engine::share_links_by_topology(
        inputs.programs, dynamic_cast<const collectives::CollectiveModel&>(*inputs.comm_source));
    inputs.notes.push_back(
        "collectives: concurrent ones share NIC/NVLink bandwidth (--link-sharing off: each alone)");
  }
  // Generated traces have no profile to take host overheads from: none, unless an asset
  // extracted from a profiled run is given.
  if (overheads_path.empty())
    inputs.overheads.launch.kernel_gap_us = 1.0;
  else
    inputs.overheads = overheads::load_host_overheads(overheads_path);
  inputs.attributes["workload"] = "dlrm";
  inputs.attributes["model"] = config.name;
  inputs.attributes["sharder"] = std::string(dlrm::sharder_name(scenario.plan.sharder));
  inputs.attributes["batch_per_gpu"] = std::to_string(config.batch_per_gpu);
  inputs.attributes["tables"] = std::to_string(config.tables.size());
  inputs.attributes["ranks"] = std::to_string(config.ranks);
  inputs.attributes["seed"] = std::to_string(config.seed);
  inputs.complete_report = [scenario](std::span<const RankResult>, report::RunReport& report) {
    report.workload = describe_workload(scenario);
  };
  // Per-rank table load: one row per GPU, so on request only.
  inputs.detail_sections["workload"] = [scenario](std::span<const RankResult> results) {
    return "table load per rank:\n" + format_rank_load(scenario, results);
  };
  return inputs;
}

std::vector<RankResult> simulate_dlrm_in_process(const DlrmScenario& scenario) {
  std::vector<int> ranks(static_cast<std::size_t>(scenario.config.ranks));
  for (int rank = 0; rank < scenario.config.ranks; ++rank)
    ranks[static_cast<std::size_t>(rank)] = rank;
  SimulationInputs inputs = load_dlrm_inputs(scenario, ranks);
  engine::InProcessClockSync sync;
  return engine::simulate_programs(inputs.programs, inputs.overheads, sync);
}

std::string format_rank_load(const DlrmScenario& scenario, std::span<const RankResult> results) {
  const dlrm::DlrmConfig& config = scenario.config;
  const dlrm::ShardingPlan& plan = scenario.plan;
  char line[256];
  std::snprintf(line, sizeof(line), "  %4s %6s %10s %12s %10s %10s %10s\n", "rank", "tables", "GB",
                "lookups", "emb_ms", "a2a_ms", "iter_ms");
  std::string out = line;
  for (int rank = 0; rank < config.ranks; ++rank) {
    std::int64_t lookups = 0;
    for (int t : plan.tables_of_rank[rank])
      lookups += dlrm::table_lookups(config.tables[t], config.global_batch());
    const auto result = std::find_if(results.begin(), results.end(),
                                     [rank](const RankResult& r) { return r.sim_rank == rank; });
    std::snprintf(
        line, sizeof(line), "  %4d %6zu %10.3f %12lld", rank, plan.tables_of_rank[rank].size(),
        static_cast<double>(plan.bytes_of_rank[rank]) / 1e9, static_cast<long long>(lookups));
    out += line;
    if (result == results.end()) {
      // Not simulated here (a single-rank run): its load is known, its times are not.
      std::snprintf(line, sizeof(line), " %10s %10s %10s\n", "-", "-", "-");
    } else {
      double a2a_ms = 0;
      for (const StreamBreakdown& stream : result->streams) {
        if (stream.stream == dlrm::kAllToAllStream)
          a2a_ms = stream.busy_us / 1000;
      }
      std::snprintf(
          line, sizeof(line), " %10.3f %10.3f %10.3f\n",
          result->by_category_us[static_cast<std::size_t>(KernelCategory::kEmbeddingLookup)] / 1000,
          a2a_ms, result->iteration_us / 1000);
    }
    out += line;
  }
  return out;
}

}  // namespace perfsim::scenario

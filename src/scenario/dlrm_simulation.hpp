#pragma once
// The DLRM branch of `perfsim simulate` and the engine of `perfsim shard`: a DLRM config and a
// sharding plan become per-rank generated traces, priced by the kernel models and the
// collective model; the report shows per-rank embedding load next to the iteration time.
#include <string>
#include <vector>

#include "generators/dlrm/dlrm_config.hpp"
#include "generators/dlrm/dlrm_sharders.hpp"
#include "scenario/dlrm_simulate_options.hpp"
#include "scenario/llm_simulate_options.hpp"
#include "scenario/simulation_inputs.hpp"
#include "topology/topology.hpp"

namespace perfsim::scenario {

// Everything the DLRM branch needs, already read and sharded.
struct DlrmScenario {
  generators::dlrm::DlrmConfig config;
  generators::dlrm::ShardingPlan plan;
  topology::Topology topology;
  std::string device_json;
  std::string device_source;
  std::string assets_path;  // "" = shipped fitted curves where they cover, else nominal
  // Concurrent collectives share the links they use (mpi_sim/engine/link_occupancy.hpp): the
  // all-to-alls of the embeddings beside the DDP all-reduces, as in LLM runs.
  bool link_sharing = true;
};

// The config with the command line's overrides applied (no topology or device needed).
generators::dlrm::DlrmConfig read_dlrm_config(const DlrmSimulateOptions& options);

// `shared` gives --topology, --device and --assets. Throws InputError for a missing file,
// an unknown sharder or a plan that does not fit the memory cap.
DlrmScenario read_dlrm_scenario(const DlrmSimulateOptions& options,
                                const LlmSimulateOptions& shared);

// `overheads_path`: a host-overhead asset (`perfsim overheads extract`) applied to the
// generated ops by name; "" = no host overheads.
SimulationInputs load_dlrm_inputs(const DlrmScenario& scenario, const std::vector<int>& local_ranks,
                                  const std::string& overheads_path = "");

// Every rank in this process with the in-process clock sync (for `perfsim shard`).
std::vector<RankResult> simulate_dlrm_in_process(const DlrmScenario& scenario);

// Per-rank embedding load of a plan, with the predicted embedding (lookup + backward) time
// when results are given: one line per rank.
std::string format_rank_load(const DlrmScenario& scenario, std::span<const RankResult> results);

}  // namespace perfsim::scenario

#include "mpi_sim/cli/folded_simulate_run.hpp"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>

#include "mpi_sim/cli/folded_simulation.hpp"
#include "mpi_sim/cli/plan_simulation.hpp"
#include "mpi_sim/mpi/process_packing.hpp"
#include "mpi_sim/mpi/text_exchange.hpp"

namespace perfsim::cli {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Why this run cannot fold at all, before anything is generated; "" when it may.
std::string not_foldable(const SimulateOptions& options) {
  if (!options.kineto_specs.empty() || !options.et_specs.empty())
    return "trace-driven run: each rank's program comes from its own trace";
  if (options.dlrm.requested())
    return "DLRM workload: only generated LLM workloads fold";
  if (!options.llm.requested())
    return "synthetic workload: only generated LLM workloads fold";
  return "";
}

}  // namespace

bool run_folded_simulation(const SimulateOptions& options, const CommandContext& context,
                           const FoldedReport& report,
                           const std::function<void(const RankResult&)>& timeline_sink) {
  if (options.fold == "none")
    return false;
  const bool root = context.mpi_rank == 0;
  const bool status_lines = root && !options.quiet;
  if (const std::string reason = not_foldable(options); !reason.empty()) {
    if (status_lines && options.fold == "auto")
      std::cerr << "perfsim: fold: off (" << reason << ")\n";
    return false;
  }
  const auto start = Clock::now();
  const LlmScenario scenario = read_llm_scenario(options.llm);
  const std::vector<int> representative_of = stage_representative_of(scenario.parallel);
  const std::vector<int> representatives = pipeline_representatives(scenario.parallel);
  if (status_lines)
    std::cerr << "perfsim: fold: proving " << scenario.parallel.world_size() << " ranks against "
              << representatives.size()
              << " pipeline-stage representatives (every rank's program is generated and "
                 "compared; --fold none simulates every rank instead)\n";
  SimulationInputs inputs = load_llm_inputs(scenario, representatives);
  // Strided shares: every process gets ranks of every stage.
  std::vector<int> mine;
  for (int rank = context.mpi_rank; rank < scenario.parallel.world_size(); rank += context.mpi_size)
    mine.push_back(rank);
  const FoldProof local = prove_ranks(scenario, inputs, representative_of, mine);
  const std::string gathered = mpi::gather_text(
      MPI_COMM_WORLD, engine::serialize_renamings(local.renamings, local.differences));
  FoldProof proof;
  std::string refusal;
  if (root) {
    engine::deserialize_renamings(gathered, proof.renamings, proof.differences);
    std::sort(proof.renamings.begin(), proof.renamings.end(),
              [](const engine::GroupRenaming& a, const engine::GroupRenaming& b) {
                return a.rank < b.rank;
              });
    refusal = fold_refusal(proof, representative_of).value_or("");
  }
  refusal = mpi::broadcast_text_from_root(MPI_COMM_WORLD, refusal);
  if (!refusal.empty()) {
    if (status_lines)
      std::cerr << "perfsim: fold: off (" << refusal << "); simulating every rank\n";
    return false;
  }
  if (root) {
    const double proof_s = seconds_since(start);
    const auto simulation_start = Clock::now();
    const std::vector<RankResult> results = simulate_folded(
        inputs, representative_of, proof.renamings, !options.timeline_path.empty(), timeline_sink);
    std::size_t held_ops = 0;
    for (const engine::RankProgram& program : inputs.programs)
      held_ops += program.ops.size();
    char line[240];
    std::snprintf(line, sizeof(line),
                  "perfsim: fold: %zu representatives for %d ranks (%zu ops held); proof %.3f s "
                  "on %d processes, simulation %.3f s\n",
                  representatives.size(), scenario.parallel.world_size(), held_ops, proof_s,
                  context.mpi_size, seconds_since(simulation_start));
    if (status_lines)
      std::cerr << line;
    inputs.notes.push_back(fold_note(representatives.size(), scenario.parallel.world_size()));
    report(inputs, results);
  }
  // The others wait without spinning while process 0 simulates and reports.
  mpi::quiet_barrier(MPI_COMM_WORLD);
  return true;
}

}  // namespace perfsim::cli

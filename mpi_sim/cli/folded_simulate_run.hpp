#pragma once
// The MPI side of `perfsim simulate --fold`: every process proves its share of the ranks
// (folded_simulation.hpp), process 0 gathers the proofs, decides, and simulates the
// representatives while the others wait quietly.
#include <functional>
#include <span>

#include "mpi_sim/cli/command_line.hpp"
#include "scenario/simulation_inputs.hpp"

namespace perfsim::cli {

using FoldedReport =
    std::function<void(const scenario::SimulationInputs&, std::span<const RankResult>)>;

// True when the run was folded (process 0 called `report` with every rank's result); false
// when it must simulate every rank (process 0 has said why, unless folding was not asked for).
// Process 0 hands each rank's timeline to `timeline_sink` (when set) before the report.
bool run_folded_simulation(const scenario::SimulateOptions& options, const CommandContext& context,
                           const FoldedReport& report,
                           const std::function<void(const RankResult&)>& timeline_sink = {});

}  // namespace perfsim::cli

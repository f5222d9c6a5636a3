#pragma once
// `perfsim simulate --model ... --fold auto`: one representative per pipeline stage is
// simulated; every other rank is first proven to run its stage representative's program up
// to a renaming of process groups (mpi_sim/engine/rank_folding.hpp), and its result is the
// representative's under its own group names. Where the proof fails (a topology that places
// congruent groups differently, a generator that breaks the symmetry) the run falls back to
// simulating every rank and says why.
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "generators/llm/llm_parallel_config.hpp"
#include "mpi_sim/cli/llm_simulation.hpp"
#include "mpi_sim/cli/simulation_inputs.hpp"
#include "mpi_sim/engine/rank_folding.hpp"

namespace perfsim::cli {

// The class of every rank: the (tp 0, cp 0, dp 0) rank of its pipeline stage.
std::vector<int> stage_representative_of(const generators::llm::ParallelConfig& parallel);

// Generates and compares the programs of `ranks` with their representatives' (whose
// programs `representatives` holds, in rank order), one rank at a time.
struct FoldProof {
  std::vector<engine::GroupRenaming> renamings;
  std::vector<std::pair<int, std::string>> differences;
};
FoldProof prove_ranks(const LlmScenario& scenario, const SimulationInputs& representatives,
                      std::span<const int> representative_of, std::span<const int> ranks);

// Why folding is not exact for these proofs (renamings of every rank), or nothing.
std::optional<std::string> fold_refusal(const FoldProof& proof,
                                        std::span<const int> representative_of);

// Simulates the representatives with FoldedClockSync and expands to every rank (rank order).
// With `timeline_sink`, each rank's expanded timeline goes there as it is made and the results
// keep none, so the timelines of all ranks are never held at once.
std::vector<RankResult> simulate_folded(
    const SimulationInputs& representatives, std::span<const int> representative_of,
    std::span<const engine::GroupRenaming> renamings, bool record_timeline,
    const std::function<void(const RankResult&)>& timeline_sink = {});

// All of the above in this process (tests, and the fold with one MPI process).
struct FoldedRun {
  std::optional<std::string> refusal;  // set: not folded, results empty
  SimulationInputs inputs;             // the representatives'
  std::vector<RankResult> results;     // every rank
  std::size_t representatives = 0;
};
FoldedRun fold_in_process(const LlmScenario& scenario, bool record_timeline);

// The "fold: ..." line of the notes.
std::string fold_note(std::size_t representatives, int world_size);

}  // namespace perfsim::cli

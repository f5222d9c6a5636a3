#include "mpi_sim/cli/folded_simulation.hpp"

#include <algorithm>

#include "generators/llm/llm_rank_generator.hpp"
#include "mpi_sim/cli/plan_simulation.hpp"
#include "mpi_sim/engine/folded_clock_sync.hpp"
#include "mpi_sim/engine/local_scheduler.hpp"

namespace perfsim::cli {

namespace llm = generators::llm;

std::vector<int> stage_representative_of(const llm::ParallelConfig& parallel) {
  std::vector<int> representative_of(static_cast<std::size_t>(parallel.world_size()));
  for (int rank = 0; rank < parallel.world_size(); ++rank) {
    const int stage = llm::coordinates_of(parallel, rank).pp;
    representative_of[static_cast<std::size_t>(rank)] = llm::rank_of(parallel, {0, 0, stage, 0});
  }
  return representative_of;
}

FoldProof prove_ranks(const LlmScenario& scenario, const SimulationInputs& representatives,
                      std::span<const int> representative_of, std::span<const int> ranks) {
  FoldProof proof;
  const engine::ProgramSources sources{
      representatives.kernel_source.get(), representatives.comm_source.get(), {}};
  const int world_size = scenario.parallel.world_size();
  auto program_of = [&](int representative) -> const engine::RankProgram& {
    const auto found = std::find_if(
        representatives.programs.begin(), representatives.programs.end(),
        [&](const engine::RankProgram& program) { return program.sim_rank == representative; });
    return *found;
  };
  for (int rank : ranks) {
    const int representative = representative_of[static_cast<std::size_t>(rank)];
    if (representative == rank) {
      proof.renamings.push_back(engine::identity_renaming(program_of(rank)));
      continue;
    }
    const engine::RankProgram program = engine::build_rank_program(
        llm::generate_llm_rank(scenario.model, scenario.parallel, rank), rank, world_size, sources);
    engine::ProgramComparison comparison =
        engine::compare_with_representative(program_of(representative), program, representative_of);
    if (!comparison.renaming) {
      proof.differences.emplace_back(rank, std::move(comparison.difference));
      return proof;  // one difference is enough to refuse
    }
    proof.renamings.push_back(std::move(*comparison.renaming));
  }
  return proof;
}

std::optional<std::string> fold_refusal(const FoldProof& proof,
                                        std::span<const int> representative_of) {
  if (!proof.differences.empty())
    return proof.differences.front().second;
  if (proof.renamings.size() != representative_of.size())
    return "only " + std::to_string(proof.renamings.size()) + " of " +
           std::to_string(representative_of.size()) + " ranks proven";
  return engine::fold_consistency(proof.renamings, representative_of);
}

std::vector<RankResult> simulate_folded(
    const SimulationInputs& representatives, std::span<const int> representative_of,
    std::span<const engine::GroupRenaming> renamings, bool record_timeline,
    const std::function<void(const RankResult&)>& timeline_sink) {
  engine::FoldedClockSync sync(std::vector<int>(representative_of.begin(), representative_of.end()),
                               renamings);
  const std::vector<RankResult> simulated = engine::simulate_programs(
      representatives.programs, representatives.overheads, sync, record_timeline);
  std::vector<RankResult> results;
  results.reserve(renamings.size());
  for (const engine::GroupRenaming& renaming : renamings) {
    const int representative = representative_of[static_cast<std::size_t>(renaming.rank)];
    const auto found =
        std::find_if(simulated.begin(), simulated.end(),
                     [&](const RankResult& result) { return result.sim_rank == representative; });
    results.push_back(engine::clone_result(*found, renaming));
    if (timeline_sink) {
      timeline_sink(results.back());
      std::vector<TimelineSlice>().swap(results.back().timeline);
    }
  }
  std::sort(results.begin(), results.end(),
            [](const RankResult& a, const RankResult& b) { return a.sim_rank < b.sim_rank; });
  return results;
}

FoldedRun fold_in_process(const LlmScenario& scenario, bool record_timeline) {
  FoldedRun run;
  const std::vector<int> representative_of = stage_representative_of(scenario.parallel);
  const std::vector<int> representatives = pipeline_representatives(scenario.parallel);
  run.inputs = load_llm_inputs(scenario, representatives);
  run.representatives = representatives.size();
  std::vector<int> all(representative_of.size());
  for (std::size_t rank = 0; rank < all.size(); ++rank)
    all[rank] = static_cast<int>(rank);
  const FoldProof proof = prove_ranks(scenario, run.inputs, representative_of, all);
  run.refusal = fold_refusal(proof, representative_of);
  if (run.refusal)
    return run;
  run.results = simulate_folded(run.inputs, representative_of, proof.renamings, record_timeline);
  run.inputs.notes.push_back(fold_note(run.representatives, scenario.parallel.world_size()));
  return run;
}

std::string fold_note(std::size_t representatives, int world_size) {
  return "fold: " + std::to_string(representatives) + " representative ranks simulated for " +
         std::to_string(world_size) +
         " (every other rank proven to run its stage representative's program; --fold none "
         "simulates each)";
}

}  // namespace perfsim::cli

#pragma once
// Every rank's program of a generated LLM scenario compiled from the rank's own trace, nothing
// shared between ranks: what the programs load_llm_inputs builds (one compiled list of ops per
// stage, src/scenario/llm_stage_programs.hpp) must be equivalent to.
#include <vector>

#include "generators/llm/llm_rank_generator.hpp"
#include "mpi_sim/engine/rank_program.hpp"
#include "scenario/llm_pipeline_steps.hpp"
#include "scenario/llm_simulation.hpp"

namespace perfsim::test_support {

// `priced` supplies the duration sources (load_llm_inputs of the same scenario).
inline std::vector<engine::RankProgram> llm_programs_in_full(
    const scenario::LlmScenario& scenario, const scenario::SimulationInputs& priced) {
  const engine::ProgramSources sources{priced.kernel_source.get(), priced.comm_source.get(), {}};
  std::vector<engine::RankProgram> programs;
  for (int rank = 0; rank < scenario.parallel.world_size(); ++rank) {
    const Trace trace = generators::llm::generate_llm_rank(scenario.model, scenario.parallel, rank);
    programs.push_back(
        engine::build_rank_program(trace, rank, scenario.parallel.world_size(), sources));
    // Labelled like load_llm_inputs' programs, so that results compare step for step.
    scenario::mark_pipeline_steps(trace, scenario.model, scenario.parallel,
                                  generators::llm::coordinates_of(scenario.parallel, rank).pp,
                                  programs.back());
  }
  scenario::share_links_if_asked(scenario, priced, programs);
  return programs;
}

}  // namespace perfsim::test_support

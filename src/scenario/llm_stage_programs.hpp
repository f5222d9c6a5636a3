#pragma once
// The programs of an unfolded LLM run's local ranks with one compiled list of ops per
// pipeline stage. Every rank of a stage is its stage template with its own roles
// (generators/llm/llm_rank_roles.hpp), so the first local rank of a stage is compiled in full
// and every other one gets those ops plus its own collectives (engine/bound_program.hpp),
// priced from the stage's witness collectives instantiated for the rank: one op per distinct
// (role, message), the same argument that makes the fold's proof exact
// (folded_simulation.hpp). tests/unit/llm_stage_programs_test.cpp checks every rank's bound
// collectives against its program compiled in full.
#include <vector>

#include "generators/llm/llm_model_config.hpp"
#include "generators/llm/llm_parallel_config.hpp"
#include "mpi_sim/engine/rank_program.hpp"

namespace perfsim::scenario {

// One program per rank of `local_ranks`, in that order. A stage whose template does not map
// each collective of its compiled program to one template op (never the case for today's
// generator) compiles every rank in full instead.
std::vector<engine::RankProgram> llm_rank_programs(const generators::llm::TransformerConfig& model,
                                                   const generators::llm::ParallelConfig& parallel,
                                                   const std::vector<int>& local_ranks,
                                                   const engine::ProgramSources& sources);

}  // namespace perfsim::scenario

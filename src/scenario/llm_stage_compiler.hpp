#pragma once
// A rank's program compiled from its stage template as the generator makes it: each step of
// the pipeline schedule (one micro-batch's forward or backward of a model chunk, a transfer, a
// phase after the schedule) is instantiated for the rank, compiled (engine/program_builder.hpp)
// and dropped, so that one step's generated ops are held at a time rather than the stage's
// whole Trace (~1.4 kB per op). What else the stage's programs need from the template is
// gathered on the way: its witness collectives (folded_simulation.hpp), which witness each
// collective of the program plays, and the pipeline steps (llm_pipeline_steps.hpp). The
// program is the one build_rank_program and mark_pipeline_steps make from
// instantiate_llm_rank's trace (tests/unit/llm_stage_compiler_test.cpp).
#include <cstdint>
#include <memory>
#include <vector>

#include "generators/llm/llm_model_config.hpp"
#include "generators/llm/llm_parallel_config.hpp"
#include "generators/llm/llm_rank_generator.hpp"
#include "mpi_sim/engine/rank_program.hpp"

namespace perfsim::scenario {

struct CompiledStageTemplate {
  engine::RankProgram program;  // the rank's, its pipeline steps marked
  generators::llm::StageTemplate witnesses;
  // Per collective of `program` (SimOp::collective_index), its witness among `witnesses`' ops;
  // null when the collectives do not map one to one, in order, onto template ops with a
  // collective (then the stage's other ranks cannot share the program).
  std::shared_ptr<const std::vector<std::uint32_t>> role_of;
};

// `rank`'s program, compiled from its stage's template streamed.
CompiledStageTemplate compile_stage_template(const generators::llm::TransformerConfig& model,
                                             const generators::llm::ParallelConfig& parallel,
                                             int rank, const engine::ProgramSources& sources);

}  // namespace perfsim::scenario

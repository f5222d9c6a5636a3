#pragma once
// Labels the forward and backward of every micro-batch in a generated LLM rank's program, so the
// simulator reports when each ran (RankResult::steps) and the HTML report can draw the pipeline
// schedule, the picture Megatron users draw. The generator marks each op with its phase and
// micro-batch; the schedule (1F1B or interleaved) says the order of the steps and their model
// chunks.
#include "generators/llm/llm_model_config.hpp"
#include "generators/llm/llm_parallel_config.hpp"
#include "mpi_sim/engine/rank_program.hpp"
#include "perfsim/trace.hpp"

namespace perfsim::scenario {

// Sets program.steps from `trace` (the trace the program was built from) of pipeline stage
// `stage`. Leaves them empty when the ops do not follow the schedule (a generator change the
// marking does not know): the report then draws no schedule rather than a wrong one.
void mark_pipeline_steps(const Trace& trace, const generators::llm::TransformerConfig& model,
                         const generators::llm::ParallelConfig& parallel, int stage,
                         engine::RankProgram& program);

}  // namespace perfsim::scenario

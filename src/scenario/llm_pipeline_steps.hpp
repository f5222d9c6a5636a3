#pragma once
// Labels the forward and backward of every micro-batch in a generated LLM rank's program, so the
// simulator reports when each ran (RankResult::steps) and the HTML report can draw the pipeline
// schedule, the picture Megatron users draw. The generator marks each op with its phase and
// micro-batch; the schedule (1F1B or interleaved) says the order of the steps and their model
// chunks.
#include <cstddef>
#include <vector>

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

// The same for a program compiled as its trace streamed by (engine/program_builder.hpp): each
// compiled op's trace op is seen once, in program order, while it is still at hand.
class PipelineStepRuns {
 public:
  // Program op `program_position` (the next one) was compiled from `op`.
  void add(const Op& op, std::size_t program_position);
  // Sets program.steps as mark_pipeline_steps does from the whole trace.
  void mark(const generators::llm::TransformerConfig& model,
            const generators::llm::ParallelConfig& parallel, int stage,
            engine::RankProgram& program) const;

  enum class StepKind { kNone, kForward, kBackward };
  // A maximal run of program ops of one step kind and micro-batch.
  struct Run {
    StepKind kind = StepKind::kNone;
    int micro_batch = -1;
    std::size_t first_op = 0;
    std::size_t end_op = 0;
  };

 private:
  std::vector<Run> runs_;
  bool open_ = false;
};

}  // namespace perfsim::scenario

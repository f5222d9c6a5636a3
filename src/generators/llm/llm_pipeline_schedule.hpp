#pragma once
// The order in which one pipeline stage runs its micro-batches and talks to its neighbours:
// Megatron-LM's non-interleaved 1F1B schedule (Narayanan et al. 2021, Sec. 2.2.1). Warm-up
// forwards, a steady state of one forward and one backward, cool-down backwards. Nothing here
// says how long the bubble is: it appears when the engine runs the steps against the
// neighbours' steps.
#include <string_view>
#include <vector>

namespace perfsim::generators::llm {

enum class PipelineAction {
  kRecvForward,  // activation from the previous stage
  kForward,
  kSendForward,   // activation to the next stage
  kRecvBackward,  // gradient from the next stage
  kBackward,
  kSendBackward,  // gradient to the previous stage
};
std::string_view pipeline_action_name(PipelineAction action);

struct PipelineStep {
  PipelineAction action = PipelineAction::kForward;
  int micro_batch = 0;
};

// Steps of `stage` (0-based) of `stages` over `micro_batches`. The first stage has no
// receive-forward or send-backward, the last no send-forward or receive-backward.
std::vector<PipelineStep> one_f_one_b_schedule(int stage, int stages, int micro_batches);

}  // namespace perfsim::generators::llm

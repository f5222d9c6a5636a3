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
  int chunk = 0;  // model chunk (virtual stage on this rank); 0 without interleaving
  // A forward whose compute runs as one combined step with the next backward step of the list
  // (Megatron-Core's overlap_moe_expert_parallel_comm; llm_combined_step.hpp).
  bool combined = false;
};

// Steps of `stage` (0-based) of `stages` over `micro_batches`. The first stage has no
// receive-forward or send-backward, the last no send-forward or receive-backward.
std::vector<PipelineStep> one_f_one_b_schedule(int stage, int stages, int micro_batches);

// Megatron-LM's interleaved 1F1B (Narayanan et al. 2021, Sec. 2.2.2): each rank holds `chunks`
// model chunks; virtual stage chunk x stages + stage. Forward step k runs chunk (k / P) % V on
// micro-batch (k / (P V)) P + k % P (backward: chunk V - 1 - (k / P) % V); warm-up
// (P - stage - 1) x 2 + (V - 1) x P steps. Needs micro_batches % stages == 0. The first
// virtual stage (stage 0, chunk 0) receives no activation, the last (stage P-1, chunk V-1)
// sends none; the last stage's chunk c feeds stage 0's chunk c + 1.
// With `a2a_overlap` (Megatron-Core's overlap_moe_expert_parallel_comm) one more warm-up
// forward (schedules.py: num_warmup_microbatches + 1), and each steady-state pair runs as
// combined_1f1b_schedule_for_interleaved_pipelining does: both receives, the forward (marked
// `combined`) and the backward, both sends.
std::vector<PipelineStep> interleaved_schedule(int stage, int stages, int chunks, int micro_batches,
                                               bool a2a_overlap = false);

// Megatron-Core's combined_1f1b_schedule_for_no_pipelining (PP 1 with
// overlap_moe_expert_parallel_comm): micro-batch 0's forward alone, then micro-batch i + 1's
// forward combined with micro-batch i's backward, then the last backward alone.
std::vector<PipelineStep> combined_no_pipelining_schedule(int micro_batches);

// Megatron-LM's interleaved schedule without overlap_p2p_comm (batch_p2p_comm; Megatron-LM 2021
// always): after each compute step one batched exchange (batch_isend_irecv, then
// torch.cuda.synchronize) sends what the step produced and receives what the next steps read.
// Warm-up: forward k, then {send forward k, receive the next forward's input}; the last warm-up
// exchange also receives the first backward's gradient. Steady: forward, backward, then
// {send both, receive the next forward's input and the next backward's gradient}. Cool-down:
// backward k, then {send it, receive the next backward's gradient}. Which receives a batch
// holds follows Megatron's recv_prev / recv_next (the first stage is P - 1 steps ahead of the
// last, so the wrap-around pair exchanges in the same batch); each received tensor is labelled
// with the step that reads it (Megatron's per-chunk queues: the n-th tensor received for chunk
// c feeds chunk c's n-th forward or backward). The transfers of one exchange are consecutive
// steps, the compute steps separate exchanges. Same warm-up as interleaved_schedule.
std::vector<PipelineStep> batched_interleaved_schedule(int stage, int stages, int chunks,
                                                       int micro_batches);

// Megatron-LM's overlap_p2p_comm (interleaved schedule): the receive for the next forward is
// posted right after the previous forward (with its send), the receive for the next backward
// right after the previous backward, so each runs beside the compute step between them instead
// of just before the step that needs it. Receives with no earlier step of their direction stay.
// A combined forward and its backward stay together: receives go after the pair.
std::vector<PipelineStep> receives_one_step_ahead(const std::vector<PipelineStep>& steps);

}  // namespace perfsim::generators::llm

#pragma once
// Small layouts of every parallelism kind the LLM generator has, for the tests that must hold
// on each (bound stage programs, llm_stage_programs_test; folding, folded_simulation_test). Each
// fits two 8-GPU nodes and the 6-layer small GPT (small_gpt.hpp); a layout with EP needs an MoE
// model (small_moe below).
#include <string>
#include <vector>

#include "generators/llm/llm_model_config.hpp"
#include "generators/llm/llm_parallel_config.hpp"
#include "generators/llm/llm_rank_order.hpp"
#include "support/small_gpt.hpp"

namespace perfsim::test_support {

struct ParallelismLayout {
  std::string name;  // a GoogleTest parameter name
  generators::llm::ParallelConfig parallel;
};

inline generators::llm::ParallelConfig tp_pp_dp(int tp, int pp, int dp) {
  generators::llm::ParallelConfig parallel;
  parallel.tp = tp;
  parallel.pp = pp;
  parallel.dp = dp;
  return parallel;
}

// 4 layers of 8 routed experts (top 2) and a shared expert: EP 2 splits them.
inline generators::llm::TransformerConfig small_moe() {
  generators::llm::TransformerConfig model = small_gpt(4, 1024, 16);
  model.name = "small-moe";
  model.gated_ffn = true;
  model.moe.num_experts = 8;
  model.moe.top_k = 2;
  model.moe.expert_ffn_hidden = 1024;
  model.moe.shared_expert_ffn_hidden = 1024;
  return model;
}

inline std::vector<ParallelismLayout> parallelism_layouts() {
  namespace llm = generators::llm;
  std::vector<ParallelismLayout> layouts;
  const auto add = [&layouts](const char* name, const llm::ParallelConfig& parallel) {
    layouts.push_back({name, parallel});
  };
  add("TensorPipelineAndData", tp_pp_dp(2, 2, 4));

  llm::ParallelConfig interleaved = tp_pp_dp(2, 3, 2);
  interleaved.virtual_stages = 2;
  add("InterleavedPipeline", interleaved);
  interleaved.overlap_p2p_comm = false;
  add("InterleavedPipelineWithoutP2pOverlap", interleaved);

  llm::ParallelConfig sequence = tp_pp_dp(4, 2, 2);
  sequence.sequence_parallel = true;
  sequence.recompute = llm::Recompute::kSelective;
  add("SequenceParallelWithSelectiveRecompute", sequence);

  llm::ParallelConfig userbuffers = tp_pp_dp(4, 2, 2);
  userbuffers.sequence_parallel = true;
  userbuffers.tp_comm_overlap = true;
  add("TransformerEngineUserbufferOverlap", userbuffers);

  llm::ParallelConfig sharded = tp_pp_dp(2, 2, 4);
  sharded.zero_stage = 1;
  sharded.overlap_grad_reduce = true;
  sharded.overlap_param_gather = true;
  add("DistributedOptimizerOverlapped", sharded);
  sharded.sequence_parallel = true;
  sharded.recompute = llm::Recompute::kSelective;
  add("SequenceParallelDistributedOptimizerOverlapped", sharded);

  llm::ParallelConfig zero3 = tp_pp_dp(1, 2, 4);
  zero3.zero_stage = 3;
  add("ZeroStage3", zero3);

  llm::ParallelConfig context = tp_pp_dp(2, 2, 2);
  context.cp = 2;
  add("ContextParallelRing", context);

  // Megatron's --use-tp-pp-dp-mapping: both stages of a replica in one node, DP across nodes.
  llm::ParallelConfig reordered = tp_pp_dp(2, 2, 4);
  reordered.order = llm::parse_rank_order("tp-pp-dp", "--order");
  add("PipelineStagesInsideTheNode", reordered);

  llm::ParallelConfig uneven = tp_pp_dp(2, 2, 2);
  uneven.pp_layers = {2, 4};
  add("UnevenStages", uneven);

  // Megatron's Llama 3.1 405B split in small: 6 layers + embedding + loss = 8 over PP 4 x V 2,
  // so stage 0's first chunk holds only the embedding and stage 3's last chunk only the loss.
  llm::ParallelConfig accounted = tp_pp_dp(2, 4, 2);
  accounted.virtual_stages = 2;
  accounted.account_for_embedding = true;
  accounted.account_for_loss = true;
  add("InterleavedStagesAccountingEmbeddingAndLoss", accounted);
  // Per virtual stage: stages of 1, 2 and 3 layers over chunks of 0 to 2.
  llm::ParallelConfig listed = tp_pp_dp(2, 3, 2);
  listed.virtual_stages = 2;
  listed.pp_layers = {0, 1, 1, 1, 1, 2};
  add("InterleavedUnevenStagesListed", listed);
  // Two stages interleaved (Megatron with overlap_p2p_comm): one rank pair carries activations
  // and gradients both ways, each its own message stream. 6 layers + embedding + loss over
  // PP 2 x V 2.
  llm::ParallelConfig two_stages = tp_pp_dp(2, 2, 2);
  two_stages.virtual_stages = 2;
  two_stages.account_for_embedding = true;
  two_stages.account_for_loss = true;
  add("InterleavedTwoStages", two_stages);

  // EP 2 of DP 4: the experts' gradients reduce over their own group (edp), not DP.
  llm::ParallelConfig experts = tp_pp_dp(2, 2, 4);
  experts.ep = 2;
  experts.moe_imbalance = 1.25;
  experts.sequence_parallel = true;
  add("ExpertParallel", experts);
  // The same with the distributed optimizer gathering parameters under the first forward: the
  // expert buckets over edp on their own stream beside the dense ones over DP.
  experts.zero_stage = 1;
  experts.overlap_grad_reduce = true;
  experts.overlap_param_gather = true;
  add("ExpertParallelOverlappedParameterGather", experts);
  return layouts;
}

}  // namespace perfsim::test_support

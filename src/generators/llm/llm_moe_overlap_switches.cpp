// Megatron-Core's refusals of its MoE overlap switches beyond overlap_moe_expert_parallel_comm
// (transformer_config.py TransformerConfig.__post_init__), named by perfsim's options.
#include <optional>
#include <string>

#include "generators/llm/llm_parallel_config.hpp"

namespace perfsim::generators::llm {

std::optional<std::string> delay_wgrad_compute_problem(const ParallelConfig& parallel) {
  if (parallel.delay_wgrad_compute && !parallel.moe_a2a_overlap)
    return "--delay-wgrad-compute needs --moe-a2a-overlap (Megatron-Core: "
           "overlap_moe_expert_parallel_comm must be enabled when enabling delay_wgrad_compute)";
  return std::nullopt;
}

std::optional<std::string> shared_expert_overlap_problem(const TransformerConfig& model,
                                                         const ParallelConfig& parallel) {
  if (!parallel.moe_shared_expert_overlap)
    return std::nullopt;
  // Megatron-Core asserts it off with the EP all-to-all overlap (the combined 1F1B step runs
  // the shared experts in its mlp node instead).
  if (parallel.moe_a2a_overlap)
    return "--moe-shared-expert-overlap is not allowed with --moe-a2a-overlap (Megatron-Core: "
           "disable moe_shared_expert_overlap when enabling overlap_moe_expert_parallel_comm)";
  // Megatron accepts the switch without them, where it changes nothing: refused here so that a
  // run that states it overlaps something does.
  if (!model.is_moe() || model.moe.shared_expert_ffn_hidden == 0)
    return "--moe-shared-expert-overlap needs a model with shared experts "
           "(moe.shared_expert_ffn_hidden > 0)";
  if (parallel.ep < 2)
    return "--moe-shared-expert-overlap needs EP > 1: without expert parallelism there is no "
           "all-to-all to overlap the shared experts with";
  // Megatron-Core's MoEFlexTokenDispatcher.set_shared_experts raises (0.13: "Shared expert
  // overlap is not supported in Flex Token Dispatcher").
  if (parallel.moe_flex())
    return "--moe-shared-expert-overlap is not allowed with --moe-token-dispatcher flex "
           "(Megatron-Core: shared expert overlap is not supported in the flex token dispatcher)";
  return std::nullopt;
}

}  // namespace perfsim::generators::llm

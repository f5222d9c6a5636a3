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

}  // namespace perfsim::generators::llm

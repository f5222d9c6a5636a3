#pragma once
// small_gpt with gated 8-expert MoE layers (top 2, expert FFN 1024): the MoE tests' shape.
#include "support/small_gpt.hpp"

namespace perfsim::test_support {

inline generators::llm::TransformerConfig small_moe(int layers, int global_batch) {
  generators::llm::TransformerConfig model = small_gpt(layers, 1024, global_batch);
  model.name = "small-moe";
  model.gated_ffn = true;
  model.moe.num_experts = 8;
  model.moe.top_k = 2;
  model.moe.expert_ffn_hidden = 1024;
  return model;
}

}  // namespace perfsim::test_support

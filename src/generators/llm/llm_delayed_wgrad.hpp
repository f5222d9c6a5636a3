#pragma once
// Megatron-Core's delay_wgrad_compute (needs overlap_moe_expert_parallel_comm,
// transformer_config.py): Transformer Engine's linear and grouped linear layers leave their
// weight-gradient GEMMs out of the autograd backward, and the combined 1F1B schedule runs them
// as nodes of their own (TransformerLayerNode.backward_dw: `mlp_bwd_dw` for the experts and
// shared experts, `attn_bwd_dw` for attention), after the layer's all-to-all that follows
// (models/common/model_chunk_schedule_plan.py TransformerLayerSchedulePlan.run). The generator
// tags those ops while it emits them; llm_combined_step.cpp moves them.
#include <cstddef>
#include <cstdint>

#include "generators/llm/llm_trace_builder.hpp"

namespace perfsim::generators::llm {

// The attribute a delayed weight-gradient op carries (value 1); absent without the switch.
inline constexpr const char* kDelayedWgradAttribute = "delayed_wgrad";

inline bool is_delayed_wgrad(const Op& op) {
  return op.find_attribute(kDelayedWgradAttribute) != nullptr;
}

// Tags the ops appended during its lifetime as delayed weight-gradient work when `on`; the
// builder must not be flushed meanwhile (a scope covers one layer's GEMM and its casts).
class DelayedWgradScope {
 public:
  DelayedWgradScope(RankTraceBuilder& builder, bool on)
      : builder_(builder), on_(on), begin_(builder.trace().ops.size()) {}
  ~DelayedWgradScope() {
    if (!on_)
      return;
    std::vector<Op>& ops = builder_.trace().ops;
    for (std::size_t i = begin_; i < ops.size(); ++i)
      ops[i].attributes.push_back({kDelayedWgradAttribute, std::int64_t{1}});
  }
  DelayedWgradScope(const DelayedWgradScope&) = delete;
  DelayedWgradScope& operator=(const DelayedWgradScope&) = delete;

 private:
  RankTraceBuilder& builder_;
  bool on_;
  std::size_t begin_;
};

}  // namespace perfsim::generators::llm

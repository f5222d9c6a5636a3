#pragma once
// The per-rank sizes one micro-batch of a transformer stage works on, after the tensor-parallel
// split (heads, FFN width and vocabulary divided by TP) and, with sequence parallelism, the
// sequence split of the layer norms, dropouts and residuals.
#include <cstdint>

#include "generators/llm/llm_model_config.hpp"
#include "generators/llm/llm_parallel_config.hpp"

namespace perfsim::generators::llm {

struct LocalShapes {
  std::int64_t seq = 0;  // s / CP: the sequence share of this rank's CP group member
  std::int64_t cp = 1;
  std::int64_t batch = 0;      // b (micro-batch)
  std::int64_t hidden = 0;     // h
  std::int64_t tp = 1;         // t
  std::int64_t seq_local = 0;  // s / t with sequence parallelism, else s
  std::int64_t heads_local = 0;
  std::int64_t kv_heads_local = 0;  // GQA: kv heads are replicated when TP exceeds them
  std::int64_t head_dim = 0;
  std::int64_t qkv_width = 0;  // (heads_local + 2 kv_heads_local) * head_dim
  std::int64_t ffn_local = 0;
  std::int64_t fc1_width = 0;  // ffn_local, twice that for a gated FFN
  std::int64_t vocab_local = 0;
  bool sequence_parallel = false;
  bool gated_ffn = false;
  DType dtype = DType::kBFloat16;  // activations (bf16 under the FP8 recipe)
  bool fp8_linear = false;         // linear-layer GEMMs in FP8 (Transformer Engine)
  bool fp8_all_gather = false;     // FP8 and SP: the linear inputs all-gathered in FP8
  bool fp8_params = false;         // FP8 primary weights (ParallelConfig::fp8_param_gather)
  // FP8 current scaling (model.fp8_recipe): each cast first finds its tensor's amax
  bool fp8_current_scaling = false;
  // FP8 blockwise scaling (model.fp8_recipe): scales per block, found inside the cast kernel
  bool fp8_blockwise = false;
  // MoE layers (model.is_moe()); the experts split over ETP ranks (TP by default).
  std::int64_t experts = 0;        // routed experts of the model
  std::int64_t experts_local = 0;  // experts / EP
  std::int64_t top_k = 0;
  std::int64_t expert_ffn_local = 0;  // moe_ffn_hidden / ETP
  std::int64_t expert_fc1_width = 0;  // twice that for gated experts
  std::int64_t shared_ffn_local = 0;  // shared_expert_ffn_hidden / TP (0: none)
  std::int64_t shared_fc1_width = 0;
  std::int64_t ep = 1;
  std::int64_t etp = 1;
  bool moe_aux_loss = true;  // the router's load-balancing loss (MixtureOfExperts::aux_loss)
  // Tokens this rank dispatches per micro-batch (tokens() x top_k), and the tokens the busiest
  // EP rank receives: dispatched x expert_load. Padded to capacity (moe_pad_to_capacity): both
  // padded_expert_rows.
  std::int64_t dispatched_tokens = 0;
  std::int64_t received_tokens = 0;
  // The flex dispatcher (ParallelConfig::moe_flex): the busiest EP rank's token copies per
  // micro-batch, one per token and distinct destination node of the EP group (node level) and
  // one per token and distinct destination GPU (GPU level: the tokens it receives before
  // permuting them to its experts), expected under uniform routing (llm_moe_flex_routing.hpp)
  // and scaled like received_tokens. 0 without flex.
  std::int64_t flex_node_copies = 0;
  std::int64_t flex_gpu_copies = 0;
  // Tokens the local experts compute on: received_tokens gathered over the expert TP group.
  std::int64_t expert_tokens() const { return received_tokens * etp; }
  std::int64_t router_parameters() const { return hidden * experts; }
  std::int64_t local_expert_parameters() const {
    return experts_local * (hidden * expert_fc1_width + expert_ffn_local * hidden);
  }
  std::int64_t shared_expert_parameters() const {
    return hidden * shared_fc1_width + shared_ffn_local * hidden;
  }
  std::int64_t attention_parameters() const {
    if (mla)
      return mla_parameters() + 2 * hidden;
    return hidden * qkv_width + heads_local * head_dim * hidden + 2 * hidden;
  }
  // Parameters of a MoE layer held by one rank, those reduced over DP x CP (attention, norms,
  // router, shared experts) and those over the expert-DP group (the local experts).
  std::int64_t moe_dense_parameters() const {
    return attention_parameters() + router_parameters() + shared_expert_parameters();
  }

  // Multi-latent attention (model.is_mla()): the latent widths (replicated over TP), the local
  // heads' widths of the up projections and of the attention's value.
  bool mla = false;
  std::int64_t q_lora_rank = 0;  // 0: no query compression (linear_q_proj)
  std::int64_t kv_lora_rank = 0;
  std::int64_t qk_nope_head_dim = 0;
  std::int64_t qk_rope_head_dim = 0;
  std::int64_t v_head_dim = 0;
  std::int64_t q_head_dim() const { return qk_nope_head_dim + qk_rope_head_dim; }
  // linear_q_up_proj (or linear_q_proj) output: heads_local x (nope + rope).
  std::int64_t q_up_width() const { return heads_local * q_head_dim(); }
  // linear_kv_up_proj output: heads_local x (nope + v).
  std::int64_t kv_up_width() const { return heads_local * (qk_nope_head_dim + v_head_dim); }
  // linear_kv_down_proj output: the kv latent and the shared k_pe.
  std::int64_t kv_down_width() const { return kv_lora_rank + qk_rope_head_dim; }
  // The input width of the query's column-parallel projection: the q latent, or h.
  std::int64_t q_up_input() const { return q_lora_rank > 0 ? q_lora_rank : hidden; }
  // Parameters of the attention block's projections and latent norms, without the layer norms.
  std::int64_t mla_parameters() const {
    return hidden * q_lora_rank + q_up_input() * q_up_width() + hidden * kv_down_width() +
           kv_lora_rank * kv_up_width() + context_width() * hidden + q_lora_rank + kv_lora_rank;
  }
  // The attention output linear_proj reads: heads_local x head_dim (MLA: x v_head_dim).
  std::int64_t context_width() const { return heads_local * (mla ? v_head_dim : head_dim); }

  std::int64_t tokens() const { return seq * batch; }
  // Parameters of one transformer layer held by one TP rank (two norms replicated, no biases).
  std::int64_t layer_parameters() const {
    return attention_parameters() + hidden * fc1_width + ffn_local * hidden;
  }
  // Parameters of the linear layers (the ones FP8 keeps FP8 copies of).
  std::int64_t linear_parameters() const {
    return layer_parameters() - 2 * hidden - (mla ? q_lora_rank + kv_lora_rank : 0);
  }
  std::int64_t embedding_parameters() const { return vocab_local * hidden; }
};

// Megatron-Core's get_capacity for `tokens` of one rank's micro-batch: the rows an expert takes,
// ceil(tokens x top_k / experts x capacity factor), times the experts: what a rank sends and,
// the splits being equal, receives when the experts' inputs are padded to capacity.
std::int64_t padded_expert_rows(std::int64_t tokens, const MixtureOfExperts& moe);
// SequentialMLP with FP8 (Megatron-Core's _pad_tensor_for_quantization): each expert's rows
// padded with zero rows to a multiple of 16 (get_align_size_for_quantization; 32 is MXFP8's,
// which perfsim does not model) before its FP8 linear layers.
inline std::int64_t fp8_aligned_expert_rows(std::int64_t rows) {
  return (rows + 15) / 16 * 16;
}
// The busiest EP rank's expert load over the mean: the imbalance, capped by the capacity factor
// when one is set (the tokens beyond it are dropped).
double expert_load(const MixtureOfExperts& moe, const ParallelConfig& parallel);

LocalShapes local_shapes(const TransformerConfig& model, const ParallelConfig& parallel);

}  // namespace perfsim::generators::llm

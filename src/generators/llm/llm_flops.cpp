#include "generators/llm/llm_flops.hpp"

namespace perfsim::generators::llm {
namespace {

// Forward GEMM FLOPs per token of the attention block's projections.
double attention_projection_flops_per_token(const TransformerConfig& model) {
  const double h = model.hidden;
  if (!model.is_mla()) {
    const double qkv_width = (model.heads + 2.0 * model.kv_heads) * model.head_dim();
    const double query_width = static_cast<double>(model.query_width());  // h unless head_dim
    return 2 * h * qkv_width + 2 * query_width * h;
  }
  const MultiLatentAttention& mla = model.mla;
  const double heads = model.heads;
  const double q_width = heads * mla.q_head_dim();
  const double q_input = mla.q_lora_rank > 0 ? mla.q_lora_rank : h;
  const double q_down = 2 * h * mla.q_lora_rank;  // 0 without query compression
  const double kv_down = 2 * h * (mla.kv_lora_rank + mla.qk_rope_head_dim);
  const double q_up = 2 * q_input * q_width;
  const double kv_up = 2.0 * mla.kv_lora_rank * heads * (mla.qk_nope_head_dim + mla.v_head_dim);
  const double proj = 2 * heads * mla.v_head_dim * h;
  return q_down + kv_down + q_up + kv_up + proj;
}

// Forward FLOPs per sequence of the attention scores and context over the unmasked sequence:
// each query counted against all s keys, or the window's (layer `layer`; -1: a full layer).
double attention_core_flops_per_sequence(const TransformerConfig& model, int layer) {
  const double s = model.seq_len;
  if (!model.is_mla()) {
    const double keys = layer < 0 ? s : model.attended_keys(layer);
    return 4 * s * keys * static_cast<double>(model.query_width());
  }
  const MultiLatentAttention& mla = model.mla;
  return 2 * s * s * model.heads * (static_cast<double>(mla.q_head_dim()) + mla.v_head_dim);
}

}  // namespace

double layer_forward_flops(const TransformerConfig& model, double sequences, int layer) {
  const double s = model.seq_len, h = model.hidden;
  const double ffn_inputs = model.gated_ffn ? 2.0 : 1.0;
  const double per_token =
      attention_projection_flops_per_token(model) + 2 * h * model.ffn_hidden * (ffn_inputs + 1);
  return sequences * (s * per_token + attention_core_flops_per_sequence(model, layer));
}

double layers_forward_flops(const TransformerConfig& model, double sequences) {
  if (model.window_size == 0)
    return model.layers * layer_forward_flops(model, sequences);
  double flops = 0;
  for (int layer = 0; layer < model.layers; ++layer)
    flops += layer_forward_flops(model, sequences, layer);
  return flops;
}

double logits_forward_flops(const TransformerConfig& model, double sequences) {
  return sequences * 2.0 * model.seq_len * model.hidden * model.vocab;
}

double moe_layer_forward_flops(const TransformerConfig& model, double sequences, int layer) {
  const double s = model.seq_len, h = model.hidden;
  const double ffn_inputs = model.gated_ffn ? 2.0 : 1.0;
  const MixtureOfExperts& moe = model.moe;
  const double dense_mlp_per_token = 2 * h * model.ffn_hidden * (ffn_inputs + 1);
  const double moe_mlp_per_token =
      2 * h * moe.num_experts +
      2 * h *
          (static_cast<double>(moe.top_k) * moe.expert_ffn_hidden + moe.shared_expert_ffn_hidden) *
          (ffn_inputs + 1);
  return layer_forward_flops(model, sequences, layer) +
         sequences * s * (moe_mlp_per_token - dense_mlp_per_token);
}

double mtp_module_forward_flops(const TransformerConfig& model, double sequences) {
  const double s = model.seq_len, h = model.hidden;
  const double eh_proj = 2 * (2 * h) * h * s;
  const bool moe_layer = model.is_moe_layer(model.layers - 1);
  const double layer =
      moe_layer ? moe_layer_forward_flops(model, sequences) : layer_forward_flops(model, sequences);
  return sequences * eh_proj + layer + logits_forward_flops(model, sequences);
}

double model_flops_per_iteration(const TransformerConfig& model, int global_batch) {
  double forward = logits_forward_flops(model, global_batch);
  if (model.window_size > 0) {
    // Layers differ in their attention: summed one by one.
    for (int layer = 0; layer < model.layers; ++layer)
      forward += model.is_moe_layer(layer) ? moe_layer_forward_flops(model, global_batch, layer)
                                           : layer_forward_flops(model, global_batch, layer);
  } else {
    const int moe_layers = model.moe_layer_count();
    forward += (model.layers - moe_layers) * layer_forward_flops(model, global_batch) +
               (moe_layers > 0 ? moe_layers * moe_layer_forward_flops(model, global_batch) : 0.0);
  }
  if (model.mtp_num_layers > 0)
    forward += model.mtp_num_layers * mtp_module_forward_flops(model, global_batch);
  return 3 * forward;
}

}  // namespace perfsim::generators::llm

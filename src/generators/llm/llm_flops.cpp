#include "generators/llm/llm_flops.hpp"

namespace perfsim::generators::llm {

double layer_forward_flops(const TransformerConfig& model, double sequences, int layer) {
  const double s = model.seq_len, h = model.hidden, d = model.head_dim();
  const double qkv_width = (model.heads + 2.0 * model.kv_heads) * d;
  const double query_width = static_cast<double>(model.query_width());  // h unless head_dim
  const double ffn_inputs = model.gated_ffn ? 2.0 : 1.0;
  const double per_token =
      2 * h * qkv_width + 2 * query_width * h + 2 * h * model.ffn_hidden * (ffn_inputs + 1);
  // Scores and context over the keys each query is counted against (all s, or the window).
  const double keys = layer < 0 ? s : model.attended_keys(layer);
  const double attention_per_sequence = 4 * s * keys * query_width;
  return sequences * (s * per_token + attention_per_sequence);
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

double model_flops_per_iteration(const TransformerConfig& model, int global_batch) {
  if (model.window_size > 0) {
    // Layers differ in their attention: summed one by one.
    double forward = logits_forward_flops(model, global_batch);
    for (int layer = 0; layer < model.layers; ++layer)
      forward += model.is_moe_layer(layer) ? moe_layer_forward_flops(model, global_batch, layer)
                                           : layer_forward_flops(model, global_batch, layer);
    return 3 * forward;
  }
  const int moe_layers = model.moe_layer_count();
  const double forward =
      (model.layers - moe_layers) * layer_forward_flops(model, global_batch) +
      (moe_layers > 0 ? moe_layers * moe_layer_forward_flops(model, global_batch) : 0.0) +
      logits_forward_flops(model, global_batch);
  return 3 * forward;
}

}  // namespace perfsim::generators::llm

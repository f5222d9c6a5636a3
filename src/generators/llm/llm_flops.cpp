#include "generators/llm/llm_flops.hpp"

namespace perfsim::generators::llm {

double layer_forward_flops(const TransformerConfig& model, double sequences) {
  const double s = model.seq_len, h = model.hidden, d = model.head_dim();
  const double qkv_width = (model.heads + 2.0 * model.kv_heads) * d;
  const double ffn_inputs = model.gated_ffn ? 2.0 : 1.0;
  const double per_token =
      2 * h * qkv_width + 2 * h * h + 2 * h * model.ffn_hidden * (ffn_inputs + 1);
  const double attention_per_sequence = 4 * s * s * h;
  return sequences * (s * per_token + attention_per_sequence);
}

double logits_forward_flops(const TransformerConfig& model, double sequences) {
  return sequences * 2.0 * model.seq_len * model.hidden * model.vocab;
}

double model_flops_per_iteration(const TransformerConfig& model, int global_batch) {
  const double forward = model.layers * layer_forward_flops(model, global_batch) +
                         logits_forward_flops(model, global_batch);
  return 3 * forward;
}

}  // namespace perfsim::generators::llm

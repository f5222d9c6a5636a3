#include "generators/llm/llm_local_shapes.hpp"

#include <algorithm>
#include <cmath>

#include "generators/llm/llm_moe_flex_routing.hpp"

namespace perfsim::generators::llm {

std::int64_t padded_expert_rows(std::int64_t tokens, const MixtureOfExperts& moe) {
  const double mean = static_cast<double>(tokens * moe.top_k) / moe.num_experts;
  return static_cast<std::int64_t>(std::ceil(mean * moe.capacity_factor)) * moe.num_experts;
}

double expert_load(const MixtureOfExperts& moe, const ParallelConfig& parallel) {
  return moe.capacity_factor > 0 ? std::min(parallel.moe_imbalance, moe.capacity_factor)
                                 : parallel.moe_imbalance;
}

LocalShapes local_shapes(const TransformerConfig& model, const ParallelConfig& parallel) {
  LocalShapes shapes;
  shapes.seq = model.seq_len / parallel.cp;
  shapes.cp = parallel.cp;
  shapes.batch = micro_batch_size(model, parallel);
  shapes.hidden = model.hidden;
  shapes.tp = parallel.tp;
  shapes.sequence_parallel = parallel.sequence_parallel && parallel.tp > 1;
  shapes.seq_local = shapes.sequence_parallel ? shapes.seq / shapes.tp : shapes.seq;
  shapes.heads_local = model.heads / parallel.tp;
  shapes.kv_heads_local = model.kv_heads >= parallel.tp ? model.kv_heads / parallel.tp : 1;
  shapes.head_dim = model.head_dim();
  shapes.qkv_width = (shapes.heads_local + 2 * shapes.kv_heads_local) * shapes.head_dim;
  shapes.ffn_local = model.ffn_hidden / parallel.tp;
  shapes.gated_ffn = model.gated_ffn;
  shapes.fc1_width = model.gated_ffn ? 2 * shapes.ffn_local : shapes.ffn_local;
  shapes.vocab_local = padded_vocab(model, parallel) / parallel.tp;
  shapes.dtype = model.activation_dtype();
  shapes.fp8_linear = model.fp8();
  // Blockwise scaling gathers row- and column-wise FP8 data with their scales
  // (_start_all_gather_fp8_blockwise): as many bytes as bf16, priced as the bf16 gather.
  shapes.fp8_all_gather =
      model.fp8() && parallel.fp8_all_gather && model.fp8_recipe != Fp8Recipe::kBlockwise;
  shapes.fp8_params = model.fp8() && parallel.fp8_param_gather;
  shapes.fp8_current_scaling = model.fp8() && model.fp8_recipe == Fp8Recipe::kCurrent;
  shapes.fp8_blockwise = model.fp8() && model.fp8_recipe == Fp8Recipe::kBlockwise;
  if (model.is_mla()) {
    const MultiLatentAttention& mla = model.mla;
    shapes.mla = true;
    shapes.q_lora_rank = mla.q_lora_rank;
    shapes.kv_lora_rank = mla.kv_lora_rank;
    shapes.qk_nope_head_dim = mla.qk_nope_head_dim;
    shapes.qk_rope_head_dim = mla.qk_rope_head_dim;
    shapes.v_head_dim = mla.v_head_dim;
  }
  if (model.is_moe()) {
    const MixtureOfExperts& moe = model.moe;
    const int gated = model.gated_ffn ? 2 : 1;
    shapes.experts = moe.num_experts;
    shapes.ep = parallel.ep;
    shapes.experts_local = moe.num_experts / parallel.ep;
    shapes.top_k = moe.top_k;
    shapes.moe_aux_loss = moe.aux_loss;
    shapes.etp = parallel.expert_tp();
    shapes.expert_ffn_local = moe.expert_ffn_hidden / shapes.etp;
    shapes.expert_fc1_width = gated * shapes.expert_ffn_local;
    shapes.shared_ffn_local = moe.shared_expert_ffn_hidden / parallel.tp;
    shapes.shared_fc1_width = gated * shapes.shared_ffn_local;
    const double load = expert_load(moe, parallel);
    if (parallel.moe_pad_to_capacity) {
      shapes.dispatched_tokens = shapes.received_tokens =
          padded_expert_rows(shapes.seq_local * shapes.batch, moe);
    } else {
      shapes.dispatched_tokens = shapes.seq_local * shapes.batch * moe.top_k;
      shapes.received_tokens = static_cast<std::int64_t>(
          std::ceil(static_cast<double>(shapes.dispatched_tokens) * load));
    }
    if (parallel.moe_flex() && parallel.ep > 1) {
      const UniformRouting routing{moe.num_experts, moe.top_k, moe.router_num_groups,
                                   moe.router_group_topk};
      const int ep_per_node = parallel.ep_ranks_per_node > 0
                                  ? std::min(parallel.ep, parallel.ep_ranks_per_node)
                                  : parallel.ep;
      const double tokens = static_cast<double>(shapes.seq_local * shapes.batch) * load;
      const int per_gpu = static_cast<int>(shapes.experts_local);
      shapes.flex_gpu_copies = std::llround(tokens * expected_distinct_units(routing, per_gpu));
      shapes.flex_node_copies =
          std::llround(tokens * expected_distinct_units(routing, per_gpu * ep_per_node));
    }
  }
  return shapes;
}

}  // namespace perfsim::generators::llm

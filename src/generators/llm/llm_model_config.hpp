#pragma once
// A decoder-only transformer as the LLM generator sees it: the shapes that set every kernel's
// size and every collective's bytes. Read from configs/models/*.json ("perfsim-llm-model/1").
#include <cstdint>
#include <string>
#include <string_view>

#include "perfsim/dtype.hpp"

namespace perfsim::generators::llm {

// Flash attention keeps the s x s scores on chip (one fused kernel forward, one backward);
// unfused attention (Megatron 2022, Korthikanti et al.) runs QK^T, softmax, dropout and
// attention-over-V as separate kernels and stores the s x s tensors.
enum class AttentionKernel { kFlash, kUnfused };

// How token positions enter the model: GPT-2/3 add a learned absolute position embedding to the
// token embedding (a table lookup beside the token's, no per-layer kernel); Llama, Mistral,
// Mixtral, DeepSeek and Nemotron rotate each layer's queries and keys (rotary embedding, Su et
// al. 2021), one memory-bound pass over q and k forward and backward. Model file field
// "position_embedding": "learned" | "rope"; absent: "learned" (the GPT family's, which the
// files without the field and the inline RUNS.csv rows of GPT shapes describe).
enum class PositionEmbedding { kLearned, kRope };

// How the loss's cross entropy runs (TransformerConfig::cross_entropy_fusion).
enum class CrossEntropyFusion { kNone, kNative, kTe };

// How Transformer Engine scales a tensor it casts to FP8 (TransformerConfig::fp8_recipe).
enum class Fp8Recipe { kDelayed, kCurrent, kBlockwise };

// Mixture of experts as Megatron-LM's MoE layer runs it: the dense MLP of a MoE layer is
// replaced by a router (a [h, experts] GEMM, softmax, top-k), `num_experts` routed experts of
// which each token visits `top_k` (each expert a gated or plain MLP of `expert_ffn_hidden`), and
// optionally shared experts every token visits (one MLP of `shared_expert_ffn_hidden`, the
// shared experts' widths summed, as Megatron's moe_shared_expert_intermediate_size).
struct MixtureOfExperts {
  int num_experts = 0;  // 0: a dense model
  int top_k = 0;
  int expert_ffn_hidden = 0;
  int shared_expert_ffn_hidden = 0;  // 0: no shared experts
  // Megatron's moe_expert_capacity_factor: an expert takes at most capacity_factor x its mean
  // load of tokens, the rest are dropped. 0: dropless (every routed token is computed).
  double capacity_factor = 0;
  // Layer l (0-based) is a MoE layer when l >= first_dense_layers and
  // (l - first_dense_layers) % layer_freq == 0 (DeepSeek's first_k_dense_replace; Megatron's
  // moe_layer_freq); the other layers keep the dense MLP of ffn_hidden.
  int layer_freq = 1;
  int first_dense_layers = 0;
  // Megatron-Core's moe_router_load_balancing_type: "aux_loss" (its default: the switch-style
  // auxiliary loss, true), "seq_aux_loss" (true, with sequence_aux_loss: the same loss per
  // sequence, DeepSeek-V2/V3's sequence-wise balance loss) or "none" (false: no loss ops).
  // Model field router_load_balancing.
  bool aux_loss = true;
  bool sequence_aux_loss = false;
  // The router's score function and top-k (Megatron-Core TransformerConfig, model fields in
  // parentheses; defaults are Megatron-Core's): moe_router_score_function "softmax" or "sigmoid"
  // (router_score_function; DeepSeek-V3), moe_router_enable_expert_bias (router_expert_bias:
  // the auxiliary-loss-free bias added to the scores for the choice only, updated once per
  // iteration from the token counts), moe_router_num_groups / moe_router_group_topk
  // (router_num_groups / router_group_topk: node-limited routing, 0 = None: plain top-k),
  // moe_router_topk_scaling_factor (router_topk_scaling_factor, 0 = None: no scaling).
  bool sigmoid_scores = false;
  bool expert_bias = false;
  int router_num_groups = 0;
  int router_group_topk = 0;
  double topk_scaling_factor = 0;

  bool enabled() const { return num_experts > 0; }
};

// Multi-latent attention (DeepSeek-V2 Sec. 2.1; Megatron-Core's MLASelfAttention and
// MLATransformerConfig): queries and keys/values are projected down to low-rank latents by
// weights every TP rank holds whole (linear_q_down_proj [h, q_lora_rank], linear_kv_down_proj
// [h, kv_lora_rank + qk_rope_head_dim]: TELinear "duplicated", on the rank's own SP tokens),
// each latent is normalized (q_layernorm, kv_layernorm), then projected up per head by
// column-parallel weights (linear_q_up_proj [q_lora_rank, heads (nope + rope)],
// linear_kv_up_proj [kv_lora_rank, heads (nope + v)]). Only the rope part of q and the shared
// k_pe (qk_rope_head_dim, one per token, broadcast to every head) are rotated. Attention runs
// with q/k head dimension nope + rope and v head dimension v_head_dim; linear_proj is row-
// parallel [heads v_head_dim, h]. q_lora_rank 0 (DeepSeek-V2-Lite, Megatron's q_lora_rank None):
// no query compression, one column-parallel linear_q_proj [h, heads (nope + rope)].
// Model file fields "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
// "v_head_dim"; enabled when kv_lora_rank > 0.
struct MultiLatentAttention {
  int q_lora_rank = 0;  // 0: queries not compressed
  int kv_lora_rank = 0;
  int qk_nope_head_dim = 0;  // Megatron's qk_head_dim
  int qk_rope_head_dim = 0;  // Megatron's qk_pos_emb_head_dim
  int v_head_dim = 0;

  bool enabled() const { return kv_lora_rank > 0; }
  int q_head_dim() const { return qk_nope_head_dim + qk_rope_head_dim; }
};

struct TransformerConfig {
  std::string name;
  std::string source;  // where the shapes come from (paper, model card)
  int layers = 0;
  int hidden = 0;
  int heads = 0;
  int kv_heads = 0;    // grouped-query attention; equal to heads for multi-head attention
  int ffn_hidden = 0;  // per branch: a gated FFN has two input projections of this width
  bool gated_ffn = false;
  int vocab = 0;
  int seq_len = 0;
  int micro_batch = 1;
  int global_batch = 1;
  // Training precision. bf16 / fp16: activations, weights and GEMMs in that dtype. fp8: the
  // Transformer Engine recipe: the GEMMs of the linear layers in FP8 (E4M3 forward, E5M2
  // gradients) on FP8 copies of weights and inputs, everything else (attention, norms,
  // activations, communication, weights as parameters) in bf16. Master weights stay fp32.
  DType dtype = DType::kBFloat16;
  AttentionKernel attention = AttentionKernel::kFlash;
  bool dropout = false;  // dropout after attention and FFN (GPT-style training)
  PositionEmbedding position_embedding = PositionEmbedding::kLearned;
  // Megatron-Core's element-wise fusions (how the framework runs the model, like `attention`):
  // bias_activation_fusion (Megatron-LM --no-bias-swiglu-fusion turns it off; on by default):
  // a gated FFN's SwiGLU as one fused kernel forward (read gate and up, write the product) and
  // one backward (read the saved input and the gradient, write both gradients), instead of
  // PyTorch's sigmoid and two multiplies. apply_rope_fusion (--no-rope-fusion; on by default):
  // Transformer Engine's fused rotary kernel, one pass per q and k, instead of PyTorch's
  // rotate-half, two multiplies and an add.
  bool bias_swiglu_fusion = true;
  bool rope_fusion = true;
  // cross_entropy_loss_fusion (Megatron-LM --cross-entropy-loss-fusion, off by default there;
  // NeMo 2.0 and Megatron-Bridge model configs turn it on) with cross_entropy_fusion_impl:
  // kNative, Megatron-Core's jit-fused vocabulary-parallel cross entropy (the cast to fp32
  // fused with the row max, subtract/exp/row-sum in one pass, the target logit and the sum
  // reduced over TP in one all-reduce, then the division, leaving the fp32 softmax); kTe,
  // Transformer Engine's parallel_cross_entropy (Triton: an online-softmax pass over the bf16
  // logits, the per-token max and sum all-gathered over TP, a second pass that writes the loss
  // and the bf16 gradient in place of the logits, scaled by the loss gradient in the backward).
  // kNone: Megatron's unfused path, pass by pass.
  CrossEntropyFusion cross_entropy_fusion = CrossEntropyFusion::kNone;
  // The FP8 recipe (Megatron-Core --fp8-recipe; only with dtype fp8). kDelayed: Transformer
  // Engine's DelayedScaling, each cast scaled from an amax history (one fused cast kernel per
  // tensor). kCurrent: Float8CurrentScaling (Megatron's "tensorwise", Megatron-Bridge's FP8-CS):
  // each cast scaled from the tensor's own amax, found just before it (generators/llm/
  // llm_fp8_current_scaling.cpp). kBlockwise: Float8BlockScaling (Megatron's "blockwise",
  // Megatron-Bridge's FP8-SC, DeepSeek-V3's recipe): a scale per 1 x 128 block of activations
  // and gradients and per 128 x 128 block of weights, found inside the cast kernel; every FP8
  // GEMM applies the block scales in its main loop (README "FP8 blockwise scaling";
  // RankTraceBuilder::set_fp8_block_scaling).
  Fp8Recipe fp8_recipe = Fp8Recipe::kDelayed;
  MixtureOfExperts moe;
  MultiLatentAttention mla;
  // Multi-token prediction (DeepSeek-V3 Sec. 2.2; Megatron-Core's MultiTokenPredictionBlock,
  // --mtp-num-layers): after the last layer each of mtp_num_layers modules embeds the tokens
  // shifted by one more position (the shared embedding), normalizes it and the previous
  // module's hidden state (two RMSNorms), projects their concatenation [2h -> h] (eh_proj),
  // runs one transformer layer like the model's last (MoE) layer, and the shared output head
  // and loss. Megatron-Core builds the modules on the last pipeline stage. 0: none.
  int mtp_num_layers = 0;

  // Attention shapes of today's open models (issue 15; README "Attention shapes"). The defaults
  // describe the files without these fields: heads x head_dim = hidden, no QK norm, full causal
  // attention in every layer.
  // kv_channels: the width of one query, key or value head (Megatron's kv_channels, the HF
  // config's "head_dim", model-file field "head_dim"); 0: hidden / heads. Qwen3 and GPT-OSS set
  // it so that heads x head_dim differs from hidden.
  int kv_channels = 0;
  // One matrix for the input embedding and the output layer (HF tie_word_embeddings, the
  // default of HF configs and of Megatron's GPT; model-file field "tied_embeddings", default
  // true): GPT-2/3, Gemma, the small Llama 3.2 and Qwen2.5/3 models. Untied (Llama 2/3, Mistral,
  // Qwen 7B and up, DeepSeek, ...): the output layer has weights of its own. It matters where
  // one stage holds both ends (PP 1): one copy of the weights, gradients and optimizer state
  // instead of two. With PP > 1 the last stage holds a copy of a tied matrix either way; the
  // all-reduce of its gradient with the first stage's (Megatron's embedding group) is not
  // modelled.
  bool tied_embeddings = true;
  // Megatron-Core's qk_layernorm (Qwen3, OLMo 2): the model's norm over each query and each key
  // head after the QKV projection, before the rotary embedding.
  bool qk_layernorm = false;
  // Sliding-window attention (Mistral, Gemma 2/3, GPT-OSS): a windowed layer's query attends to
  // the window_size most recent keys, itself included (HF's "sliding_window"); 0: full causal
  // attention everywhere. full_attention_every N (Megatron's window_attn_skip_freq): layers N-1,
  // 2N-1, ... (0-based) keep full attention, the others are windowed; 0: every layer windowed.
  int window_size = 0;
  int full_attention_every = 0;

  bool is_mla() const { return mla.enabled(); }
  bool is_moe() const { return moe.enabled(); }
  bool is_moe_layer(int layer) const {
    return moe.enabled() && layer >= moe.first_dense_layers &&
           (layer - moe.first_dense_layers) % moe.layer_freq == 0;
  }
  int moe_layer_count() const {
    int count = 0;
    for (int layer = 0; layer < layers; ++layer)
      count += is_moe_layer(layer) ? 1 : 0;
    return count;
  }

  int head_dim() const { return kv_channels > 0 ? kv_channels : hidden / heads; }
  // Width of the queries and of the attention's output (the projection's input): heads x
  // head_dim, which is hidden unless kv_channels says otherwise.
  std::int64_t query_width() const { return static_cast<std::int64_t>(heads) * head_dim(); }
  bool windowed_layer(int layer) const {
    return window_size > 0 &&
           (full_attention_every == 0 || (layer + 1) % full_attention_every != 0);
  }
  // Keys a query of a full sequence attends to on average in layer `layer`'s attention, as the
  // model FLOPs count it: seq_len, or for a windowed layer min(window_size, seq_len).
  int attended_keys(int layer) const {
    return windowed_layer(layer) && window_size < seq_len ? window_size : seq_len;
  }
  bool fp8() const { return dtype == DType::kFloat8; }
  bool rope() const { return position_embedding == PositionEmbedding::kRope; }
  // Activations, parameters and communication: bf16 under the FP8 recipe.
  DType activation_dtype() const { return fp8() ? DType::kBFloat16 : dtype; }
};

// "bf16", "fp16" or "fp8" (the training precisions a model file or --dtype may name); throws
// InputError(where, field, problem) otherwise.
DType parse_training_dtype(std::string_view text, const std::string& where,
                           const std::string& field);

// "learned" or "rope"; throws InputError(where, field, problem) otherwise.
PositionEmbedding parse_position_embedding(std::string_view text, const std::string& where,
                                           const std::string& field);
std::string_view position_embedding_name(PositionEmbedding embedding);

// "none", "native" or "te"; throws InputError(where, field, problem) otherwise.
CrossEntropyFusion parse_cross_entropy_fusion(std::string_view text, const std::string& where,
                                              const std::string& field);
std::string_view cross_entropy_fusion_name(CrossEntropyFusion fusion);

// "delayed", "current" or Megatron-Core's name of the current recipe, "tensorwise"; throws
// InputError(where, field, problem) otherwise.
Fp8Recipe parse_fp8_recipe(std::string_view text, const std::string& where,
                           const std::string& field);
std::string_view fp8_recipe_name(Fp8Recipe recipe);

// A run's --moe-expert-capacity-factor over the model file's capacity_factor: > 0 replaces it,
// < 0 makes the run dropless (Megatron-Bridge's -1.0 for None), 0 keeps the file's; a dense
// model is returned as it is.
TransformerConfig with_run_capacity_factor(TransformerConfig model, double run_factor);

// Throws InputError naming the file, the field and the problem.
TransformerConfig parse_transformer_config(std::string_view json_text, const std::string& file);
TransformerConfig load_transformer_config(const std::string& path);
// Throws InputError(file, field, problem) for a size that is not positive (layers, hidden,
// heads, kv_heads, ffn_hidden, vocab, seq_len, micro_batch, global_batch; the MoE sizes of a
// MoE model), too large, or inconsistent (heads that do not divide hidden, ...).
void validate(const TransformerConfig& model, const std::string& file);
// The multi-latent attention block alone (part of validate): positive head dimensions, an even
// rope part, rope position embedding, flash attention, kv_heads = heads.
void validate_multi_latent_attention(const TransformerConfig& model, const std::string& file);

}  // namespace perfsim::generators::llm

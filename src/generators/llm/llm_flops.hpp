#pragma once
// Closed-form FLOP counts of a transformer training iteration, for MFU and for tests.
// Model FLOPs count the forward pass and twice it for the backward pass (no recomputation),
// GEMMs only (2 flops per multiply-add): per layer and token the QKV, projection and FFN
// GEMMs, the attention score and context products over the full (unmasked) sequence, and the
// logits. For GPT shapes (kv_heads = heads, ffn = 4h, no gating) this is Korthikanti et al.
// 2022, Appendix A, eq. 7: 72 B s l h^2 (1 + s/(6h) + v/(12 h l)).
#include "generators/llm/llm_model_config.hpp"

namespace perfsim::generators::llm {

//
// Attention shapes (issue 15): the projections are h (heads + 2 kv_heads) d and heads d h, the
// scores and context products heads d wide. A sliding-window layer counts its queries against
// min(window, s) keys instead of s: the ratio to a full layer that Megatron-Bridge's
// flop_utils.py transformer_flops gives its SWA layers (swa_core over full_core), in perfsim's
// convention of counting a full layer's unmasked s x s (twice Megatron-Bridge's causal half, on
// full and windowed layers alike). For s >> window this is the band's work, s x window.

// Multi-latent attention (TransformerConfig::mla) counts its five projections (q down and up,
// or the uncompressed q projection; kv down and up; the output projection) and the attention
// over q/k head dimension nope + rope and v head dimension v_head_dim:
// 2 s^2 heads (nope + rope + v_head_dim) per sequence. Multi-token prediction adds per module
// the [2h -> h] projection, one layer like the model's last and the logits.
//
// Forward GEMM FLOPs of one transformer layer for `sequences` sequences (all TP ranks):
// layer `layer` (0-based; its attention windowed or not), or with -1 a full-attention layer.
double layer_forward_flops(const TransformerConfig& model, double sequences, int layer = -1);
// Of all the model's layers as dense layers (what layer_forward_flops x layers is without
// windows).
double layers_forward_flops(const TransformerConfig& model, double sequences);
// The same for a MoE layer: the router GEMM, top_k routed experts and the shared experts per
// token in place of the dense MLP (the FLOPs of the active parameters; dropped tokens and
// imbalance do not change them).
double moe_layer_forward_flops(const TransformerConfig& model, double sequences, int layer = -1);
// Forward GEMM FLOPs of the logits for `sequences` sequences.
double logits_forward_flops(const TransformerConfig& model, double sequences);
// Forward GEMM FLOPs of one multi-token prediction module: eh_proj [2h -> h], one layer like
// the model's last (MoE when that is), and the shared output head's logits.
double mtp_module_forward_flops(const TransformerConfig& model, double sequences);
// Model FLOPs of one iteration over `global_batch` sequences (forward + backward = 3 x forward).
double model_flops_per_iteration(const TransformerConfig& model, int global_batch);

}  // namespace perfsim::generators::llm

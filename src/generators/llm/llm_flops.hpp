#pragma once
// Closed-form FLOP counts of a transformer training iteration, for MFU and for tests.
// Model FLOPs count the forward pass and twice it for the backward pass (no recomputation),
// GEMMs only (2 flops per multiply-add): per layer and token the QKV, projection and FFN
// GEMMs, the attention score and context products over the full (unmasked) sequence, and the
// logits. For GPT shapes (kv_heads = heads, ffn = 4h, no gating) this is Korthikanti et al.
// 2022, Appendix A, eq. 7: 72 B s l h^2 (1 + s/(6h) + v/(12 h l)).
#include "generators/llm/llm_model_config.hpp"

namespace perfsim::generators::llm {

// Forward GEMM FLOPs of one transformer layer for `sequences` sequences (all TP ranks).
double layer_forward_flops(const TransformerConfig& model, double sequences);
// The same for a MoE layer: the router GEMM, top_k routed experts and the shared experts per
// token in place of the dense MLP (the FLOPs of the active parameters; dropped tokens and
// imbalance do not change them).
double moe_layer_forward_flops(const TransformerConfig& model, double sequences);
// Forward GEMM FLOPs of the logits for `sequences` sequences.
double logits_forward_flops(const TransformerConfig& model, double sequences);
// Model FLOPs of one iteration over `global_batch` sequences (forward + backward = 3 x forward).
double model_flops_per_iteration(const TransformerConfig& model, int global_batch);

}  // namespace perfsim::generators::llm

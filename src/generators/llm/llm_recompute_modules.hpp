#pragma once
// Megatron-Core's granular selective recompute (--recompute-granularity selective
// --recompute-modules M1 M2 ...; TransformerConfig.recompute_modules, default ["core_attn"]):
// which submodules of a layer give up their saved activations and run their forward again in
// the backward. perfsim models Megatron's seven names:
// - core_attn: the attention core (QK^T, softmax, dropout, attention over V) from the kept
//   Q, K, V, just before its backward (Korthikanti et al. 2022 Sec. 5; a normal checkpoint).
//   With flash attention there is nothing to recompute: the kernel keeps no s x s tensor.
// - layernorm: the norms that are modules of their own in Megatron-Core's Transformer Engine
//   layer spec (a norm fused into TELayerNormColumnParallelLinear is not recomputed): the
//   pre-MLP norm of a MoE layer and the input norm of a multi-latent attention layer. Output-
//   discarding checkpoint (CheckpointWithoutOutput): the norm's output is freed once its
//   consumers' forward is done and made again from the kept norm input when the gradient of
//   the block's output arrives, i.e. at the start of that block's backward.
// - moe_act: the routed experts' activation (TEGroupedMLP's activation_checkpoint): the FC2
//   input is freed after FC2's forward and made again from the kept FC1 output when FC2's
//   output gradient arrives, before FC2's backward. Shared experts are not covered.
// - mla_up_proj: multi-latent attention's qkv_up_proj_and_rope_apply (output-discarding):
//   the latent norms (fused into the up projections), the up projections with their SP
//   all-gathers and the rotary embedding run again when the attention output's gradient
//   arrives; query, key, value and the normed latents are not kept, the checkpoint's inputs
//   (the down projections' outputs and the gathered k_pe) are.
// - mlp: a dense layer's whole MLP (transformer_layer.py sets recompute_mlp only where the MLP
//   is not a MoELayer; a normal checkpoint, tensor_parallel.checkpoint or te_checkpoint under
//   FP8, of self.mlp): its forward keeps only the checkpoint's input (the pre-MLP norm's input,
//   which the layer keeps anyway) and runs again, the norm, the SP all-gather, FC1, the
//   activation, FC2 and its reduction included, when the MLP output's gradient arrives. MoE
//   layers are untouched, as in Megatron.
// - shared_experts: a MoE layer's shared experts (moe_layer.py's shared_experts_recompute, a
//   normal checkpoint of self.shared_experts on the block's input, only where they are not
//   overlapped with the dispatcher, moe_shared_expert_overlap): their forward keeps nothing
//   and runs again, the SP all-gather, both GEMMs and the reduction, before their backward.
// - moe: the whole MoE block (moe_layer.py's moe_layer_recompute, a normal checkpoint of the
//   layer's forward on its input): router, dispatch with its all-to-alls and host wait, experts,
//   combine and shared experts keep nothing and run again before the block's backward; not
//   modelled with moe_a2a_overlap (its combined steps split the block).
// An unknown name is an input error.
#include <string>
#include <string_view>

namespace perfsim::generators::llm {

struct RecomputeModules {
  bool core_attn = true;
  bool layernorm = false;
  bool moe_act = false;
  bool mla_up_proj = false;
  bool mlp = false;
  bool shared_experts = false;
  bool moe = false;

  bool is_default() const {
    return core_attn && !layernorm && !moe_act && !mla_up_proj && !mlp && !shared_experts && !moe;
  }
  bool operator==(const RecomputeModules&) const = default;
};

// Megatron's names separated by ',', ' ' or '+' (a RUNS.csv cell cannot hold commas); empty
// text (or separators only) is the default, core_attn. Throws InputError(file, field, ...)
// naming an unknown or an unmodelled module.
RecomputeModules parse_recompute_modules(std::string_view text, const std::string& file,
                                         const std::string& field);
// The modules joined by '+' in Megatron's order, e.g. "layernorm+moe_act"; "" when none.
std::string recompute_modules_name(const RecomputeModules& modules);

}  // namespace perfsim::generators::llm

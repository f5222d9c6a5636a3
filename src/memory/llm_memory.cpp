#include "memory/llm_memory.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "generators/llm/llm_local_shapes.hpp"
#include "generators/llm/llm_rank_generator.hpp"
#include "generators/llm/llm_te_workspace.hpp"
#include "generators/llm/megatron_fused_softmax.hpp"
#include "perfsim/dtype.hpp"

namespace perfsim::memory {
namespace {

namespace llm = generators::llm;

Bytes to_bytes(double value) {
  return static_cast<Bytes>(std::llround(value));
}

// The share of a stage's layer activations in flight at the peak of the interleaved schedule
// when its chunks hold different layer counts (the embedding or the loss counted as a layer):
// each chunk weighted by how many of its forwards the schedule holds at the peak (the warm-up
// forwards and the first steady one), relative to equal chunks. 1 when the chunks are equal,
// so the paper's interleaving factor applies as before; for the first stage the product is the
// exact count of its schedule.
double uneven_chunk_activation_scale(const llm::TransformerConfig& model,
                                     const llm::ParallelConfig& parallel, int stage) {
  const int p = parallel.pp, v = parallel.virtual_stages;
  if (v == 1)
    return 1.0;
  std::vector<int> layers;
  for (int chunk = 0; chunk < v; ++chunk) {
    const llm::LayerRange range = llm::stage_layers(model, parallel, stage, chunk);
    layers.push_back(range.last - range.first);
  }
  if (std::equal(layers.begin() + 1, layers.end(), layers.begin()))
    return 1.0;
  const int total = llm::micro_batches_per_iteration(model, parallel) * v;
  const int in_flight = std::min((p - stage - 1) * 2 + (v - 1) * p + 1, total);
  double weighted = 0, stage_layers = 0;
  for (int k = 0; k < in_flight; ++k)
    weighted += layers[static_cast<std::size_t>((k / p) % v)];
  for (int chunk_layers : layers)
    stage_layers += chunk_layers;
  if (stage_layers == 0)
    return 1.0;
  return weighted / in_flight * v / stage_layers;
}

// Bytes per parameter of weights, gradients and Adam state (ZeRO paper Sec. 3.1).
struct StateBytes {
  double weights = 0;
  double gradients = 0;
  double optimizer = 0;
};

StateBytes state_bytes_per_parameter(const llm::TransformerConfig& model,
                                     const llm::ParallelConfig& parallel, bool experts = false) {
  constexpr double kFp32Bytes = 4;
  constexpr double kAdamMomentsBytes = 8;  // fp32 momentum and variance
  // Under the FP8 recipe the parameters stay bf16 (Transformer Engine keeps FP8 copies besides
  // them, counted separately).
  const double dtype_bytes = element_bytes(model.activation_dtype());
  StateBytes state;
  state.weights = dtype_bytes;
  state.gradients = main_gradient_bytes(model, parallel);
  const double master_copy = dtype_bytes < kFp32Bytes ? kFp32Bytes : 0;
  state.optimizer = master_copy + kAdamMomentsBytes;
  // ZeRO shards over DP x CP, the experts over DP x CP / EP.
  const double dp =
      experts ? parallel.expert_gradient_group_size() : parallel.gradient_group_size();
  if (parallel.zero_stage >= 1)
    state.optimizer /= dp;
  if (parallel.zero_stage >= 2)
    state.gradients /= dp;
  if (parallel.zero_stage >= 3)
    state.weights /= dp;
  return state;
}

// The QKV projection's width, (heads + 2 kv_heads) d: h + 2 kv d when heads x d = h.
double qkv_width_of(const llm::TransformerConfig& model) {
  return static_cast<double>(model.query_width()) + 2.0 * model.kv_heads * model.head_dim();
}

// Table 2's tensor-parallel share, 24 sbh at 2 bytes, term by term for the model's shapes: Q, K
// and V (4 + 2 with multi-head attention; grouped-query attention keeps fewer K and V), with
// rope the rotated Q and K besides, the projection input (2), the FC1 output the activation's
// backward reads (8 for a 4h FFN; a gated FFN's two projections), the FC2 input (8).
double split_activation_terms(const llm::TransformerConfig& model) {
  const double h = model.hidden;
  const double qkv_width = qkv_width_of(model);
  const double ffn = static_cast<double>(model.ffn_hidden) / h;
  const double ffn_inputs = model.gated_ffn ? 2 : 1;
  // Rotary embedding: the rotated Q and K are new tensors the attention keeps (V stays a view
  // of the QKV output, which it keeps alive); fused or not, the rotation saves nothing else
  // (the fused SwiGLU saves its input only, already counted as the FC1 output).
  const double query_width = static_cast<double>(model.query_width());  // h unless head_dim
  if (model.is_mla()) {
    // Multi-latent attention keeps the query, key and value the rotary kernels build (heads x
    // (nope + rope) twice, heads x v_head_dim) and the context linear_proj reads (heads x
    // v_head_dim); the up projections' outputs are transient.
    const llm::MultiLatentAttention& mla = model.mla;
    const double a = model.heads;
    const double qkv = 2 * a * mla.q_head_dim() + a * mla.v_head_dim;
    return 2 * qkv / h + 2 * a * mla.v_head_dim / h + 2 * ffn_inputs * ffn + 2 * ffn;
  }
  // QK layer norm: its outputs are new tensors too, kept by the attention without rope (with
  // rope the fused rotation saves nothing of them and the rotated copies are kept instead); its
  // inputs are slices of the kept QKV output (the fp32 inverse RMS: qk_norm_rsigma_bytes).
  const double rotated_qk = model.rope() || model.qk_layernorm
                                ? 2 * (query_width + model.kv_heads * model.head_dim()) / h
                                : 0.0;
  // The projection's input, the attention's output: heads x d wide.
  const double context = 2 * query_width / h;
  return 2 * qkv_width / h + rotated_qk + context + 2 * ffn_inputs * ffn + 2 * ffn;
}

// Multi-latent attention's tensors of the rank's own (SP) tokens, per sbh at 2 bytes: the down
// projections' outputs (the latent norms' inputs: q latent; kv latent and k_pe) and the normed
// latents (the up projections' inputs, gathered again for their weight gradients). 0 without
// MLA.
double mla_latent_terms(const llm::TransformerConfig& model) {
  if (!model.is_mla())
    return 0.0;
  const llm::MultiLatentAttention& mla = model.mla;
  return (4.0 * mla.q_lora_rank + 4.0 * mla.kv_lora_rank + 2.0 * mla.qk_rope_head_dim) /
         model.hidden;
}

// A column-parallel layer's input gathered over TP in the forward (SP with TP > 1), which its
// backward gathers again from the kept local rows (the generator's
// LayerEmitter::backward_gathers_input).
bool backward_gathers_input(const llm::ParallelConfig& parallel) {
  return parallel.sequence_parallel && parallel.tp > 1;
}

// FP8 recipe: Transformer Engine's linear layers save their inputs quantized (1 byte per
// element) instead of in bf16 (TE 2.x module/linear.py and layernorm_linear.py: the quantized
// input kept with its row-wise data dropped unless the backward gathers it; grouped_linear.py:
// the quantized inputmats; TE 1.x: inputmat_t), as the generator does (MlpSaved). Table 2
// units (per sbh at 2 bytes, i.e. bytes per element at bf16) of one such input:
// - a column-parallel layer's (QKV, FC1, shared experts' FC1): 1, the FP8 local rows when the
//   backward all-gathers them again (SP, TP > 1) or the FP8 transpose otherwise; 2 when the
//   forward gathered it in bf16 (SP with TP > 1 and no FP8 all-gather: blockwise scaling,
//   --no-fp8-all-gather), whose bf16 local rows the backward gathers again;
// - a row-parallel layer's (projection, FC2, the experts'): 1, the FP8 transpose.
// Without FP8: 2 (the bf16 input).
double column_input_units(const llm::TransformerConfig& model,
                          const llm::ParallelConfig& parallel) {
  if (!model.fp8())
    return 2;
  const bool gathered_in_bf16 =
      backward_gathers_input(parallel) && !llm::local_shapes(model, parallel).fp8_all_gather;
  return gathered_in_bf16 ? 2 : 1;
}
double row_input_units(const llm::TransformerConfig& model) {
  return model.fp8() ? 1 : 2;
}

// Multi-latent attention under FP8, in the replicated (SP-split) Table 2 units: what the TE
// linears' saved FP8 inputs change (the generator's MlaSaved *_input_fp8). Megatron-Core's
// MLASelfAttention (multi_latent_attention.py, __init__ and get_query_key_value_tensors /
// _qkv_down_projection): linear_q_down_proj and linear_kv_down_proj are TELinear with
// parallel_mode "duplicated" on the rank's own rows of the normed hidden states, each casting
// them and saving its FP8 transpose (+1 each); linear_q_up_proj / linear_kv_up_proj (and
// linear_q_proj without query compression) are TE column-parallel linears on the normed
// latents (the hidden states), gathered over TP with SP in bf16 as the generator models it: the
// bf16 local rows stay for the backward's re-gather (as QKV without the FP8 all-gather), else
// their FP8 transposes are saved instead of the bf16 rows (-1 per element). The input norm's
// bf16 output (ln1, 2) then stays only for linear_q_proj when it is gathered again or recomputed
// (mla_up_proj reads it); layernorm recompute had freed it already. mla_up_proj recompute
// frees the normed latents (recomputed_attention_terms); the FP8 copies its recompute makes
// are not kept from the forward.
double mla_fp8_replicated_terms(const llm::TransformerConfig& model,
                                const llm::ParallelConfig& parallel) {
  if (!model.fp8() || !model.is_mla())
    return 0.0;
  const llm::MultiLatentAttention& mla = model.mla;
  const double h = model.hidden;
  const bool gathers = backward_gathers_input(parallel);
  const bool up_recomputed = parallel.recomputes(&llm::RecomputeModules::mla_up_proj);
  const bool norm_recomputed = parallel.recomputes(&llm::RecomputeModules::layernorm);
  const bool compressed = mla.q_lora_rank > 0;
  const double down_inputs = compressed ? 2.0 : 1.0;
  const bool ln1_kept = !compressed && (gathers || up_recomputed) && !norm_recomputed;
  double terms = down_inputs - (norm_recomputed ? 0.0 : 2.0) + (ln1_kept ? 2.0 : 0.0);
  if (!gathers && !up_recomputed) {
    terms -= (static_cast<double>(mla.q_lora_rank) + mla.kv_lora_rank) / h;  // normed latents
    if (!compressed)
      terms += 1;  // linear_q_proj's FP8 transpose of ln1
  }
  return terms;
}

// What FP8's saved inputs change in a layer's Table 2 terms: the QKV (with MLA,
// mla_fp8_replicated_terms) and FC1 inputs among the replicated ones; FC2's input and the
// projection's among the split ones. The projection's input is the attention's output:
// the fused attention (flash, ring attention with CP, MLA) keeps it in bf16 for its backward,
// so the FP8 copy comes on top (+1); the unfused attention's backward does not read it (-1).
struct Fp8InputTerms {
  double replicated = 0, split = 0;
};
Fp8InputTerms fp8_input_terms(const llm::TransformerConfig& model,
                              const llm::ParallelConfig& parallel) {
  Fp8InputTerms terms;
  if (!model.fp8())
    return terms;
  const double h = model.hidden;
  const double column_inputs = model.is_mla() ? 1 : 2;
  terms.replicated = -(2 - column_input_units(model, parallel)) * column_inputs +
                     mla_fp8_replicated_terms(model, parallel);
  const double context_width = model.is_mla()
                                   ? static_cast<double>(model.heads) * model.mla.v_head_dim
                                   : static_cast<double>(model.query_width());
  const bool fused_attention =
      model.is_mla() || parallel.cp > 1 || model.attention == llm::AttentionKernel::kFlash;
  terms.split = (fused_attention ? 1.0 : -1.0) * context_width / h -
                (2 - row_input_units(model)) * static_cast<double>(model.ffn_hidden) / h;
  return terms;
}

// A dense MLP's saved tensors in Table 2's units (per sbh at 2 bytes): FC1's input as FC1 saves
// it (replicated without SP) and, split by TP, FC1's output and FC2's input as FC2 saves it.
struct DenseMlpTerms {
  double fc1_input = 0, inner = 0;
};
DenseMlpTerms dense_mlp_terms(const llm::TransformerConfig& model,
                              const llm::ParallelConfig& parallel) {
  const double ffn_inputs = model.gated_ffn ? 2 : 1;
  return {column_input_units(model, parallel),
          (2 * ffn_inputs + row_input_units(model)) * model.ffn_hidden / model.hidden};
}

// Megatron-Core's granular selective recompute (llm_recompute_modules.hpp) in Table 2's
// units (per sbh at 2 bytes): what a layer's attention side no longer keeps. layernorm frees an
// MLA layer's input norm output (2, split by SP); mla_up_proj the query, key and value (split
// by TP) and the normed latents (split by SP), and keeps the gathered k_pe instead (whole on
// every TP rank: gathered over TP with SP; without SP it is a view of the kept kv_combined).
struct RecomputedTerms {
  double replicated = 0, split = 0, whole = 0;
};
RecomputedTerms recomputed_attention_terms(const llm::TransformerConfig& model,
                                           const llm::ParallelConfig& parallel) {
  RecomputedTerms freed;
  if (!model.is_mla())
    return freed;
  const double h = model.hidden, a = model.heads;
  const llm::MultiLatentAttention& mla = model.mla;
  if (parallel.recomputes(&llm::RecomputeModules::layernorm))
    freed.replicated += 2;
  if (parallel.recomputes(&llm::RecomputeModules::mla_up_proj)) {
    freed.split += 2 * (2 * a * mla.q_head_dim() + a * mla.v_head_dim) / h;
    freed.replicated += (2.0 * mla.q_lora_rank + 2.0 * mla.kv_lora_rank) / h;
    if (parallel.sequence_parallel && parallel.tp > 1)
      freed.whole -= 2.0 * mla.qk_rope_head_dim / h;
  }
  return freed;
}

// Multi-latent attention's parameters per layer: those split by TP (the up projections, or the
// uncompressed q projection, and linear_proj) and those every TP rank holds whole (the down
// projections and the latent norms).
double mla_split_parameters(const llm::TransformerConfig& model) {
  const llm::MultiLatentAttention& mla = model.mla;
  const double h = model.hidden, a = model.heads;
  const double q_input = mla.q_lora_rank > 0 ? mla.q_lora_rank : h;
  return q_input * a * mla.q_head_dim() +
         static_cast<double>(mla.kv_lora_rank) * a * (mla.qk_nope_head_dim + mla.v_head_dim) +
         a * mla.v_head_dim * h;
}
double mla_replicated_parameters(const llm::TransformerConfig& model) {
  const llm::MultiLatentAttention& mla = model.mla;
  const double h = model.hidden;
  return h * mla.q_lora_rank + h * (mla.kv_lora_rank + mla.qk_rope_head_dim) + mla.q_lora_rank +
         mla.kv_lora_rank;
}

// The attention block's parameters split by TP: QKV weight and bias and the projection (GPT
// shapes), or MLA's (no biases).
double attention_split_parameters(const llm::TransformerConfig& model) {
  if (model.is_mla())
    return mla_split_parameters(model);
  const double h = model.hidden;
  const double qkv_width = qkv_width_of(model);
  // QKV weight and bias, the projection (heads x d -> h).
  return h * qkv_width + qkv_width + static_cast<double>(model.query_width()) * h;
}
double attention_replicated_parameters(const llm::TransformerConfig& model) {
  return model.is_mla() ? mla_replicated_parameters(model) : 0.0;
}

}  // namespace

double main_gradient_bytes(const llm::TransformerConfig& model,
                           const llm::ParallelConfig& parallel) {
  // fp32 training accumulates fp32 gradients whatever the reduction dtype says.
  return std::max(element_bytes(parallel.gradient_dtype), element_bytes(model.activation_dtype()));
}

std::string main_gradient_dtype_name(const llm::TransformerConfig& model,
                                     const llm::ParallelConfig& parallel) {
  const bool widened =
      main_gradient_bytes(model, parallel) > element_bytes(parallel.gradient_dtype);
  return std::string(dtype_name(widened ? model.activation_dtype() : parallel.gradient_dtype));
}

double activation_bytes_per_layer(const llm::TransformerConfig& model,
                                  const llm::ParallelConfig& parallel) {
  const double s = static_cast<double>(model.seq_len) / parallel.cp;  // this rank's share
  const double b = llm::micro_batch_size(model, parallel);
  const double h = model.hidden;
  const double a = model.heads;
  const double t = parallel.tp;
  const double sbh = s * b * h;
  // Table 2 assumes dropout: two 1-byte masks per layer (attention and MLP outputs, sbh each,
  // split by SP, else replicated) and, in unfused attention, the s x s dropout mask and output
  // besides the softmax output (5as/h). Without dropout PyTorch's dropout returns its input:
  // no masks, and the softmax output is the attention's only s x s tensor (2as/h).
  const double masks = model.dropout ? 2.0 : 0.0;
  const double scores_per_head = model.dropout ? 5.0 : 2.0;
  const double scores =
      model.attention == llm::AttentionKernel::kUnfused ? scores_per_head * a * s / (h * t) : 0.0;
  // Replicated without SP: the two norm inputs (4), the QKV and FC1 inputs (2 + 2), the masks;
  // multi-latent attention's latents.
  RecomputedTerms freed = recomputed_attention_terms(model, parallel);
  // mlp (a dense layer's MLP checkpointed whole): FC1's saved input, FC1's output and FC2's
  // input are not kept; the checkpoint's input is the pre-MLP norm's input, kept anyway.
  if (parallel.recomputes(&llm::RecomputeModules::mlp)) {
    const DenseMlpTerms mlp = dense_mlp_terms(model, parallel);
    freed.replicated += mlp.fc1_input;
    freed.split += mlp.inner;
  }
  const Fp8InputTerms fp8 = fp8_input_terms(model, parallel);
  const double replicated = 8 + masks + mla_latent_terms(model) - freed.replicated + fp8.replicated;
  // 24 for GPT shapes (bf16)
  const double split = split_activation_terms(model) - freed.split + fp8.split;
  // Without core_attn in the recompute modules the attention core keeps its s x s tensors.
  const bool core_attn_recomputed = parallel.recomputes(&llm::RecomputeModules::core_attn);
  double bytes = -freed.whole * sbh;
  switch (parallel.recompute) {
    case llm::Recompute::kFull:
      // Only the layer's input is kept: [s/t, b, h] under sequence parallelism, [s, b, h]
      // without (Korthikanti et al. Table 2's 2sbh is the latter).
      bytes = parallel.sequence_parallel ? 2 * sbh / t : 2 * sbh;
      break;
    case llm::Recompute::kSelective:
      if (core_attn_recomputed) {
        bytes += parallel.sequence_parallel ? (replicated + split) * sbh / t
                                            : sbh * (replicated + split / t);
        break;
      }
      [[fallthrough]];
    case llm::Recompute::kNone:
      bytes += parallel.sequence_parallel ? sbh * ((replicated + split) / t + scores)
                                          : sbh * (replicated + split / t + scores);
      break;
  }
  constexpr double kTableDtypeBytes = 2;
  bytes *= element_bytes(model.activation_dtype()) / kTableDtypeBytes;
  // QK layer norm's fp32 inverse RMS per query and key head row (tokens of the whole sequence
  // share, heads split by TP), kept for the norms' backward.
  if (model.qk_layernorm && parallel.recompute != llm::Recompute::kFull)
    bytes += element_bytes(DType::kFloat32) * s * b * (a + model.kv_heads) / t;
  // Without Megatron's fused kernel the softmax runs in fp32 (megatron_fused_softmax.hpp):
  // its saved output is fp32 instead of the activation dtype; without dropout the bmm keeps
  // the cast copy too. Per score: + 4 - e bytes with dropout, + 4 without (e: activation bytes).
  const double heads_local = a / t;
  if (parallel.recompute != llm::Recompute::kFull && !core_attn_recomputed &&
      model.attention == llm::AttentionKernel::kUnfused &&
      !llm::megatron_fused_causal_softmax_available(static_cast<std::int64_t>(b * heads_local),
                                                    static_cast<std::int64_t>(s))) {
    const double extra_per_score = element_bytes(DType::kFloat32) -
                                   (model.dropout ? element_bytes(model.activation_dtype()) : 0);
    bytes += extra_per_score * b * heads_local * s * s;
  }
  return bytes;
}

double fp8_linear_parameters_per_layer(const llm::TransformerConfig& model,
                                       const llm::ParallelConfig& parallel) {
  const double h = model.hidden;
  const double f = model.ffn_hidden;
  const double ffn_inputs = model.gated_ffn ? 2 : 1;
  if (model.is_mla()) {
    // The up projections and linear_proj split over TP, the down projections whole on every
    // rank (parallel_mode "duplicated"); every one a Transformer Engine linear layer.
    const llm::MultiLatentAttention& mla = model.mla;
    const double down = h * mla.q_lora_rank + h * (mla.kv_lora_rank + mla.qk_rope_head_dim);
    return (mla_split_parameters(model) + (ffn_inputs + 1) * h * f) / parallel.tp + down;
  }
  const double qkv_width = qkv_width_of(model);
  const double query_width = static_cast<double>(model.query_width());
  return (h * qkv_width + query_width * h + (ffn_inputs + 1) * h * f) / parallel.tp;
}

double fp8_moe_linear_parameters_per_layer(const llm::TransformerConfig& model,
                                           const llm::ParallelConfig& parallel) {
  llm::TransformerConfig shared = model;
  shared.ffn_hidden = model.moe.shared_expert_ffn_hidden;
  return fp8_linear_parameters_per_layer(shared, parallel) +
         expert_parameters_per_layer(model, parallel);
}

double parameters_per_layer(const llm::TransformerConfig& model,
                            const llm::ParallelConfig& parallel) {
  const double h = model.hidden;
  const double f = model.ffn_hidden;
  const double t = parallel.tp;
  const double ffn_inputs = model.gated_ffn ? 2 : 1;      // gate and up projections
  const double split = attention_split_parameters(model)  // QKV weight and bias, projection
                       + (ffn_inputs + 1) * h * f         // MLP GEMMs
                       + ffn_inputs * f;                  // MLP input bias
  // Projection and MLP output biases, two layer norms; MLA's down projections, latent norms.
  const double replicated = 6 * h + attention_replicated_parameters(model);
  return split / t + replicated;
}

double moe_dense_parameters_per_layer(const llm::TransformerConfig& model,
                                      const llm::ParallelConfig& parallel) {
  const double h = model.hidden;
  const double t = parallel.tp;
  const double ffn_inputs = model.gated_ffn ? 2 : 1;
  const double shared = model.moe.shared_expert_ffn_hidden;
  const double split = attention_split_parameters(model) + (ffn_inputs + 1) * h * shared;
  const double router = h * model.moe.num_experts;  // replicated over TP
  if (model.is_mla())
    return split / t + 6 * h + router + attention_replicated_parameters(model);
  return split / t + 6 * h + router;
}

double expert_parameters_per_layer(const llm::TransformerConfig& model,
                                   const llm::ParallelConfig& parallel) {
  const double ffn_inputs = model.gated_ffn ? 2 : 1;
  const double experts_local = static_cast<double>(model.moe.num_experts) / parallel.ep;
  return experts_local * (ffn_inputs + 1) * model.hidden * model.moe.expert_ffn_hidden /
         parallel.expert_tp();
}

double moe_activation_bytes_per_layer(const llm::TransformerConfig& model,
                                      const llm::ParallelConfig& parallel) {
  // `mlp` recompute checkpoints dense MLPs only: a MoE layer keeps its block as it is.
  llm::ParallelConfig moe_layer = parallel;
  moe_layer.recompute_modules.mlp = false;
  const double dense = activation_bytes_per_layer(model, moe_layer);
  if (parallel.recompute == llm::Recompute::kFull)
    return dense;  // only the layer input is kept
  const llm::MixtureOfExperts& moe = model.moe;
  const double t = parallel.tp;
  const double sb =
      static_cast<double>(model.seq_len) / parallel.cp * llm::micro_batch_size(model, parallel);
  const double h = model.hidden;
  const double bytes = element_bytes(model.activation_dtype());
  const double gated = model.gated_ffn ? 2 : 1;
  // Tokens a rank's experts compute: its own s b / t (SP) routed rows, x load on the busiest
  // rank, gathered over the expert TP group (ETP = t: the TP group's s b top_k x load); padded
  // to capacity, the capacity of every expert (llm::padded_expert_rows), sent and received.
  const double etp = parallel.expert_tp();
  const double padded =
      parallel.moe_pad_to_capacity
          ? static_cast<double>(llm::padded_expert_rows(static_cast<std::int64_t>(sb / t), moe))
          : 0.0;
  const double routed = parallel.moe_pad_to_capacity
                            ? padded * etp
                            : sb / t * etp * moe.top_k * llm::expert_load(moe, parallel);
  // SequentialMLP with FP8 (moe_grouped_gemm off): each expert's rows padded to a multiple of
  // 16 before its linear layers, whose saved inputs and FC1 outputs have the padded rows.
  const double experts_local = static_cast<double>(moe.num_experts) / parallel.ep;
  const double expert_rows =
      !parallel.moe_grouped_gemm && model.fp8()
          ? experts_local * static_cast<double>(llm::fp8_aligned_expert_rows(
                                static_cast<std::int64_t>(std::ceil(routed / experts_local))))
          : routed;
  // The rows the unpermute's backward keeps: the combined rows with the alltoall dispatcher
  // (s b / t top_k, or the padded rows), the experts' output rows on the receiving side with
  // flex (routed).
  const double combined_rows = parallel.moe_flex()            ? routed
                               : parallel.moe_pad_to_capacity ? padded
                                                              : sb / t * moe.top_k;
  // Korthikanti's MLP share (19 sbh / t at 2 bytes, 18 without its dropout mask; FC1's and
  // FC2's inputs as the dense formula counts them, fp8_input_terms) gives way to the MoE
  // block's tensors.
  const DenseMlpTerms mlp = dense_mlp_terms(model, parallel);  // 2 + 16 for 4h at bf16
  const double dense_mlp =
      (mlp.fc1_input + mlp.inner + (model.dropout ? 1 : 0)) * sb * h / t * bytes / 2;
  // The router input (the second norm's output) stays for the router's weight gradient: split
  // by SP, else whole on every TP rank.
  const double router_input = sb * h * bytes / (parallel.sequence_parallel ? t : 1.0);
  // Granular selective recompute: layernorm frees the router input (the pre-MLP norm's output,
  // a TENorm of its own in a MoE layer), moe_act the experts' FC2 input.
  const bool norm_recomputed = parallel.recomputes(&llm::RecomputeModules::layernorm);
  // FP8: the grouped linears save their inputs' FP8 transposes, 1 byte per element, and the
  // bf16 rows are freed; with moe_act the FP8 copy of FC2's input is kept all the same (TE
  // saved it; the checkpoint frees only the bf16 output). The shared experts save theirs as
  // the dense MLP does; the shared FC1's comes beside the router input the router keeps
  // (nothing when it is gathered in bf16 again from those rows).
  const double row_input_bytes = row_input_units(model) * bytes / 2;
  const double act_kept = model.fp8()                                            ? 1.0
                          : parallel.recomputes(&llm::RecomputeModules::moe_act) ? 0.0
                                                                                 : 1.0;
  const double shared = moe.shared_expert_ffn_hidden;
  // The shared FC1's FP8 input: the gathered local rows, else the transpose of its whole input.
  const double shared_fc1_input =
      !model.fp8() || shared == 0 || column_input_units(model, parallel) == 2 ? 0.0
      : backward_gathers_input(parallel)                                      ? sb * h / t
                                                                              : sb * h;
  // The block's input (the router input; not kept when layernorm recomputes the norm) and the
  // dropout mask after it, kept whatever the block recomputes.
  const double block_input = norm_recomputed ? 0.0 : router_input;
  const double dropout_mask = model.dropout ? sb * h / t : 0.0;
  // moe: the whole block was a checkpoint on its input.
  if (parallel.recomputes(&llm::RecomputeModules::moe))
    return dense - dense_mlp + block_input + dropout_mask;
  // shared_experts (not overlapped with the dispatcher): the checkpoint keeps only the block's
  // input, which the router keeps anyway.
  const bool shared_kept = !parallel.recomputes(&llm::RecomputeModules::shared_experts) ||
                           parallel.moe_shared_expert_overlap;
  const double moe_block =
      block_input + sb / t * moe.num_experts * bytes  // router probabilities
      + sb / t * moe.top_k * (bytes + 8)              // top-k probabilities, indices
      + expert_rows * h * row_input_bytes             // expert FC1 input (TP-gathered)
      + expert_rows * (gated * bytes + act_kept * row_input_bytes) * moe.expert_ffn_hidden /
            etp                    // FC1 out, FC2 in
      + combined_rows * h * bytes  // the unpermute's rows
      + (shared_kept ? sb * (gated * bytes + row_input_bytes) * shared / t + shared_fc1_input
                     : 0.0)  // shared experts
      + dropout_mask;
  return dense - dense_mlp + moe_block;
}

MtpMemory mtp_memory(const llm::TransformerConfig& model, const llm::ParallelConfig& parallel) {
  MtpMemory mtp;
  if (model.mtp_num_layers <= 0)
    return mtp;
  const double t = parallel.tp;
  const double h = model.hidden;
  const double sbh =
      static_cast<double>(model.seq_len) / parallel.cp * llm::micro_batch_size(model, parallel) * h;
  const double v = static_cast<double>(llm::padded_vocab(model, parallel));
  const double dtype_scale = element_bytes(model.activation_dtype()) / 2.0;
  const bool moe_layer = model.is_moe_layer(model.layers - 1);
  const double modules = model.mtp_num_layers;
  // Per module: its layer, eh_proj [2h, h / t], enorm, hnorm and the layer's final norm.
  const double layer = moe_layer ? moe_dense_parameters_per_layer(model, parallel)
                                 : parameters_per_layer(model, parallel);
  mtp.parameters = modules * (layer + 2 * h * h / t + 3 * h);
  if (parallel.pp > 1)
    mtp.parameters += v * h / t;  // the last stage's copy of the word embedding
  mtp.expert_parameters = moe_layer ? modules * expert_parameters_per_layer(model, parallel) : 0.0;
  // Per module and micro-batch (counted once, as the head's): the layer's activations, the
  // embedding (enorm's input, sbh) and the concatenated normed pair (eh_proj's input, 2 sbh),
  // split by SP, and the head's 4 sbh / t (1 + v / h).
  const double layer_activations = moe_layer ? moe_activation_bytes_per_layer(model, parallel)
                                             : activation_bytes_per_layer(model, parallel);
  const double own_tokens = parallel.sequence_parallel ? t : 1.0;
  // FP8: eh_proj (a TE column-parallel linear) saves the FP8 transpose of its input (1 byte per
  // element) instead of the bf16 rows, unless its backward gathers those again over TP with SP
  // (the generator's MtpSaved::concatenated_fp8).
  const bool eh_input_fp8 = model.fp8() && !backward_gathers_input(parallel);
  const double concatenated = eh_input_fp8 ? 2 : 4;
  mtp.activation_bytes =
      modules * (layer_activations + (2 + concatenated) * sbh / own_tokens * dtype_scale +
                 4 * sbh / t * (1 + v / h) * dtype_scale);
  return mtp;
}

LlmMemoryEstimate estimate_llm_memory(const llm::TransformerConfig& model,
                                      const llm::ParallelConfig& parallel,
                                      const DeviceMemory& device) {
  llm::validate(model, parallel);
  LlmMemoryEstimate estimate;
  estimate.activation_bytes_per_layer = activation_bytes_per_layer(model, parallel);
  if (model.is_moe())
    estimate.moe_activation_bytes_per_layer = moe_activation_bytes_per_layer(model, parallel);

  const int p = parallel.pp;
  const double t = parallel.tp;
  const double h = model.hidden;
  const double sbh =
      static_cast<double>(model.seq_len) / parallel.cp * llm::micro_batch_size(model, parallel) * h;
  const double v = static_cast<double>(llm::padded_vocab(model, parallel));
  const int micro_batches = llm::micro_batches_per_iteration(model, parallel);
  const double interleave =
      parallel.virtual_stages > 1
          ? 1.0 + (p - 1.0) / (p * static_cast<double>(parallel.virtual_stages))
          : 1.0;
  const StateBytes state = state_bytes_per_parameter(model, parallel);
  const double dtype_scale = element_bytes(model.activation_dtype()) / 2.0;
  const double layer_parameters = parameters_per_layer(model, parallel);

  for (int stage = 0; stage < p; ++stage) {
    StageMemory memory;
    memory.stage = stage;
    const int layers_per_stage = llm::layers_of_stage(model, parallel, stage);
    memory.layers = layers_per_stage;
    const double in_flight = std::min(p - stage, micro_batches);
    memory.microbatches_in_flight = in_flight * interleave;

    int moe_layers = 0;
    for (int chunk = 0; model.is_moe() && chunk < parallel.virtual_stages; ++chunk) {
      const llm::LayerRange range = llm::stage_layers(model, parallel, stage, chunk);
      for (int layer = range.first; layer < range.last; ++layer)
        moe_layers += model.is_moe_layer(layer) ? 1 : 0;
    }
    const int dense_layers = layers_per_stage - moe_layers;
    double parameters = dense_layers * layer_parameters;
    double activations =
        dense_layers * estimate.activation_bytes_per_layer * memory.microbatches_in_flight;
    double expert_parameters = 0;
    if (moe_layers > 0) {
      parameters += moe_layers * moe_dense_parameters_per_layer(model, parallel);
      expert_parameters = moe_layers * expert_parameters_per_layer(model, parallel);
      activations +=
          moe_layers * estimate.moe_activation_bytes_per_layer * memory.microbatches_in_flight;
    }
    activations *= uneven_chunk_activation_scale(model, parallel, stage);
    if (stage == 0) {
      parameters += v * h / t + static_cast<double>(model.seq_len) * h;
      const double mask_bytes = parallel.sequence_parallel ? sbh / t : sbh;  // 1-byte mask
      if (model.dropout)
        activations += mask_bytes * memory.microbatches_in_flight;
    }
    if (stage == p - 1) {
      parameters += 2 * h;  // final layer norm
      // The output layer: a copy of a tied word embedding on a later stage, weights of its
      // own when untied; a tied matrix on a single stage is the embedding counted above.
      if (p > 1 || !model.tied_embeddings)
        parameters += v * h / t;
      // Korthikanti et al.'s output layer: 4 sbh/t, and the fp32 softmax [s b, v/t] the loss
      // keeps for its backward; Transformer Engine's fused cross entropy keeps the bf16
      // gradient in place of the logits instead.
      const double saved_loss_bytes =
          model.cross_entropy_fusion == llm::CrossEntropyFusion::kTe ? 2.0 : 4.0;
      activations += (4 * sbh / t + saved_loss_bytes * sbh / t * v / h) * dtype_scale;
      if (model.mtp_num_layers > 0) {
        const MtpMemory mtp = mtp_memory(model, parallel);
        parameters += mtp.parameters;
        expert_parameters += mtp.expert_parameters;
        activations += mtp.activation_bytes;
      }
    }
    memory.parameter_count = parameters + expert_parameters;
    memory.expert_parameter_count = expert_parameters;
    // FP8 primary weights (fp8_param_gather): the linear weights are their own FP8 copy, one
    // byte each; only their transposes are held besides.
    double fp8_primary_parameters = 0;
    if (model.fp8()) {
      // One FP8 byte for the weight and one for its transpose per linear-layer parameter
      // (Transformer Engine casts at the first micro-batch and keeps both for the iteration);
      // ZeRO-3 gathers and casts per use, so they are held for one layer at a time.
      const double per_layer = fp8_linear_parameters_per_layer(model, parallel);
      const double per_moe_layer =
          moe_layers > 0 ? fp8_moe_linear_parameters_per_layer(model, parallel) : 0.0;
      double held = parallel.zero_stage >= 3
                        ? std::max(dense_layers > 0 ? per_layer : 0.0, per_moe_layer)
                        : dense_layers * per_layer + moe_layers * per_moe_layer;
      if (stage == p - 1 && model.mtp_num_layers > 0) {
        // Each multi-token prediction module: its layer (the last layer's kind) and eh_proj.
        const bool moe_layer = model.is_moe_layer(model.layers - 1);
        held += model.mtp_num_layers *
                ((moe_layer ? fp8_moe_linear_parameters_per_layer(model, parallel) : per_layer) +
                 2 * h * h / t);
      }
      if (parallel.fp8_param_gather)
        fp8_primary_parameters = held;
      memory.fp8_weight_bytes = to_bytes((parallel.fp8_param_gather ? 1 : 2) * held);
    }
    // Expert states shard over the expert-DP group (DP x CP / EP) instead of DP x CP.
    const StateBytes expert_state = state_bytes_per_parameter(model, parallel, true);
    memory.parameter_bytes =
        to_bytes(parameters * state.weights + expert_parameters * expert_state.weights -
                 fp8_primary_parameters * (state.weights - 1));
    memory.gradient_bytes =
        to_bytes(parameters * state.gradients + expert_parameters * expert_state.gradients);
    memory.optimizer_bytes =
        to_bytes(parameters * state.optimizer + expert_parameters * expert_state.optimizer);
    memory.activation_bytes = to_bytes(activations);
    if (parallel.tp_comm_overlap) {
      // initialize_ub: 4 ring-exchange, 2 pipelined and 4 bulk communicators of [s b / CP, h];
      // the 6 all-gather ones hold FP8 under the FP8 recipe.
      const double bytes = element_bytes(model.activation_dtype());
      const double all_gather_bytes = model.fp8() ? 1.0 : bytes;
      memory.userbuffer_bytes = to_bytes(sbh * (6 * all_gather_bytes + 4 * bytes));
    }
    for (const Bytes workspace : llm::te_cublas_workspaces(
             model, parallel, llm::te_cublas_workspace_bytes(device.architecture)))
      memory.workspace_bytes += workspace;
    memory.context_bytes = device.context_bytes;
    memory.total_bytes = memory.parameter_bytes + memory.fp8_weight_bytes + memory.gradient_bytes +
                         memory.optimizer_bytes + memory.activation_bytes +
                         memory.userbuffer_bytes + memory.workspace_bytes + memory.context_bytes;
    estimate.stages.push_back(memory);
  }
  for (std::size_t i = 1; i < estimate.stages.size(); ++i) {
    if (estimate.stages[i].total_bytes > estimate.stages[estimate.worst_stage].total_bytes)
      estimate.worst_stage = i;
  }
  estimate.verdict = memory_verdict(estimate.worst().total_bytes, device);
  return estimate;
}

std::string format_llm_memory(const llm::TransformerConfig& model,
                              const llm::ParallelConfig& parallel,
                              const LlmMemoryEstimate& estimate, const DeviceMemory& device) {
  std::ostringstream out;
  out << "LLM memory per GPU: " << (model.name.empty() ? "" : model.name + " ")
      << "L=" << model.layers << " h=" << model.hidden << " a=" << model.heads
      << " s=" << model.seq_len << " b=" << llm::micro_batch_size(model, parallel)
      << " v=" << model.vocab << " TP=" << parallel.tp << " PP=" << parallel.pp
      << " DP=" << parallel.dp << (parallel.cp > 1 ? " CP=" + std::to_string(parallel.cp) : "")
      << (parallel.ep > 1 ? " EP=" + std::to_string(parallel.ep) : "")
      << (parallel.expert_tp() != parallel.tp ? " ETP=" + std::to_string(parallel.etp) : "")
      << " virtual=" << parallel.virtual_stages << " ZeRO=" << parallel.zero_stage
      << " SP=" << (parallel.sequence_parallel ? "on" : "off")
      << " recompute=" << llm::recompute_name(parallel.recompute)
      << (parallel.recompute_modules.is_default()
              ? ""
              : "(" + llm::recompute_modules_name(parallel.recompute_modules) + ")")
      << " grads=" << main_gradient_dtype_name(model, parallel) << "\n";
  // A model with MoE layers keeps other tensors in them (experts' rows, router, permutation):
  // their figure, beside the dense layers' when the model has both.
  const std::string dense = format_bytes(to_bytes(estimate.activation_bytes_per_layer));
  const std::string moe = format_bytes(to_bytes(estimate.moe_activation_bytes_per_layer));
  out << "  activations per layer per micro-batch: "
      << (!model.is_moe() ? dense
          : model.moe_layer_count() == model.layers
              ? moe + " (every layer MoE)"
              : dense + " (dense layers), " + moe + " (MoE layers)")
      << "\n";
  for (const StageMemory& stage : estimate.stages) {
    const bool shown = estimate.stages.size() <= 4 || stage.stage == 0 ||
                       stage.stage + 1 == static_cast<int>(estimate.stages.size()) ||
                       static_cast<std::size_t>(stage.stage) == estimate.worst_stage;
    if (!shown)
      continue;
    out << "  stage " << stage.stage << ": " << stage.layers << " layers, "
        << stage.microbatches_in_flight << " micro-batches in flight\n";
    out << "    parameters " << format_bytes(stage.parameter_bytes) << " ("
        << stage.parameter_count / 1e9 << "e9 params)"
        << (parallel.fp8_param_gather ? ", linear weights in FP8" : "")
        << (stage.fp8_weight_bytes > 0
                ? (parallel.fp8_param_gather ? ", their fp8 transposes " : ", fp8 weight copies ") +
                      format_bytes(stage.fp8_weight_bytes)
                : "")
        << ", gradients " << format_bytes(stage.gradient_bytes) << ", optimizer state "
        << format_bytes(stage.optimizer_bytes) << "\n";
    out << "    activations " << format_bytes(stage.activation_bytes)
        << (stage.userbuffer_bytes > 0 ? ", TE userbuffers " + format_bytes(stage.userbuffer_bytes)
                                       : "")
        << (stage.workspace_bytes > 0 ? ", cuBLAS workspace " + format_bytes(stage.workspace_bytes)
                                      : "")
        << ", context " << format_bytes(stage.context_bytes) << ", total "
        << format_bytes(stage.total_bytes) << "\n";
  }
  out << "  worst stage " << estimate.worst_stage << ": "
      << format_bytes(estimate.worst().total_bytes) << " -> "
      << format_verdict(estimate.verdict, device) << "\n";
  return out.str();
}

}  // namespace perfsim::memory

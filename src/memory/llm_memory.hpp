#pragma once
// Closed-form memory per GPU of a decoder-only transformer trained with Megatron-style tensor,
// pipeline and data parallelism (no trace needed). Takes the LLM generator's model and layout
// (generators/llm), so the memory model, the generator and the planner check one layout once.
//
// Model states (Rajbhandari et al. 2020, ZeRO, Sec. 3.1): with 16-bit weights, per parameter
// 2 bytes of weights, the main gradients in ParallelConfig::gradient_dtype (what the simulated
// run reduces: fp32 by default, 4 bytes, as Megatron-LM forces
// accumulate_allreduce_grads_in_fp32 for bf16; 2 with --grad-reduce-dtype bf16 or fp16, the
// latter Megatron's default for fp16 training) and 12 of Adam state (fp32 master copy,
// momentum, variance); with 32-bit weights, 4 + 4 + 8 (no master copy). That is Megatron's
// table of bytes per parameter (Megatron Core developer guide, "Distributed Optimizer":
// bf16 parameters with fp32 gradients 18, with the distributed optimizer 6 + 12/d; fp32 16 and
// 8 + 8/d). ZeRO stage 1 (the distributed optimizer) divides the optimizer state by DP, stage 2
// also the gradients, stage 3 also the weights. FP8 keeps bf16 weights and the same main
// gradients. The table's 20 (4 + 16/d) for fp16 gradients adds the fp32 copy of the gradients
// the optimizer step makes (Megatron's _copy_model_grads_to_main_grads); zero_grad frees it
// before the next forward, so it never coexists with activations and is not counted here.
//
// Activations per transformer layer: Korthikanti et al. 2022 ("Reducing Activation
// Recomputation in Large Transformer Models"), Table 2, in bytes with 16-bit activations and
// 1-byte dropout masks (s sequence, b micro-batch, h hidden, a heads, t tensor parallel):
//   no parallelism              sbh(34 + 5as/h)
//   tensor parallel             sbh(10 + 24/t + 5as/(ht))
//   tensor + sequence parallel  sbh(34/t + 5as/(ht))
//   selective recompute (TP)    sbh(10 + 24/t)
//   selective recompute + SP    34sbh/t
//   full recompute              2sbh
// (t = 1 turns the tensor-parallel rows into the first.) The table assumes dropout
// (TransformerConfig::dropout); without it the two sbh masks are gone (34 -> 32, 10 -> 8) and
// unfused attention keeps its softmax output only (5as/h -> 2as/h), since PyTorch's dropout
// returns its input when the probability is 0; so is the embedding's mask below.
// The 24 (split by TP) is 6 for Q, K and V, 2 for the projection input, 8 for the GeLU input
// and 8 for the FC2 input of a 4h FFN: they are taken from the model's shapes (grouped-query
// attention keeps 2(h + 2 kv_heads head_dim)/h for Q, K, V; a gated FFN of width f keeps both
// projections' output, 4f/h, and the FC2 input, 2f/h), which leaves GPT shapes at 24.
// Multi-latent attention (TransformerConfig::mla) keeps, in place of Q, K, V, rotated Q and K
// and the projection input, the query and key (a (nope + rope) each), the value and the context
// (a v_head_dim each), split by TP; and beside the replicated terms its down projections'
// outputs and normed latents, (4 q_lora_rank + 4 kv_lora_rank + 2 rope) / h, split by SP. Its
// parameters: the up projections and linear_proj split by TP, the down projections and latent
// norms whole (no biases counted).
// The 5as/h term is the s x s softmax output, dropout mask and dropout output of unfused
// attention; flash attention keeps them on chip,
// so with AttentionKernel::kFlash it is left out (the selective-recompute rows). Other
// activation dtypes scale the whole term by dtype_bytes / 2, masks included: an approximation.
// When Megatron's fused scale-mask-softmax kernel is unavailable for the shape
// (generators/llm/megatron_fused_softmax.hpp: micro-batch x heads / t not a multiple of 4, keys
// beyond 4096, ...) PyTorch's softmax runs in fp32 and keeps its fp32 output for the backward:
// without recomputation that adds 4 - e bytes per score with dropout (the fp32 output replaces
// the e-byte one) and 4 without (the bmm then also keeps the e-byte cast), e the activation
// bytes, i.e. 5as/h -> 7as/h and 2as/h -> 6as/h in bf16.
// Pipeline (Sec. 4.2.3): under 1F1B stage i holds the activations of min(p - i, micro-batches)
// micro-batches, so the first stage holds p; the interleaved schedule with m virtual stages
// multiplies that by (1 + (p - 1)/(p m)) (the paper derives it for the first stage; it is
// applied to every stage here, which overestimates the later ones slightly). Uneven splits
// (llm_pipeline_split.hpp) give each stage its own layer count; when a stage's chunks differ
// (the embedding or the loss counted as a layer) each chunk is weighted by its forwards in
// flight at the schedule's peak, which is exact for the first stage.
// Embeddings and output layer (Sec. 4.3): the first stage keeps the input-embedding dropout
// mask, sbh/t per micro-batch in flight (sbh without SP); the last stage keeps
// 4sbh/t (1 + v/h) for the final layer norm, the output projection and the fp32 softmax.
// Parameters: per layer the QKV (h x (h + 2 kv_heads head_dim)), projection (h^2) and MLP
// (2 or, gated, 3 x h f) weights with GPT-style biases, split by tensor parallelism, plus 6h
// replicated (output and MLP biases, two layer norms): 12h^2 + 13h for GPT shapes at t = 1. The
// first stage holds the word embedding vh/t and the position embedding sh; the last stage holds
// the final layer norm (2h) and, when it is not the first stage, its copy of the tied word
// embedding vh/t.
// Context parallelism: s is the rank's share s / CP in every activation term (ring attention
// keeps no s x s scores), and ZeRO shards over the DP x CP ranks that reduce the gradients.
// FP8 (Transformer Engine recipe, TransformerConfig::fp8()): parameters, gradients, optimizer
// state as with bf16, plus an FP8 copy of every linear-layer weight and its
// transpose (2 bytes per linear parameter). The linear layers' saved inputs are counted as
// Transformer Engine saves them, quantized (1 byte per element; the scales not counted): QKV,
// projection (a copy beside the bf16 context the fused attention keeps), FC1, FC2, the experts'
// and shared experts' GEMMs, MLA's down projections, MLA's up projections and MTP's eh_proj
// (these two keep their bf16 local rows when their backward gathers them again over TP with SP;
// llm_memory.cpp fp8_input_terms, mla_fp8_replicated_terms, mtp_memory).
// Transformer Engine's cuBLAS workspaces of the device's architecture (DeviceMemory::architecture;
// none without a device) are counted as the generator declares them (llm_te_workspace.hpp).
// Not modelled: temporary buffers (communication buckets), fragmentation; the
// context constant is added (device_memory.hpp).
#include <string>
#include <vector>

#include "generators/llm/llm_model_config.hpp"
#include "generators/llm/llm_parallel_config.hpp"
#include "memory/device_memory.hpp"
#include "perfsim/units.hpp"

namespace perfsim::memory {

// Bytes per main-gradient element: ParallelConfig::gradient_dtype, at least the weights' dtype.
double main_gradient_bytes(const generators::llm::TransformerConfig& model,
                           const generators::llm::ParallelConfig& parallel);
// Its name ("fp32", "bf16", "fp16"), as `perfsim memory --llm` prints it.
std::string main_gradient_dtype_name(const generators::llm::TransformerConfig& model,
                                     const generators::llm::ParallelConfig& parallel);
// Korthikanti et al. 2022 Table 2 for one layer and one micro-batch, in bytes.
double activation_bytes_per_layer(const generators::llm::TransformerConfig& model,
                                  const generators::llm::ParallelConfig& parallel);
// Parameters of the linear layers (QKV, projection, MLP GEMMs) of one layer on one TP rank.
double fp8_linear_parameters_per_layer(const generators::llm::TransformerConfig& model,
                                       const generators::llm::ParallelConfig& parallel);
// The same for a MoE layer: attention, shared experts (split by TP) and the local experts,
// whose grouped GEMMs Transformer Engine also runs in FP8. The router stays bf16.
double fp8_moe_linear_parameters_per_layer(const generators::llm::TransformerConfig& model,
                                           const generators::llm::ParallelConfig& parallel);
// Parameters of one transformer layer on one tensor-parallel rank.
double parameters_per_layer(const generators::llm::TransformerConfig& model,
                            const generators::llm::ParallelConfig& parallel);

// Mixture of experts (TransformerConfig::moe), per MoE layer on one rank: the parameters
// reduced over DP x CP (attention, norms, the router replicated over TP, shared experts split
// by TP), the local experts' (num_experts / EP experts, each split by ETP), and the activations:
// the dense formula with Korthikanti's MLP share (19 sbh/t) replaced by what the MoE block
// keeps for its backward (the router's input, router probabilities, top-k, the ETP-gathered
// expert input of s b / t x ETP x top_k x load tokens, the expert FC1 output and FC2 input, the
// combined rows, the shared experts' MLP tensors); load = min(moe_imbalance, capacity factor).
// Expert weights, gradients and optimizer state shard over the expert-DP group (TP x CP x DP / (ETP
// x EP)) with ZeRO.
double moe_dense_parameters_per_layer(const generators::llm::TransformerConfig& model,
                                      const generators::llm::ParallelConfig& parallel);
double expert_parameters_per_layer(const generators::llm::TransformerConfig& model,
                                   const generators::llm::ParallelConfig& parallel);
double moe_activation_bytes_per_layer(const generators::llm::TransformerConfig& model,
                                      const generators::llm::ParallelConfig& parallel);

// Multi-token prediction (TransformerConfig::mtp_num_layers) on the last stage: the modules'
// parameters (each a layer like the model's last, eh_proj [2h, h / t] and three norms; with PP >
// 1 the stage's own copy of the word embedding, v h / t), the experts of MoE modules, and their
// activations per micro-batch, counted once as the head's are: each module's layer, its
// embedding and concatenated normed pair (3 sbh elements, split by SP) and its head's
// 4 sbh / t (1 + v / h).
struct MtpMemory {
  double parameters = 0;
  double expert_parameters = 0;
  double activation_bytes = 0;
};
MtpMemory mtp_memory(const generators::llm::TransformerConfig& model,
                     const generators::llm::ParallelConfig& parallel);

struct StageMemory {
  int stage = 0;
  int layers = 0;
  double parameter_count = 0;
  double expert_parameter_count = 0;  // of which the local experts of MoE layers
  double microbatches_in_flight = 0;  // interleaving factor included
  Bytes parameter_bytes = 0;
  Bytes fp8_weight_bytes = 0;  // FP8 weight copies and transposes (FP8 recipe only)
  Bytes gradient_bytes = 0;
  Bytes optimizer_bytes = 0;
  Bytes activation_bytes = 0;  // transformer layers + embeddings/output layer
  // Transformer Engine's userbuffers under --tp-comm-overlap: ten of s b / CP x h elements
  // (TE's default ub config), FP8 for the six all-gather overlaps under the FP8 recipe.
  Bytes userbuffer_bytes = 0;
  // Transformer Engine's cuBLAS workspaces (generators/llm/llm_te_workspace.hpp): 32 MiB on
  // Hopper, 4 MiB before, x 3 with userbuffers, + 4 for MoE grouped GEMMs; 0 without a device.
  Bytes workspace_bytes = 0;
  Bytes context_bytes = 0;
  Bytes total_bytes = 0;
};

struct LlmMemoryEstimate {
  std::vector<StageMemory> stages;
  std::size_t worst_stage = 0;  // the stage with the largest total
  double activation_bytes_per_layer = 0;
  double moe_activation_bytes_per_layer = 0;  // a MoE layer's (0: a dense model)
  MemoryVerdict verdict;                      // for the worst stage
  const StageMemory& worst() const { return stages.at(worst_stage); }
};

// Validates the layout with generators::llm::validate (InputError("<parallel>", field, ...)).
LlmMemoryEstimate estimate_llm_memory(const generators::llm::TransformerConfig& model,
                                      const generators::llm::ParallelConfig& parallel,
                                      const DeviceMemory& device);

std::string format_llm_memory(const generators::llm::TransformerConfig& model,
                              const generators::llm::ParallelConfig& parallel,
                              const LlmMemoryEstimate& estimate, const DeviceMemory& device);

}  // namespace perfsim::memory

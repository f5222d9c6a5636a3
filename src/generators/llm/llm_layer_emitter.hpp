#pragma once
// The ops of one transformer layer on one tensor-parallel rank, forward and backward, as
// Megatron-LM runs them: column-parallel QKV and FC1, row-parallel projection and FC2, one
// all-reduce after each row-parallel GEMM (forward) and after each column-parallel input
// gradient (backward); with sequence parallelism all-gather before and reduce-scatter after
// instead, and the input all-gathered again in backward for the weight gradient (Korthikanti
// et al. 2022, Sec. 4.2.2). Also the embedding and the LM head of the end stages.
#include <functional>
#include <string>

#include "generators/llm/llm_local_shapes.hpp"
#include "generators/llm/llm_trace_builder.hpp"
#include "kernels/comm_hbm_traffic.hpp"

namespace perfsim::generators::llm {

// FP8 recipe: Transformer Engine's FP8 copy of a weight and its transpose, kept for the whole
// iteration (the forward reads the copy, the data gradient the transpose). Unset: the GEMMs
// read operands of their own (ZeRO-3 casts the gathered weights per use).
struct Fp8Copy {
  bool set = false;
  TensorRef copy;        // [k, n] as the forward GEMM reads it
  TensorRef transposed;  // [n, k]
};

// FP8 current scaling (LocalShapes::fp8_current_scaling; llm_fp8_current_scaling.cpp): where
// Transformer Engine's Float8CurrentScalingQuantizer finds the amax of a tensor it casts, and
// whether it MAX-reduces the amax over TP first. Delayed scaling ignores it.
enum class AmaxSource {
  kNone,    // no new scale: the cast stands for the transpose of data already in FP8
  kKernel,  // an amax kernel reads the tensor before the cast (nvte_compute_amax)
  kNorm,    // the layer norm before it wrote the amax with its output (TE LayerNormLinear)
};
struct Fp8Scaling {
  AmaxSource amax = AmaxSource::kNone;
  // TE Linear/LayerNormLinear with sequence parallelism: the input of a column-parallel layer
  // (forward) and the output gradient of a row-parallel one (backward) are quantized before
  // their all-gather with one scale over TP (with_amax_reduction over tp_group). Only with
  // SP and TP > 1.
  bool tp_all_reduce = false;
};
// A fresh cast of a layer's operand (no reduction), and the two kinds that reduce over TP.
inline constexpr Fp8Scaling kAmaxKernel{AmaxSource::kKernel, false};
inline constexpr Fp8Scaling kAmaxKernelTpReduced{AmaxSource::kKernel, true};
inline constexpr Fp8Scaling kAmaxNormTpReduced{AmaxSource::kNorm, true};

// The weight tensors one layer's GEMMs read. With ZeRO-3 they are views of the parameters
// all-gathered for this use, so the GEMMs wait for the all-gather.
struct LayerWeights {
  TensorRef qkv;   // [h, qkv_width]
  TensorRef proj;  // [heads_local * head_dim, h]
  TensorRef fc1;   // [h, fc1_width]; a MoE layer's shared experts: [h, shared_fc1_width]
  TensorRef fc2;   // [ffn_local, h]; shared experts: [shared_ffn_local, h]
  // A MoE layer: the router (replicated over TP) and this rank's experts, each split by TP.
  bool moe = false;
  TensorRef router;      // [h, experts]
  TensorRef expert_fc1;  // [experts_local, h, expert_fc1_width]
  TensorRef expert_fc2;  // [experts_local, expert_ffn_local, h]
  // Multi-latent attention (shapes.mla; `qkv` unset): the replicated down projections and the
  // column-parallel up projections (llm_mla_layer.cpp). proj is [heads_local * v_head_dim, h].
  bool mla = false;
  TensorRef q_down;   // [h, q_lora_rank]; unset without query compression
  TensorRef q_up;     // [q_lora_rank, heads_local (nope + rope)], or linear_q_proj [h, ...]
  TensorRef kv_down;  // [h, kv_lora_rank + qk_rope_head_dim]
  TensorRef kv_up;    // [kv_lora_rank, heads_local (nope + v_head_dim)]
  Fp8Copy qkv_fp8, proj_fp8, fc1_fp8, fc2_fp8;
  Fp8Copy q_down_fp8, q_up_fp8, kv_down_fp8, kv_up_fp8;  // multi-latent attention's
  Fp8Copy expert_fc1_fp8, expert_fc2_fp8;                // viewed [experts_local x in, out]
};

// The dense MLP's tensors its backward reads.
struct MlpSaved {
  TensorRef fc1, act, output;  // FC1 output (GeLU input), FC2 input, FC2 output
  // FP8 recipe: the inputs FC1 and FC2 save for their weight gradients (fp8_saved_input).
  TensorRef fc1_input_fp8, fc2_input_fp8;
};

// FP8 recipe, Transformer Engine's Linear / LayerNormLinear / GroupedLinear (TE 2.x
// module/linear.py and layernorm_linear.py _*.forward: the quantized input kept for the
// backward with its row-wise data dropped, "update_usage(rowwise_usage=False)", unless the
// backward must all-gather it; grouped_linear.py saves the quantized `inputmats`; TE 1.x saved
// `inputmat_t`, the FP8 transpose): the weight gradient reads an FP8 tensor the forward's cast
// made, 1 byte per element, and the bf16 input is freed unless another op keeps it. Which one:
// the cast's transpose [in, tokens] when the backward does not gather the input, the FP8 local
// rows [seq_local, b, h] the forward all-gathered (fp8_all_gather) when it does. Unset without
// FP8, and when the forward gathered the input in bf16 (blockwise scaling with SP, or
// --no-fp8-all-gather): the backward then gathers the kept bf16 local rows again, as before.

// The MoE block's tensors its backward reads (Megatron's router, dispatcher and experts).
struct MoeSaved {
  TensorRef probabilities;      // router scores [tokens, experts] (llm_moe_router.cpp)
  TensorRef top_probabilities;  // [tokens, top_k]
  TensorRef expert_input;       // the TP-gathered tokens of the local experts
  TensorRef fc1, act;           // expert FC1 output, FC2 input
  // FP8 recipe: the grouped linears' saved inputs, the casts' transposes (see MlpSaved).
  TensorRef expert_input_fp8, act_fp8;
  TensorRef returned;  // the rows unpermute combined (its backward keeps them)
  MlpSaved shared;     // shared experts (unset without them)
  // moe_grouped_gemm off (SequentialMLP): each local expert's MLP tensors, in expert order
  // (expert_input stays the whole rows; fc1, act and the FP8 inputs above stay unset).
  std::vector<MlpSaved> sequential;
  TensorRef routing_map;  // [tokens, experts] bool (the permute and unpermute read it)
};

// Megatron-Core's MoE kernel switches (ParallelConfig::moe_router_fusion, moe_permute_fusion,
// moe_router_force_load_balancing; README "The MoE layer's op inventory").
struct MoeKernelSwitches {
  bool router_fusion = false;
  bool permute_fusion = false;
  bool force_load_balancing = false;
  bool router_fp32 = false;  // ParallelConfig::moe_router_fp32 (moe_router_dtype "fp32")
  // ParallelConfig::moe_token_dispatcher flex, and its backend HybridEP (else DeepEP).
  bool flex = false;
  bool hybridep = false;
  bool pad_to_capacity = false;  // ParallelConfig::moe_pad_to_capacity
  bool grouped_gemm = true;      // ParallelConfig::moe_grouped_gemm (off: SequentialMLP)
};

// Multi-latent attention's tensors its backward reads: the down projections' outputs (the
// latent norms' inputs; the kv one with k_pe beside the latent), the normed latents (the up
// projections' inputs, this rank's SP tokens), and the query, key and value the attention
// keeps (new tensors, built by the rotary kernels).
struct MlaSaved {
  TensorRef q_compressed, q_normed, kv_combined, kv_normed;
  TensorRef query, key, value;
  // k_pe as the up projections' rope reads it (gathered over TP with SP, else a view of
  // kv_combined): an input of the mla_up_proj checkpoint, kept only with that recompute.
  TensorRef k_pe;
  // FP8 recipe: the inputs the TE linears save for their weight gradients (MlpSaved), the
  // casts' transposes. The down projections (TELinear, "duplicated") cast the rank's own
  // normed rows and save the transposes; ln1 is then kept only for linear_q_proj (no query
  // compression) when its input is gathered again or recomputed. The up projections (and
  // linear_q_proj) only when their backward does not gather the input again: with SP and
  // TP > 1 the latent reaches them gathered in bf16 (sequence_gather), so the bf16 local rows
  // stay, as for QKV without the FP8 all-gather.
  TensorRef q_down_input_fp8, kv_down_input_fp8, q_up_input_fp8, kv_up_input_fp8;
};

// What one layer's forward leaves for its backward (Korthikanti et al. 2022 Table 2: the norm
// inputs, the linear layers' inputs, Q, K, V, the GeLU input; the s x s softmax output and
// dropout output of unfused attention). Dropout masks are not tensors of the generated trace
// (the dropout op prices its mask as written bytes). With full recompute only `x` is kept.
struct ForwardSaved {
  TensorRef x, ln1, qkv, context, x1, ln2, output;
  // FP8 recipe: the inputs QKV and the projection save for their weight gradients (see
  // MlpSaved). The projection's is a copy beside the context the fused attention keeps.
  TensorRef qkv_input_fp8, proj_input_fp8;
  // Rotary embedding (model.rope()): the rotated queries and keys the attention reads and
  // keeps for its backward (Megatron-Core rotates q and k into new tensors; V stays a view of
  // the QKV output). Unset without rope.
  // With QK layer norm and no rope they are the normed q and k instead (new tensors too).
  TensorRef rotated_q, rotated_k;
  // QK layer norm (model.qk_layernorm): the fp32 inverse RMS of each q and k head row the norms'
  // backward reads beside their inputs (the q and k slices of the kept QKV output).
  TensorRef q_norm_rsigma, k_norm_rsigma;
  MlpSaved mlp;
  MlaSaved mla;                      // multi-latent attention (unset otherwise)
  TensorRef probabilities, dropped;  // unfused attention: softmax output, dropout output
  MoeSaved moe;
};

// What the LM head's forward leaves for its backward: the final norm's input and output, the
// fp32 softmax of the logits.
struct HeadSaved {
  TensorRef x, normed, softmax;
};

// One multi-token prediction module's weights (Megatron-Core's MultiTokenPredictionLayer):
// its transformer layer and eh_proj, column-parallel [2h, h / TP]. enorm, hnorm and the
// layer's final norm are counted as parameters only (no tensor of their own, like the layers'
// norms); the embedding and the output head are shared with the model.
struct MtpWeights {
  LayerWeights layer;
  TensorRef eh_proj;
  Fp8Copy eh_proj_fp8;
};

// What a module's forward leaves for its backward: the embedding of the shifted tokens
// (enorm's input), the hidden state it read (hnorm's input), the concatenated normed pair
// (eh_proj's input, this rank's SP tokens), its layer's and its head's saved tensors, and its
// output hidden state (the next module's input).
struct MtpSaved {
  TensorRef embedded, hidden, concatenated;
  // FP8 recipe: eh_proj's saved input, the cast's transpose, when its backward does not
  // gather the input again (no SP, or TP 1); unset otherwise (see MlaSaved).
  TensorRef concatenated_fp8;
  ForwardSaved layer;
  HeadSaved head;
  TensorRef output;
};

struct TensorParallelGroup {
  std::string name;
  int size = 1;
  // Neighbours in the TP ring (userbuffer ring exchange); -1 when unused.
  int next_rank = -1;
  int previous_rank = -1;
};

// How the backward TP collectives meet the GEMMs beside them.
struct TensorParallelOverlap {
  // The collectives run under the GEMMs that do not need them (Megatron's asynchronous
  // all-reduce / SP overlap); otherwise each is waited for.
  bool backward = true;
  // SMs the NCCL kernel holds while it runs (one CTA per channel); the GEMM under it gets the
  // rest (attribute "contention_sms", applied by the kernel models). 0: contention-free.
  int comm_sms = 0;
  // Transformer Engine userbuffers (ParallelConfig::tp_comm_overlap): the linear layers' SP
  // collectives split and pipelined with their GEMMs (llm_userbuffer_overlap.cpp).
  bool userbuffers = false;
  // Bus bandwidth of the TP collectives (ParallelConfig::bus_rates): with it the GEMMs beside
  // them also lose the HBM bandwidth they move ("contention_hbm_GBps"). 0: not modelled.
  double bus_GBps = 0;
};

// The expert-parallel group routed tokens are exchanged in (size 1: every expert local).
struct ExpertParallelGroup {
  std::string name;
  int size = 1;
  // The expert tensor-parallel group the received tokens are gathered over (ETP ranks).
  std::string tensor_name;
  int tensor_size = 1;
  // The router's token counts are summed over TP x CP (Megatron-Core's tp_cp_group: the
  // ranks holding the other parts of the same sequences).
  std::string router_name;
  int router_size = 1;
};

// This rank's neighbours in its context-parallel ring (size 1: no context parallelism).
struct ContextParallelRing {
  int size = 1;
  int next_rank = -1;
  int previous_rank = -1;
  double bus_GBps = 0;  // of the ring's send/recv (ParallelConfig::bus_rates), 0: not modelled
};

class LayerEmitter {
 public:
  LayerEmitter(const LocalShapes& shapes, const TransformerConfig& model, Recompute recompute,
               TensorParallelOverlap overlap, TensorParallelGroup tp, ContextParallelRing cp,
               ExpertParallelGroup ep, RankTraceBuilder& builder);
  // Bus bandwidths of the TP collectives and the CP ring (ParallelConfig::bus_rates).
  // Megatron-Core's --recompute-modules (used with Recompute::kSelective only).
  void set_recompute_modules(const RecomputeModules& modules) { modules_ = modules; }
  void set_moe_switches(const MoeKernelSwitches& switches) { moe_switches_ = switches; }
  // Megatron-Core's delay_wgrad_compute: the layers' weight-gradient ops are tagged as delayed
  // (llm_delayed_wgrad.hpp), for the combined 1F1B step to move.
  void set_delay_wgrad_compute(bool on) { delay_wgrad_ = on; }
  // Megatron-Core's moe_shared_expert_overlap (llm_moe_shared_overlap.cpp): the shared experts
  // in pieces beside the dispatcher's all-to-alls, which hold `comm_sms` SMs and move
  // `hbm_GBps` through HBM (0: not modelled).
  void set_shared_expert_overlap(bool on, int comm_sms, double hbm_GBps) {
    shared_overlap_ = {on, comm_sms, hbm_GBps};
  }
  void set_comm_bus_rates(double tp_GBps, double cp_GBps) {
    overlap_.bus_GBps = tp_GBps;
    cp_.bus_GBps = cp_GBps;
  }

  // Fresh weight tensors for one layer (their ids stay the same for every micro-batch); a MoE
  // layer's when `moe`.
  LayerWeights make_weights(bool moe = false);
  // Views of a flat parameter buffer (ZeRO-3 all-gather output).
  LayerWeights weights_in(const TensorRef& flat_parameters) const;

  // x and the result (ForwardSaved::output): [seq_local, batch, hidden].
  ForwardSaved forward(const TensorRef& x, const LayerWeights& weights);
  // Gradient of the layer output in, gradient of its input out; runs the recomputation the
  // recompute mode asks for first. `saved`: what forward returned for this micro-batch.
  TensorRef backward(const TensorRef& grad_output, const LayerWeights& weights,
                     const ForwardSaved& saved);

  // FP8 recipe: Transformer Engine casts each weight to FP8 (and its transpose) once per
  // iteration, at the first micro-batch (is_first_microbatch); no-op without FP8. The casts
  // write the weights' Fp8Copy when set. With FP8 primary weights only the transposes are made
  // (after the parameter gather, before the weight's first use).
  void cast_weights_to_fp8(const LayerWeights& weights);
  // The same for a multi-token prediction module: its layer and eh_proj.
  void cast_mtp_weights_to_fp8(const MtpWeights& weights);
  // Elements of the FP8 copies (copy and transpose; the transpose only with FP8 primary
  // weights) of a layer's linear weights.
  std::int64_t fp8_copy_elements(const LayerWeights& weights) const;
  // The layer's FP8 GEMMs per pass, one per Transformer Engine linear module and one per local
  // expert of each grouped linear (0 without FP8): the modules whose amaxes delayed scaling
  // records and reduces (llm_rank_generator.cpp reduce_delayed_amaxes).
  std::int64_t fp8_gemms(const LayerWeights& weights) const;
  // Places the layer's Fp8Copy in `buffer` (an FP8 tensor) from `offset_elements` on; returns
  // the offset past them. With FP8 primary weights (LocalShapes::fp8_params) the copy is the
  // weight itself and only the transpose is placed. No-op without FP8.
  std::int64_t place_fp8_copies(LayerWeights& weights, const TensorRef& buffer,
                                std::int64_t offset_elements);
  // The same for a multi-token prediction module: its layer's copies, then eh_proj's.
  std::int64_t place_mtp_fp8_copies(MtpWeights& weights, const TensorRef& buffer,
                                    std::int64_t offset_elements);

  // First stage: vocabulary-parallel embedding, then all-reduce (reduce-scatter with SP).
  TensorRef embedding_forward(const TensorRef& embedding_weight);
  void embedding_backward(const TensorRef& grad_output, const TensorRef& embedding_weight);
  // Last stage: final norm, logits (column-parallel over the vocabulary), vocabulary-parallel
  // cross entropy (three all-reduces of one value per token), and its backward.
  HeadSaved head_forward(const TensorRef& x, const TensorRef& head_weight);
  TensorRef head_backward(const TensorRef& head_weight, const HeadSaved& saved);

  // Multi-token prediction (llm_mtp_layer.cpp; last stage): a module's weights (its layer a MoE
  // layer when `moe`), its forward on the previous hidden state [seq_local, b, h] (the
  // embedding of the shifted tokens, enorm and hnorm, their concatenation, eh_proj with its
  // input gathered and its output all-gathered over TP and split back to the SP tokens, the
  // transformer layer, the shared head's final norm, logits and loss), and its backward:
  // `grad_output` the next module's gradient of this module's output (unset for the last),
  // returns the gradient of the hidden state it read; the embedding's backward included.
  MtpWeights make_mtp_weights(bool moe);
  MtpSaved mtp_forward(const TensorRef& hidden, const TensorRef& embedding_weight,
                       const TensorRef& head_weight, const MtpWeights& weights);
  TensorRef mtp_backward(const TensorRef& grad_output, const TensorRef& embedding_weight,
                         const TensorRef& head_weight, const MtpWeights& weights,
                         const MtpSaved& saved);
  // The sum of two gradients of a [seq_local, b, h] activation.
  TensorRef sum_gradients(const TensorRef& a, const TensorRef& b) {
    return elementwise("aten::add", {a, b}, {shapes_.seq_local, shapes_.batch, shapes_.hidden}, 1);
  }

 private:
  TensorRef activation(std::vector<std::int64_t> shape) {
    return builder_.tensor(std::move(shape));
  }
  // A linear layer's weight: bf16, or E4M3 with FP8 primary weights.
  TensorRef linear_weight(std::vector<std::int64_t> shape) {
    return builder_.tensor(std::move(shape), shapes_.fp8_params ? DType::kFloat8 : shapes_.dtype);
  }
  // The weight [rows, cols] ready for the iteration's FP8 GEMMs: cast with its transpose into
  // `copy`, or (FP8 primary weights) only its transpose written.
  void ready_fp8_weight(const TensorRef& weight, std::int64_t rows, std::int64_t cols,
                        const Fp8Copy& copy);
  // One weight's Fp8Copy in `buffer` from `offset` on (place_fp8_copies); returns the offset
  // past it.
  std::int64_t place_fp8_copy(const TensorRef& weight, Fp8Copy& copy, std::int64_t rows,
                              std::int64_t cols, const TensorRef& buffer, std::int64_t offset);
  TensorRef hidden_local() {
    return activation({shapes_.seq_local, shapes_.batch, shapes_.hidden});
  }
  TensorRef hidden_full() { return activation({shapes_.seq, shapes_.batch, shapes_.hidden}); }
  // `out_dtype`: the output's dtype (kUnknown: the activations').
  TensorRef mm(const TensorRef& a, const TensorRef& b, std::int64_t m, std::int64_t k,
               std::int64_t n, DType out_dtype = DType::kUnknown);
  TensorRef bmm(const TensorRef& a, const TensorRef& b, std::int64_t batch, std::int64_t m,
                std::int64_t k, std::int64_t n);
  TensorRef elementwise(const std::string& op, std::vector<TensorRef> inputs,
                        std::vector<std::int64_t> out_shape, double flops_per_element,
                        DType out_dtype = DType::kUnknown);
  // A linear layer's GEMMs: y = x W (forward), dX = dY W^T (data gradient), dW = X^T dY
  // (weight gradient). With FP8 the forward casts x first and every GEMM reads FP8 operands
  // (E4M3 weights and inputs, E5M2 gradients); the output is bf16.
  // `scaling`: how current scaling finds the scale of x's cast (not cast when x is FP8).
  // `saved_input`: receives the FP8 transpose of x the cast made (the input the layer saves
  // for its weight gradient, MlpSaved); unchanged when x is not cast here.
  TensorRef linear_forward(const TensorRef& x, const TensorRef& weight, const Fp8Copy& fp8,
                           std::int64_t m, std::int64_t k, std::int64_t n,
                           Fp8Scaling scaling = kAmaxKernel, TensorRef* saved_input = nullptr);
  // Whether a column-parallel layer's backward all-gathers its input again (SP, TP > 1).
  bool backward_gathers_input() const { return shapes_.sequence_parallel && tp_.size > 1; }
  // The gradient as the two backward GEMMs read it: itself, or (FP8) its E5M2 cast and the
  // cast's transpose from one fused cast-transpose kernel. `tp_reduced`: the output gradient
  // of a row-parallel layer with SP (current scaling reduces its amax over TP).
  TensorRef backward_operand(const TensorRef& grad, std::int64_t rows, std::int64_t cols,
                             bool tp_reduced = false, TensorRef* transposed = nullptr);
  // A grouped GEMM's operand [experts_local x per_expert, cols] (expert input or output
  // gradient) as backward_operand casts it. Current scaling quantizes each expert's rows
  // separately (tex.split_quantize: an amax, a scale and a cast per expert from TE's C++ loop);
  // delayed scaling casts them all in one fused kernel (nvte_multi_cast_transpose).
  // `transposed`: receives the cast's transpose (the grouped linear's saved input).
  TensorRef grouped_operand(const TensorRef& x, std::int64_t per_expert, std::int64_t cols,
                            TensorRef* transposed = nullptr);
  TensorRef data_gradient(const TensorRef& grad, const TensorRef& weight, const Fp8Copy& fp8,
                          std::int64_t tokens, std::int64_t out_width, std::int64_t in_width);
  // `cast_input`: with FP8, the input must be cast again (it was all-gathered in bf16).
  void weight_gradient(const TensorRef& input, const TensorRef& grad, std::int64_t in_width,
                       std::int64_t tokens, std::int64_t out_width, bool cast_input);
  // Transformer Engine's fused cast + transpose + amax: reads the bf16 tensor once, writes
  // the FP8 copy and its transpose (into `into` when set); returns the copy.
  // Current scaling: `scaling` says how its scale is found first (current_scale).
  // `transposed`: receives the transpose.
  TensorRef cast_transpose(const TensorRef& x, std::int64_t rows, std::int64_t cols,
                           const Fp8Copy& into = {}, Fp8Scaling scaling = {},
                           TensorRef* transposed = nullptr);
  // FP8 current scaling (llm_fp8_current_scaling.cpp), before the cast of x [rows, cols]:
  // the amax kernel (unless the norm wrote it), the amax's MAX all-reduce over TP when asked
  // for with SP, and the scale kernel. No-op under delayed scaling or with AmaxSource::kNone.
  void current_scale(const TensorRef& x, std::int64_t rows, std::int64_t cols, Fp8Scaling scaling);
  // Current scaling of an expert weight [experts_local x rows, cols] at its per-iteration
  // cast: GroupedLinear quantizes each expert's weight, an amax and a scale kernel each.
  void expert_weight_current_scale(const TensorRef& weight, std::int64_t rows, std::int64_t cols);
  // The E4M3 weight a GEMM reads under the FP8 recipe, as `shape`: the weight's FP8 copy (or
  // its transpose) cast_weights_to_fp8 made, else an operand of the GEMM's own (Fp8Copy unset).
  TensorRef fp8_weight_operand(const Fp8Copy& fp8, bool transposed,
                               std::vector<std::int64_t> shape) {
    return fp8.set ? builder_.alias(transposed ? fp8.transposed : fp8.copy, std::move(shape),
                                    DType::kFloat8)
                   : builder_.tensor(std::move(shape), DType::kFloat8);
  }
  // A saved tensor as the backward reads it (its own id, the saved storage).
  TensorRef saved_operand(const TensorRef& saved, std::vector<std::int64_t> shape,
                          DType dtype = DType::kUnknown) {
    return builder_.alias(saved, std::move(shape), dtype == DType::kUnknown ? saved.dtype : dtype);
  }
  TensorRef dropout(const TensorRef& x);
  TensorRef dropout_backward(const TensorRef& grad);
  // TP collectives (no-ops when TP = 1). gather: [seq_local] -> [seq] with SP, identity
  // without; reduce: [seq] -> all-reduced [seq] without SP, reduce-scattered [seq_local] with.
  TensorRef tp_gather(const TensorRef& local);
  // The input of a column-parallel linear layer, gathered over TP with SP: in bf16, or cast to
  // FP8 first with fp8_all_gather.
  // `scaling`: the forward's quantization of the input (kNone: the backward's re-gather of an
  // input quantized in the forward).
  // `saved_local`: receives the FP8 local rows the forward's cast made (the input a
  // column-parallel layer saves for its backward's re-gather); unchanged when none were made.
  TensorRef gather_linear_input(const TensorRef& local, Fp8Scaling scaling = {},
                                TensorRef* saved_local = nullptr);
  TensorRef tp_reduce(const TensorRef& full);
  // Backward of norm -> column-parallel linear: data gradient (reduced over TP), weight
  // gradient, norm backward; returns the gradient of the norm's input.
  // `norm_input` and `normed`: the saved input and output of the norm; `saved_input_fp8`: the
  // layer's saved FP8 input (MlpSaved), which the weight gradient reads instead when set.
  TensorRef norm_input_backward(const TensorRef& grad_output, const TensorRef& weight,
                                const Fp8Copy& fp8, std::int64_t width, const TensorRef& norm_input,
                                const TensorRef& normed, const TensorRef& saved_input_fp8 = {});
  // An expert weight as a grouped GEMM reads it, [experts_local, k, n]: itself, or with FP8
  // its E4M3 copy (`transposed`: the transpose) made by cast_weights_to_fp8.
  TensorRef expert_weight_operand(const TensorRef& weight, const Fp8Copy& fp8, bool transposed,
                                  std::int64_t k, std::int64_t n);
  // The router's load-balancing auxiliary loss (Megatron's default moe_router_load_balancing
  // _type aux_loss, Switch Transformer; llm_moe_router.cpp): its scores and routing map, the
  // experts' token counts (all-reduced over TP x CP), the loss and its logging; backward returns
  // the logits' share of the loss's gradient [tokens, experts].
  // seq_aux_loss (MixtureOfExperts::sequence_aux_loss) is the same loss per sequence: counts
  // per (sequence, expert), the loss divided by the micro-batch.
  TensorRef load_balancing_loss_forward(const TensorRef& logits, std::int64_t tokens);
  TensorRef load_balancing_loss_backward(const TensorRef& saved_scores, std::int64_t tokens);
  // The attention core's output; unfused attention also its softmax and dropout outputs.
  struct AttentionSaved {
    TensorRef context, probabilities, dropped;
  };
  // `rotated_q`, `rotated_k`: the rotary embedding's outputs, or unset (then q and k are
  // views of the QKV output).
  AttentionSaved attention_core_forward(const TensorRef& qkv, const TensorRef& rotated_q = {},
                                        const TensorRef& rotated_k = {});
  // Rotary position embedding of q [b, heads_local, s, d] or k [b, kv_heads_local, s, d] (the
  // local heads after TP, the CP share of the sequence): Transformer Engine's fused kernel (one
  // pass reading the tensor and the fp32 [s, d] frequencies, writing the rotated copy), or with
  // rope_fusion off Megatron's PyTorch path (_apply_rotary_pos_emb_bshd: rotate_half's neg and
  // cat, t x cos, rotate_half(t) x sin, their sum, the cat with the unrotated rest).
  // `d`: the rotated head dimension (the head, or multi-latent attention's rope part).
  TensorRef rope_forward(const TensorRef& qkv, std::int64_t heads, std::int64_t d);
  // Gradient of the rotated tensor in (a view of the attention's QKV gradient), written over
  // itself: the fused backward kernel, or the autograd nodes of the PyTorch path (the two
  // multiplies, rotate_half's neg and cat, the sum of both paths).
  // QK layer norm (Megatron-Core's q_layernorm / k_layernorm, TENorm: RMSNorm over each head's
  // d values) of q [b, heads_local, s, d] or k: one memory-bound kernel reading the slice of the
  // QKV output, writing the normed tensor and the fp32 inverse RMS per head row (`rsigma`).
  TensorRef qk_norm_forward(const TensorRef& qkv, std::int64_t heads, TensorRef& rsigma);
  // Its backward, in place on the slice of the QKV gradient at `offset_elements` (as
  // rope_backward): reads the gradient, the saved input slice and rsigma.
  void qk_norm_backward(const TensorRef& grad_qkv, const TensorRef& saved_qkv,
                        const TensorRef& rsigma, std::int64_t heads, std::int64_t offset_elements);
  // Sliding-window attention in the layer being emitted (the builder's layer index).
  bool windowed_layer() const {
    return builder_.layer() >= 0 && model_.windowed_layer(builder_.layer());
  }
  void rope_backward(const TensorRef& grad_qkv, std::int64_t heads, std::int64_t d,
                     std::int64_t offset_elements);
  // Multi-latent attention (llm_mla_layer.cpp), Megatron-Core's MLASelfAttention with
  // Transformer Engine modules: linear_q_down_proj and linear_kv_down_proj (TELinear
  // "duplicated": whole weights on every TP rank, on this rank's SP tokens), q_layernorm and
  // kv_layernorm on the latents, the latents all-gathered over TP (SP) into the column-parallel
  // linear_q_up_proj and linear_kv_up_proj, the shared k_pe all-gathered too; the rope parts
  // rotated (Megatron's fused MLA rope kernels, or rotate-half and the cats), flash attention
  // with q/k head dimension nope + rope and v head dimension v_head_dim. In: the normed layer
  // input [seq_local, b, h]; out: the attention's context [tokens, heads_local v_head_dim].
  TensorRef mla_attention_forward(const TensorRef& normed, const LayerWeights& weights,
                                  MlaSaved& saved);
  // The rotary embedding of the up projections' outputs `q` and `kv` and of `k_pe`: writes
  // saved.query, key and value.
  void mla_rope_forward(const TensorRef& q, const TensorRef& kv, const TensorRef& k_pe,
                        MlaSaved& saved);
  // The mla_up_proj recompute (llm_recompute_modules.hpp): the latent norms, the up
  // projections' gathers and GEMMs and the rope again, from the kept down projections' outputs
  // and k_pe (`normed`: the input norm's output, linear_q_proj's input without q_lora_rank).
  // Returns `kept` with the remade normed latents, query, key and value.
  // linear_q_up_proj (or linear_q_proj) and linear_kv_up_proj on their (gathered) inputs,
  // then the rotary embedding; records the FP8 inputs they save (MlaSaved).
  void mla_up_projections(const TensorRef& q_input, const TensorRef& kv_input,
                          const TensorRef& k_pe, const LayerWeights& weights, MlaSaved& saved);
  MlaSaved mla_recompute_up_proj(const MlaSaved& kept, const TensorRef& normed,
                                 const LayerWeights& weights);
  // Gradient of the context in; gradient of the input layer norm's input out (its backward
  // included). The latents' data gradients are reduce-scattered over TP (all-reduced without
  // SP), their inputs gathered again for the weight gradients; no collective on h.
  TensorRef mla_attention_backward(const TensorRef& grad_context, const LayerWeights& weights,
                                   const ForwardSaved& saved);
  // Context parallelism: the CP ring of LayerEmitter::ring_attention_forward on MLA's query,
  // key and value (K and V of different head dimensions in one exchanged buffer).
  TensorRef mla_ring_attention_forward(const MlaSaved& saved);
  // `output`: the attention's output O, which the fused backward reads (and so keeps).
  TensorRef mla_ring_attention_backward(const TensorRef& grad_context, const MlaSaved& saved,
                                        const TensorRef& output);
  // How FP8 current scaling finds the scale of the query up projection's input.
  Fp8Scaling q_up_scaling() const;
  // [seq_local x b, width] rows of this rank's tokens all-gathered over TP with SP
  // ([tokens, width]); identity without SP or TP.
  TensorRef sequence_gather(const TensorRef& local, std::int64_t width);
  // The weight-gradient input of a layer whose input is such gathered rows (MLA's up
  // projections, MTP's eh_proj): its saved FP8 transpose [width, tokens], else the kept bf16
  // local rows [seq_local x b, width] gathered again.
  TensorRef saved_wgrad_input(const TensorRef& saved_fp8, const TensorRef& local,
                              std::int64_t width);
  // The weight-gradient input of a layer that does not gather it: the FP8 transpose its
  // forward's cast saved (`fp8`, read as `fp8_shape`), else the bf16 tensor the layer kept
  // (`bf16`, read as `bf16_shape`).
  TensorRef saved_wgrad_operand(const TensorRef& fp8, std::vector<std::int64_t> fp8_shape,
                                const TensorRef& bf16, std::vector<std::int64_t> bf16_shape) {
    return fp8.tensor_id >= 0 ? saved_operand(fp8, std::move(fp8_shape))
                              : saved_operand(bf16, std::move(bf16_shape));
  }
  // The reverse for a partial gradient [tokens, width]: reduce-scattered with SP, all-reduced
  // without (TP > 1).
  TensorRef sequence_reduce(const TensorRef& full, std::int64_t width);
  // An MLP's activation on FC1's output: SwiGLU for gated FFNs, else GeLU ([rows, ffn] in and
  // out); returns [rows, ffn]. Its backward takes the gradient of that output and reads the
  // saved FC1 output; returns the gradient of FC1's output. Dense layers, shared and routed
  // experts alike.
  TensorRef ffn_activation(const TensorRef& fc1, std::int64_t rows, std::int64_t ffn);
  TensorRef ffn_activation_backward(const TensorRef& grad_act, const TensorRef& saved_fc1,
                                    std::int64_t rows, std::int64_t ffn);
  // Megatron-Core's SwiGLU on FC1's output [rows, 2 ffn] (gate and up halves): the fused
  // bias_swiglu kernel (bias_activation_fusion: reads gate and up, writes their product) or
  // PyTorch's sigmoid and two multiplies; returns [rows, ffn].
  TensorRef swiglu_forward(const TensorRef& fc1, std::int64_t rows, std::int64_t ffn);
  // Gradient of the SwiGLU output [rows, ffn] in, of FC1's output [rows, 2 ffn] out; reads
  // the saved FC1 output (the fused kernel's only saved tensor).
  TensorRef swiglu_backward(const TensorRef& grad_act, const TensorRef& saved_fc1,
                            std::int64_t rows, std::int64_t ffn);
  // Megatron's FusedScaleMaskSoftmax on the [bh, s, s] scores: its fused causal kernel, or
  // where that kernel is not available (megatron_fused_softmax.hpp) PyTorch's fallback, five
  // eager ops in fp32 (Megatron scales the query-key product by the layer number and then
  // forces the softmax into fp32): cast up, scale, mask, softmax, cast down. `probabilities`:
  // what the dropout reads; `saved`: what the softmax backward reads (fp32 in the fallback).
  struct ScaleMaskSoftmax {
    TensorRef probabilities, saved;
  };
  ScaleMaskSoftmax scale_mask_softmax(const TensorRef& scores, std::int64_t bh, std::int64_t s);
  // Its backward: one fused kernel, or the autograd nodes of the fallback's five ops.
  TensorRef scale_mask_softmax_backward(const TensorRef& grad_probabilities, const TensorRef& saved,
                                        std::int64_t bh, std::int64_t s);
  TensorRef cast(const TensorRef& x, DType to);
  // One fused-attention op (`inputs` as PyTorch records them: forward q, k, v; backward
  // grad_out, q, k, v) with its "is_causal" attribute (1: the kernel skips masked tiles, half
  // the work); `flops` is what it computes.
  void flash_attention(std::string op_name, std::vector<TensorRef> inputs, TensorRef output,
                       bool causal, double flops);
  // Ring attention (Megatron CP): CP steps of flash attention of the local queries against
  // one K/V chunk each; before every step but the last the chunk in hand is sent to the next
  // rank and the next one received from the previous rank, under the step's attention.
  // Causal load balancing (the sequence cut into 2 CP chunks, rank r holding chunks r and
  // 2 CP - 1 - r): the first step is the causal attention of the local tokens to themselves,
  // every later step attends half of one side to the other side in full (an earlier rank's
  // first chunk, or a later rank's chunks from the local second chunk), so each step does
  // half of the unmasked work and every rank the same. The later steps are emitted as the
  // local queries against half a chunk of keys (the same work for either side, so every CP
  // rank keeps its stage's template). Backward: the same ring with the K/V chunk and its
  // gradient.
  // `q` and `own_k`: the local queries and keys as the attention reads them (rotated with
  // rope, else views of `qkv`); the chunk exchanged is K and V from `qkv`.
  TensorRef ring_attention_forward(const TensorRef& qkv, const TensorRef& q,
                                   const TensorRef& own_k);
  // `output`: the attention's output O, which the fused backward reads (and so keeps).
  TensorRef ring_attention_backward(const TensorRef& grad_context, const TensorRef& saved_qkv,
                                    const TensorRef& saved_q, const TensorRef& saved_k,
                                    const TensorRef& output);
  // Posts the exchange of one chunk of `elements` around the ring; returns the received one.
  TensorRef exchange_chunk(const TensorRef& chunk);
  TensorRef attention_core_backward(const TensorRef& grad_context, const ForwardSaved& saved);
  // MoE block (llm_moe_layer.cpp), Megatron's alltoall token dispatcher: router GEMM, softmax
  // and top-k on this rank's tokens; permute (copy each token once per chosen expert); all-to-
  // all(v) over EP; all-gather over TP (expert TP = TP); grouped GEMMs of the local experts;
  // reduce-scatter over TP; all-to-all back; unpermute (weighted sum of each token's k rows).
  // Shared experts run as a dense MLP beside them. In: the normed input [seq_local, b, h];
  // out: the block output before dropout and residual, [seq_local, b, h].
  TensorRef moe_forward(const TensorRef& normed, const LayerWeights& weights, MoeSaved& saved);
  // Gradient of the block output in ([seq_local, b, h]), gradient of the norm input out.
  TensorRef moe_backward(const TensorRef& grad_output, const LayerWeights& weights,
                         const ForwardSaved& saved);
  // The routed tokens over EP (dispatch: dispatched -> received rows; combine: back).
  TensorRef expert_all_to_all(const TensorRef& rows, std::int64_t out_rows);
  // Rows of `rows` tokens gathered over TP ([rows x TP, width]) / reduce-scattered back.
  TensorRef tp_gather_rows(const TensorRef& local, std::int64_t rows, std::int64_t width);
  TensorRef tp_reduce_scatter_rows(const TensorRef& full, std::int64_t rows, std::int64_t width);
  // One grouped GEMM over the local experts (Transformer Engine GroupedLinear): each expert's
  // [tokens_per_expert, k] rows times its [k, n] weight.
  TensorRef grouped_gemm(const TensorRef& a, const TensorRef& b, std::int64_t m, std::int64_t k,
                         std::int64_t n);
  std::int64_t tokens_per_expert() const;
  // The local experts as Transformer Engine's grouped linears (TEGroupedMLP): FC1, the
  // activation, FC2 on the rows [experts_local x tokens_per_expert, h]; forward fills
  // saved.fc1 / act (and their FP8 inputs) and returns FC2's rows; backward takes their
  // gradient and returns that of the input rows.
  TensorRef grouped_experts_forward(const TensorRef& expert_input, const LayerWeights& weights,
                                    MoeSaved& saved);
  TensorRef grouped_experts_backward(const TensorRef& grad_expert_output,
                                     const LayerWeights& weights, const MoeSaved& saved);
  // Megatron-Core's SequentialMLP (moe_grouped_gemm off; llm_moe_sequential.cpp): each local
  // expert an MLP of its own on its split of the rows [experts_local x tokens_per_expert, h],
  // one Transformer Engine Linear per projection, the outputs concatenated. Forward returns
  // FC2's rows and fills saved.sequential; backward takes the gradient of those rows and
  // returns that of the input rows.
  TensorRef sequential_experts_forward(const TensorRef& expert_input, const LayerWeights& weights,
                                       MoeSaved& saved);
  TensorRef sequential_experts_backward(const TensorRef& grad_expert_output,
                                        const LayerWeights& weights, const MoeSaved& saved);
  // The host path of Megatron-Core's alltoall dispatcher and TE's GroupedLinear
  // (llm_moe_host_path.cpp). dispatcher_token_counts: the preprocess's token counts over this
  // rank's `tokens`, their all-gather over the ETP x EP group, the device-to-host copies;
  // dispatcher_wait: the host waits for those copies (once per MoE forward).
  void dispatcher_token_counts(std::int64_t tokens);
  void dispatcher_wait();
  // The launches of the local experts after the first in one grouped GEMM (TE's C++ loop), and
  // the dummy weight gradients of one grouped linear's backward (a Python loop per expert).
  void expert_gemm_launches();
  void expert_dummy_wgrads();
  // The router after its GEMM (llm_moe_router.cpp): random logits (force load balancing), top-k
  // with the score function and the aux loss, fused (TE) or as PyTorch ops; returns the dense
  // routing probabilities [tokens, experts] and sets saved.probabilities, top_probabilities and
  // routing_map. Backward: the probabilities' gradient [tokens, experts] in, the logits' out.
  TensorRef router_forward(const TensorRef& logits, std::int64_t tokens, MoeSaved& saved);
  TensorRef router_backward(const TensorRef& grad_probabilities, const MoeSaved& saved,
                            std::int64_t tokens);
  // Megatron-Core's apply_router_token_dropping (llm_moe_token_drop.cpp), with a capacity
  // factor: the probabilities [tokens, experts] in, those kept (x the capacity mask) out;
  // saved.routing_map becomes the map kept (padded: the capacity mask). Backward: the
  // probabilities' gradient times the map.
  TensorRef router_token_dropping(const TensorRef& probabilities, std::int64_t tokens,
                                  MoeSaved& saved);
  TensorRef router_token_dropping_backward(const TensorRef& grad, std::int64_t tokens);
  bool drops_tokens() const { return model_.moe.capacity_factor > 0; }
  // The router's pieces (llm_moe_router.cpp): the dtype of its logits (fp32 with
  // moe_router_dtype fp32, else the activations'); compute_topk (plain top-k, or
  // group_limited_topk with moe_router_num_groups) returning values and indices; the unfused
  // score functions' top-k; the k probabilities normalized and scaled; the router GEMM's
  // backward (fp32: casts and TF32 GEMMs). Backward pieces return the gradient of their input.
  DType router_logits_dtype() const;
  std::pair<TensorRef, TensorRef> router_topk(const TensorRef& scores, std::int64_t tokens);
  TensorRef softmax_topk(const TensorRef& logits, std::int64_t tokens, TensorRef& top_indices,
                         MoeSaved& saved);
  TensorRef sigmoid_topk(const TensorRef& logits, std::int64_t tokens, TensorRef& top_indices,
                         MoeSaved& saved);
  TensorRef normalize_and_scale_topk(const TensorRef& top_scores, std::int64_t tokens);
  TensorRef normalize_and_scale_topk_backward(const TensorRef& grad, std::int64_t tokens);
  TensorRef sigmoid_topk_backward(const TensorRef& grad_top, std::int64_t tokens);
  TensorRef sum_normalized_backward(const TensorRef& grad, std::vector<std::int64_t> shape,
                                    DType dtype);
  TensorRef router_gemm_backward(const TensorRef& grad_logits, const LayerWeights& weights,
                                 const TensorRef& router_input, std::int64_t tokens);
  // The dispatcher's data movement (llm_moe_permute.cpp), fused (TE's Triton kernels) or
  // PyTorch ops (masked_select synchronizes the host). permute: tokens [tokens, h] and dense
  // probabilities -> [dispatched, h] rows and their [dispatched] fp32 probabilities.
  struct Permuted {
    TensorRef rows, probabilities;
  };
  // `rows` and `map_experts`: the permuted rows and the routing map's width, the alltoall
  // dispatcher's (dispatched_tokens, experts) when -1; the flex dispatcher permutes the
  // received tokens to its local experts' rows (received_tokens, experts_local).
  // permute's drop_and_pad path without moe_permute_fusion (llm_moe_token_drop.cpp): each
  // expert's first `capacity` token indices by an argsort of the transposed map, no host wait.
  Permuted padded_permute(const TensorRef& token_rows, const TensorRef& probabilities,
                          const TensorRef& routing_map, std::int64_t token_count, std::int64_t rows,
                          std::int64_t experts);
  Permuted permute_tokens(const TensorRef& tokens, const TensorRef& probabilities,
                          const TensorRef& routing_map, std::int64_t token_count,
                          std::int64_t rows = -1, std::int64_t map_experts = -1);
  TensorRef unpermute_tokens(const TensorRef& rows, const TensorRef& routing_map,
                             std::int64_t token_count, std::int64_t row_count = -1);
  // `combined_rows`: the rows the forward unpermuted, which perfsim keeps for this backward as
  // TE's unpermute with probabilities did (Megatron-Core <= 0.13; the memory closed form counts
  // them); 0.14+ keeps only the row-id map.
  TensorRef unpermute_backward(const TensorRef& grad_tokens, const TensorRef& combined_rows,
                               const TensorRef& routing_map, std::int64_t token_count,
                               std::int64_t row_count = -1);
  // Permute backward: the rows' and probabilities' gradients -> the tokens' [tokens, h] and
  // the dense probabilities' [tokens, experts] gradients.
  Permuted permute_backward(const TensorRef& grad_rows, const TensorRef& grad_probabilities,
                            const TensorRef& routing_map, std::int64_t token_count,
                            std::int64_t rows = -1, std::int64_t map_experts = -1);
  // The alltoall dispatcher's dispatch (the token counts, permute, host wait, all-to-alls of
  // the rows and probabilities, ETP gather, chunk sort; returns the experts' input rows) and
  // its backward (the probabilities' and rows' gradients back to [tokens, experts] and
  // [tokens, h]; `routing_map` as the permute's autograd context keeps it).
  // `beside_all_to_alls` emits what runs while the all-to-alls are in flight (the shared
  // experts' pieces under moe_shared_expert_overlap).
  TensorRef alltoall_dispatch(const TensorRef& normed, const TensorRef& probabilities,
                              MoeSaved& saved, std::int64_t tokens,
                              const std::function<void()>& beside_all_to_alls);
  Permuted alltoall_dispatch_backward(const TensorRef& grad_expert_input,
                                      const TensorRef& routing_map, std::int64_t tokens,
                                      const std::function<void()>& beside_all_to_alls);
  // Megatron-Core's flex token dispatcher (llm_moe_flex.cpp), DeepEP or HybridEP: the layout
  // kernel, the fused dispatch of this rank's tokens (kHierarchicalAllToAll on the EP stream;
  // DeepEP: the host waits first for the received-token count), the received tokens permuted
  // to the local experts' rows. Returns the experts' input rows [received_tokens, h].
  TensorRef flex_dispatch(const TensorRef& normed, const TensorRef& routing_map,
                          std::int64_t tokens);
  // The experts' output rows unpermuted (each received token's rows summed) and combined back
  // to this rank's tokens [tokens, h]; `kept` receives the rows the unpermute read.
  TensorRef flex_combine(const TensorRef& expert_output, std::int64_t tokens, TensorRef& kept);
  // Backward: the output gradient dispatched to the experts' ranks and copied to their rows;
  // the rows' gradients summed per received token and combined back, with the probabilities'
  // gradients ([tokens, h] and [tokens, experts]).
  TensorRef flex_combine_backward(const TensorRef& grad_tokens, const TensorRef& kept,
                                  std::int64_t tokens);
  Permuted flex_dispatch_backward(const TensorRef& grad_rows, std::int64_t tokens);
  // One fused dispatch or combine (or their backwards): `input` and `output` as the kernels
  // read and write them, priced by the node- and GPU-level copies (LocalShapes::flex_*).
  TensorRef flex_exchange(const TensorRef& input, const TensorRef& output);
  // The permuted probabilities over EP (all-to-all-v of fp32 values, one per row).
  TensorRef probabilities_all_to_all(const TensorRef& probabilities, std::int64_t out_rows);
  // sort_chunks_by_idxs with the probabilities (dispatch) or without (combine): `backward`
  // runs its autograd backward (no chunk map to build, the forward's is kept).
  Permuted sort_chunks(const TensorRef& rows, const TensorRef& probabilities,
                       std::int64_t row_count, std::int64_t width, bool backward);
  // The dense MLP on the gathered normed input: fc1, activation, fc2 (width ffn_local).
  // With `userbuffers` the input is the local normed rows and the output is reduce-scattered
  // (fc1 by ring exchange, fc2 pipelined with its reduce-scatter).
  // `fc1_scaling`: how current scaling scales FC1's input (a dense layer's norm is fused into
  // FC1, TE LayerNormLinear; the shared experts' FC1 reads the MoE block's own norm). `saved`
  // may hold FC1's saved input already: the FP8 local rows gather_linear_input kept when it
  // gathered `normed_full` (fp8_all_gather), which FC1 then does not save again.
  void mlp_forward(const TensorRef& normed_full, const LayerWeights& weights,
                   std::int64_t ffn_local, std::int64_t fc1_width, Fp8Scaling fc1_scaling,
                   bool userbuffers, MlpSaved& saved);
  // A dense layer's MLP block from the pre-MLP norm's local output: the input gathered over TP
  // (or ring-exchanged with userbuffers), mlp_forward, FC2's reduction; returns the reduced
  // output. The forward and the mlp recompute module both emit it.
  TensorRef dense_mlp_forward(const TensorRef& normed, const LayerWeights& weights,
                              MlpSaved& saved);
  // A MoE layer's shared experts from the block's input, outside the dispatcher's overlap: the
  // TP gather, mlp_forward, the reduction; returns the reduced output (the forward and the
  // shared_experts recompute module).
  TensorRef shared_experts_forward(const TensorRef& normed, const LayerWeights& weights,
                                   MlpSaved& saved);
  // mlp_forward's two halves: fc1 and the activation (saved.fc1, saved.act), then fc2
  // (saved.output).
  void mlp_fc1_forward(const TensorRef& normed_full, const LayerWeights& weights,
                       std::int64_t ffn_local, std::int64_t fc1_width, Fp8Scaling fc1_scaling,
                       bool userbuffers, MlpSaved& saved);
  void mlp_fc2_forward(const LayerWeights& weights, std::int64_t ffn_local, bool userbuffers,
                       MlpSaved& saved);
  // Gradient of the MLP output (gathered, [tokens, h]) in; gradient of fc1's output out.
  // With `userbuffers` the gradient is the local rows, gathered by ring exchange under fc2's
  // data-gradient GEMM.
  TensorRef mlp_backward(const TensorRef& grad_mlp, const LayerWeights& weights,
                         const MlpSaved& saved, std::int64_t ffn_local, bool userbuffers = false);
  // Transformer Engine userbuffer overlap (llm_userbuffer_overlap.cpp), TE's default ub config.
  bool userbuffers() const { return overlap_.userbuffers && tp_.size > 1; }
  // The HBM bandwidth a TP (CP ring) transfer of `kind` moves while it runs.
  double tp_hbm_GBps(CollectiveKind kind, kernels::CommDataPath path) const {
    return kernels::hbm_bytes_per_bus_byte(kind, path) * overlap_.bus_GBps;
  }
  double cp_hbm_GBps(CollectiveKind kind) const {
    return kernels::hbm_bytes_per_bus_byte(kind, kernels::CommDataPath::kNcclStaged) * cp_.bus_GBps;
  }
  // qkv_fprop / fc1_fprop ("ring_exchange"): the input's TP chunks pass around the TP ring, the
  // GEMM of each chunk under the exchange of the next. In: the local normed rows
  // [seq_local, b, h]; out: the GEMM output [tokens, n].
  // `saved_local`: receives the FP8 local rows (fp8_all_gather) the layer saves.
  TensorRef ring_exchange_forward(const TensorRef& local, const TensorRef& weight,
                                  const Fp8Copy& fp8, std::int64_t n,
                                  TensorRef* saved_local = nullptr);
  // proj_fprop / fc2_fprop ("pipeline"): the GEMM in kUserbufferPipelineSplits chunks of tokens,
  // each chunk's reduce-scatter under the next chunk's GEMM. In: [tokens, k]; out: the
  // reduce-scattered [seq_local, b, h].
  // `saved_input`: receives the FP8 transpose of the input the cast made.
  TensorRef pipelined_reduce_scatter_forward(const TensorRef& input, const TensorRef& weight,
                                             const Fp8Copy& fp8, std::int64_t k,
                                             TensorRef* saved_input = nullptr);
  // proj_dgrad / fc2_dgrad ("ring_exchange"): the output gradient's TP chunks pass around the
  // ring under the data-gradient GEMM chunks. In: the local gradient [seq_local, b, h]; out: dX
  // [tokens, in_width]; `gathered` receives the gathered gradient the weight gradient reads.
  TensorRef ring_exchange_data_gradient(const TensorRef& grad_local, const TensorRef& weight,
                                        const Fp8Copy& fp8, std::int64_t in_width,
                                        TensorRef& gathered);
  // The ring under GEMM chunks both ring exchanges run: at each of the TP steps the chunk in
  // hand [seq_local x b, h] (`chunk`, this rank's first) times `operand` [h, n] writes that
  // chunk's rows of `out` [tokens, n], while the chunk goes on to the next TP rank.
  void ring_exchange_gemms(TensorRef chunk, const TensorRef& operand, std::int64_t n,
                           const TensorRef& out);
  // One step of the TP ring: sends `chunk` to the next TP rank, returns the previous one's.
  TensorRef exchange_tp_chunk(const TensorRef& chunk);
  ForwardSaved run_forward(const TensorRef& x, const LayerWeights& weights);

  LocalShapes shapes_;
  const TransformerConfig& model_;
  Recompute recompute_;
  RecomputeModules modules_;
  // Whether selective recompute covers `module` (a RecomputeModules flag).
  bool recomputes(bool RecomputeModules::*module) const {
    return recompute_ == Recompute::kSelective && modules_.*module;
  }
  TensorParallelOverlap overlap_;
  TensorParallelGroup tp_;
  ContextParallelRing cp_;
  ExpertParallelGroup ep_;
  MoeKernelSwitches moe_switches_;
  bool delay_wgrad_ = false;
  struct SharedExpertOverlap {
    bool on = false;
    int comm_sms = 0;
    double hbm_GBps = 0;
  } shared_overlap_;
  // With moe_shared_expert_overlap and shared experts (llm_moe_shared_overlap.cpp), Megatron's
  // SharedExpertMLP calls from the dispatcher: pre_forward_comm (the input's SP all-gather,
  // before the permute), fc1 and the activation beside the dispatch all-to-all, fc2 and
  // post_forward_comm (its TP reduction) beside the combine all-to-all; in the backward fc2's
  // backward beside the combine's all-to-all backward, fc1's (and its input's reduction and the
  // norm's backward) beside the dispatch's.
  bool shared_experts_overlapped() const;
  TensorRef shared_expert_input(const TensorRef& normed, TensorRef* saved_local);
  void shared_expert_fc1_beside(const TensorRef& input, const LayerWeights& weights,
                                MlpSaved& saved);
  TensorRef shared_expert_fc2_beside(const LayerWeights& weights, MlpSaved& saved);
  TensorRef shared_expert_fc2_backward_beside(const TensorRef& grad_output,
                                              const LayerWeights& weights, const MlpSaved& saved);
  TensorRef shared_expert_fc1_backward_beside(const TensorRef& grad_fc1,
                                              const LayerWeights& weights,
                                              const ForwardSaved& layer);
  RankTraceBuilder& builder_;
};

}  // namespace perfsim::generators::llm

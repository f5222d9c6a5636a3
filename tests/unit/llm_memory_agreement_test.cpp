// The memory closed forms (memory/llm_memory.hpp) against the allocator replay
// (memory/trace_memory.hpp) of the generated trace of pipeline stage 0, for small models
// (4 layers, h 256, s 512, PP 2 x DP 2, 4 micro-batches: two in flight on stage 0).
//
// What each side counts decides what must agree:
// - Parameters, FP8 weight copies, gradients, Adam state: the trace declares the stage's
//   parameter buffer, FP8 copies, gradient buffer and Adam state; the closed form counts the
//   same per parameter. The generator's layers have no biases and no layer-norm biases, and its
//   first stage no learned position embedding: those parameters (omitted_parameters) are the
//   whole difference, times the bytes each side keeps per parameter. Tolerance: 512 B (shards
//   and buckets rounded up to whole elements per DP rank).
// - Activations, exactly where the in-flight micro-batches' saved tensors are all that is live:
//   entering stage 0's first backward op (1F1B has PP - stage = 2 micro-batches' forwards
//   done). The replay's activations then equal Korthikanti's Table 2 terms as the closed form
//   counts them; only the MoE top-k indices (int64, kept by Megatron for the permutation's
//   backward, not read by the generated backward) are missing.
// - Activations at the allocated peak add the working set of the op there, which the closed
//   form leaves out ("temporary buffers"): at most the layer's incoming gradient and the two
//   FFN-wide gradients (FC2's data gradient and the GeLU's) of one backward, plus the FP8 E5M2
//   cast and transpose of a gradient, plus the recomputed forward of one layer (full recompute)
//   or its s x s softmax output (selective), plus ZeRO-3's two gathered layers (one in use, one
//   prefetched), plus two fp32 s x s score gradients when the fp32 softmax fallback runs. The
//   bound is derived from those shapes, not from the replay.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <string>

#include "generators/llm/llm_local_shapes.hpp"
#include "generators/llm/llm_rank_generator.hpp"
#include "generators/llm/llm_te_workspace.hpp"
#include "generators/llm/megatron_fused_softmax.hpp"
#include "memory/llm_memory.hpp"
#include "memory/trace_memory.hpp"

namespace perfsim::memory {
namespace {

namespace llm = generators::llm;

constexpr Bytes kRoundingBytes = 512;

llm::TransformerConfig small_gpt() {
  llm::TransformerConfig model;
  model.name = "agreement";
  model.layers = 4;
  model.hidden = 256;
  model.heads = 4;
  model.kv_heads = 4;
  model.ffn_hidden = 1024;
  model.vocab = 1024;
  model.seq_len = 512;
  model.micro_batch = 1;
  model.global_batch = 8;
  return model;
}

// Llama's shapes at that width: SwiGLU of 3.5h, 2 KV heads, rotary positions.
llm::TransformerConfig small_llama() {
  llm::TransformerConfig model = small_gpt();
  model.gated_ffn = true;
  model.ffn_hidden = 896;
  model.kv_heads = 2;
  model.position_embedding = llm::PositionEmbedding::kRope;
  return model;
}

llm::TransformerConfig small_moe() {
  llm::TransformerConfig model = small_gpt();
  model.moe.num_experts = 4;
  model.moe.top_k = 2;
  model.moe.expert_ffn_hidden = 512;
  return model;
}

// A MoE model whose 4 heads are 128 wide over a hidden of 256, with QK norm and rope (Qwen3's
// attention).
llm::TransformerConfig small_moe_with_head_dim() {
  llm::TransformerConfig model = small_moe();
  model.kv_heads = 2;
  model.kv_channels = 128;
  model.qk_layernorm = true;
  model.position_embedding = llm::PositionEmbedding::kRope;
  return model;
}

llm::ParallelConfig pp2_dp2() {
  llm::ParallelConfig parallel;
  parallel.pp = 2;
  parallel.dp = 2;
  // bf16 main grads (ZeRO's 2 bytes per parameter); the cases below use the default fp32 ones.
  parallel.gradient_dtype = DType::kBFloat16;
  return parallel;
}

// Parameters of stage 0 the closed form counts and the generated trace does not have: per layer
// the QKV and FC1 biases (split by TP) and the projection, FC2 and two norm biases (4h); the
// learned position embedding (s h).
// The MoE layers among a stage's own (multi-token prediction aside); a model that mixes dense
// and MoE layers is checked without interleaving, its stages holding consecutive layers.
double moe_layers_of_stage(const llm::TransformerConfig& model, const llm::ParallelConfig& parallel,
                           int stage) {
  const int layers = llm::layers_of_stage(model, parallel, stage);
  if (!model.is_moe() || model.moe_layer_count() == model.layers)
    return model.is_moe() ? layers : 0;
  EXPECT_EQ(parallel.virtual_stages, 1);
  int first = 0;
  for (int earlier = 0; earlier < stage; ++earlier)
    first += llm::layers_of_stage(model, parallel, earlier);
  int moe_layers = 0;
  for (int layer = first; layer < first + layers; ++layer)
    moe_layers += model.is_moe_layer(layer) ? 1 : 0;
  return moe_layers;
}

double omitted_parameters(const llm::TransformerConfig& model, const llm::ParallelConfig& parallel,
                          int stage = 0) {
  const double h = model.hidden;
  const double t = parallel.tp;
  // Multi-latent attention has no QKV (the closed form counts no bias for it).
  const double qkv_width = model.is_mla() ? 0.0
                                          : static_cast<double>(model.query_width()) +
                                                2.0 * model.kv_heads * model.head_dim();
  // The last stage also holds the multi-token prediction modules' layers.
  const bool last = stage == parallel.pp - 1;
  // Every model chunk's layers (interleaving).
  const double mtp_layers = last ? model.mtp_num_layers : 0;
  const double layers = llm::layers_of_stage(model, parallel, stage) + mtp_layers;
  const double moe_layers = moe_layers_of_stage(model, parallel, stage) +
                            (model.is_moe_layer(model.layers - 1) ? mtp_layers : 0);
  // A MoE layer's closed form has the QKV bias but no shared-expert or expert biases; a dense
  // layer's has the FC1 bias too.
  const double fc1_bias = (model.gated_ffn ? 2.0 : 1.0) * model.ffn_hidden;
  // The first stage's learned position embedding; the last stage's final norm bias (the
  // closed form counts a layer norm's 2h there, the generator an RMSNorm-like h) when it is
  // not also the first (an existing PP > 1 layout, checked on stage 0 only until MTP).
  return layers * (qkv_width / t + 4 * h) + (layers - moe_layers) * fc1_bias / t +
         (stage == 0 ? static_cast<double>(model.seq_len) * h : 0.0) +
         (last && stage > 0 ? h : 0.0);
}

struct Measured {
  TraceMemoryReport report;
  Bytes activations_entering_backward = 0;
  StageMemory closed;
};

Measured measure(const llm::TransformerConfig& model, const llm::ParallelConfig& parallel,
                 const DeviceMemory& device = {}, int stage = 0) {
  const Trace trace = llm::generate_llm_stage_template(model, parallel, stage).trace;
  Measured measured;
  measured.report = trace_memory_report(trace, device);
  measured.closed =
      estimate_llm_memory(model, parallel, device).stages.at(static_cast<std::size_t>(stage));
  const TraceLifetimes lifetimes = infer_tensor_lifetimes(trace);
  const auto first_backward =
      static_cast<std::size_t>(std::find(lifetimes.phase_by_position.begin(),
                                         lifetimes.phase_by_position.end(), TracePhase::kBackward) -
                               lifetimes.phase_by_position.begin());
  EXPECT_LT(first_backward, trace.ops.size());
  for (const TensorLifetime& tensor : lifetimes.tensors) {
    if (tensor.category == MemoryCategory::kActivations && tensor.first_position < first_backward &&
        tensor.last_position >= first_backward)
      measured.activations_entering_backward += tensor.bytes;
  }
  return measured;
}

// The working set bound of the header comment, in bytes.
double working_set_bound(const llm::TransformerConfig& model, const llm::ParallelConfig& parallel,
                         int stage = 0) {
  const llm::LocalShapes shapes = llm::local_shapes(model, parallel);
  const double bytes = element_bytes(model.activation_dtype());
  const double local_tokens = static_cast<double>(shapes.seq_local * shapes.batch);
  const double incoming = local_tokens * static_cast<double>(shapes.hidden) * bytes;
  // FC2's data gradient and the activation's (FC1's output width: both projections if gated).
  double ffn_gradients =
      static_cast<double>(shapes.tokens() * (shapes.ffn_local + shapes.fc1_width)) * bytes;
  if (model.is_moe())
    ffn_gradients =
        2 * static_cast<double>(shapes.expert_tokens() * shapes.expert_ffn_local) * bytes;
  double bound = incoming + ffn_gradients;
  if (model.fp8())
    bound += 2 * static_cast<double>(shapes.tokens() * shapes.hidden);  // E5M2 cast + transpose
  if (parallel.recompute == llm::Recompute::kFull) {
    llm::ParallelConfig kept = parallel;
    kept.recompute = llm::Recompute::kNone;
    bound += activation_bytes_per_layer(model, kept);
  }
  if (parallel.recompute == llm::Recompute::kSelective &&
      model.attention == llm::AttentionKernel::kUnfused)
    bound +=
        static_cast<double>(shapes.heads_local) * shapes.seq * shapes.seq * shapes.batch * bytes;
  // Granular selective recompute (--recompute-modules): one layer's remade tensors at a time.
  if (parallel.recompute == llm::Recompute::kSelective) {
    const llm::RecomputeModules& modules = parallel.recompute_modules;
    if (modules.layernorm)  // the pre-MLP and the input norm's outputs
      bound += 2 * incoming;
    if (modules.moe_act)  // the experts' FC2 input
      bound += static_cast<double>(shapes.expert_tokens() * shapes.expert_ffn_local) * bytes;
    if (modules.mlp) {
      // The remade MLP: the norm's output, local and gathered, FC1's output and FP8 copies,
      // the activation, FC2's output and its reduction.
      const double tokens = static_cast<double>(shapes.tokens());
      bound += incoming * 2 +
               tokens *
                   static_cast<double>(2 * shapes.hidden + shapes.fc1_width + shapes.ffn_local) *
                   bytes;
      if (model.fp8())
        bound += 2 * tokens * static_cast<double>(shapes.hidden + shapes.ffn_local);  // FP8 copies
    }
    if (modules.moe) {
      // The remade block: what it keeps without the checkpoint, and its transients (the
      // all-to-alls' and the permute's buffers) as much again.
      llm::ParallelConfig kept = parallel;
      kept.recompute_modules.moe = false;
      bound += 2 * memory::moe_activation_bytes_per_layer(model, kept);
    }
    if (modules.shared_experts) {
      // The remade shared experts: the gathered input, FC1's output, the activation, FC2's
      // output and its reduction, FP8 copies.
      const double tokens = static_cast<double>(shapes.tokens());
      bound += tokens *
               static_cast<double>(2 * shapes.hidden + shapes.shared_fc1_width +
                                   shapes.shared_ffn_local) *
               bytes;
      if (model.fp8())
        bound += 2 * tokens * static_cast<double>(shapes.hidden + shapes.shared_ffn_local);
    }
    if (modules.mla_up_proj) {
      // The normed latents, local and gathered, the up projections' outputs, query, key, value.
      const double latents = static_cast<double>(shapes.q_lora_rank + shapes.kv_lora_rank);
      const double tokens = static_cast<double>(shapes.tokens());
      bound += (local_tokens + tokens) * latents * bytes +
               tokens *
                   static_cast<double>(3 * shapes.q_up_width() + shapes.kv_up_width() +
                                       shapes.heads_local * shapes.v_head_dim) *
                   bytes;
    }
  }
  if (parallel.zero_stage == 3)
    bound += 2 * static_cast<double>(shapes.layer_parameters()) * bytes;
  // The last stage (multi-token prediction checks it): the loss backward's fp32 gradient of
  // the logits and its cast.
  if (stage == parallel.pp - 1)
    bound += static_cast<double>(shapes.tokens() * shapes.vocab_local) *
             (element_bytes(DType::kFloat32) + bytes);
  // PyTorch's fp32 softmax backward (no fused kernel): each of its ops reads one fp32 gradient
  // of the scores and writes another.
  const std::int64_t attention_batches = shapes.batch * shapes.heads_local;
  if (model.attention == llm::AttentionKernel::kUnfused &&
      !llm::megatron_fused_causal_softmax_available(attention_batches, shapes.seq))
    bound += 2.0 * static_cast<double>(attention_batches * shapes.seq * shapes.seq) *
             element_bytes(DType::kFloat32);
  return bound;
}

// The checks every layout shares; `extra_parameter_bytes`: what the replay keeps beyond the
// closed form's parameters besides the omitted ones (ZeRO-3's unsharded embedding).
void expect_agreement(const llm::TransformerConfig& model, const llm::ParallelConfig& parallel,
                      double extra_parameter_bytes = 0, int stage = 0) {
  SCOPED_TRACE(std::string("tp ") + std::to_string(parallel.tp) + " cp " +
               std::to_string(parallel.cp) + " ep " + std::to_string(parallel.ep) + " zero " +
               std::to_string(parallel.zero_stage) + " fp8 " + std::to_string(model.fp8()) +
               " stage " + std::to_string(stage));
  const Measured m = measure(model, parallel, {}, stage);
  const CategoryBytes& peak = m.report.live_at_peak;
  const double omitted = omitted_parameters(model, parallel, stage);
  const double dp = parallel.gradient_group_size();
  const double bytes = element_bytes(model.activation_dtype());
  const double weight_shards = parallel.zero_stage >= 3 ? dp : 1.0;
  const double gradient_shards = parallel.zero_stage >= 2 ? dp : 1.0;
  const double optimizer_shards = parallel.zero_stage >= 1 ? dp : 1.0;

  EXPECT_NEAR(static_cast<double>(peak[MemoryCategory::kParameters]),
              static_cast<double>(m.closed.parameter_bytes + m.closed.fp8_weight_bytes) -
                  omitted * bytes / weight_shards + extra_parameter_bytes,
              kRoundingBytes);
  EXPECT_NEAR(static_cast<double>(peak[MemoryCategory::kGradients]),
              static_cast<double>(m.closed.gradient_bytes) -
                  omitted * main_gradient_bytes(model, parallel) / gradient_shards,
              kRoundingBytes);
  constexpr double kAdamBytes = 12;  // fp32 master weights, momentum, variance
  EXPECT_NEAR(
      static_cast<double>(peak[MemoryCategory::kOptimizerState]),
      static_cast<double>(m.closed.optimizer_bytes) - omitted * kAdamBytes / optimizer_shards,
      kRoundingBytes);
  // Transformer Engine's userbuffers (declared by the generator from TE's list of
  // communicators, counted by the closed form as 6 all-gather and 4 reduce-scatter buffers).
  EXPECT_EQ(peak[MemoryCategory::kCommunication], m.closed.userbuffer_bytes);
  EXPECT_EQ(peak[MemoryCategory::kOther], 0);

  // Megatron's top-k indices (int64) the generated backward does not read (none kept when the
  // whole block is a checkpoint).
  double unsaved = 0;
  if (model.is_moe() && !parallel.recomputes(&llm::RecomputeModules::moe)) {
    const llm::LocalShapes shapes = llm::local_shapes(model, parallel);
    const double layers = moe_layers_of_stage(model, parallel, stage);
    const double mtp_layers =
        stage == parallel.pp - 1 && model.is_moe_layer(model.layers - 1) ? model.mtp_num_layers : 0;
    unsaved = (layers * m.closed.microbatches_in_flight + mtp_layers) *
              static_cast<double>(shapes.seq_local) * shapes.batch * shapes.top_k * 8;
  }
  EXPECT_NEAR(static_cast<double>(m.activations_entering_backward),
              static_cast<double>(m.closed.activation_bytes) - unsaved, 1.0);
  const Bytes at_peak = peak[MemoryCategory::kActivations];
  EXPECT_GE(at_peak, m.activations_entering_backward);
  EXPECT_LE(static_cast<double>(at_peak), static_cast<double>(m.activations_entering_backward) +
                                              working_set_bound(model, parallel, stage));
}

TEST(LlmMemoryAgreement, Bf16Baseline) {
  expect_agreement(small_gpt(), pp2_dp2());
}

TEST(LlmMemoryAgreement, DefaultFp32MainGradientsForEveryZeroStage) {
  // The generator's default (Megatron's for bf16): fp32 main grads, 4 bytes per parameter in
  // the trace's gradient buffer and in the closed form, sharded by ZeRO 2 and 3.
  for (int zero = 0; zero <= 3; ++zero) {
    llm::ParallelConfig parallel = pp2_dp2();
    parallel.gradient_dtype = DType::kFloat32;
    parallel.zero_stage = zero;
    const double embedding_bytes =
        zero == 3
            ? static_cast<double>(llm::local_shapes(small_gpt(), parallel).embedding_parameters()) *
                  2 * (1 - 1.0 / parallel.dp)
            : 0.0;
    expect_agreement(small_gpt(), parallel, embedding_bytes);
    const Measured fp32 = measure(small_gpt(), parallel);
    parallel.gradient_dtype = DType::kBFloat16;
    const Measured bf16 = measure(small_gpt(), parallel);
    EXPECT_EQ(fp32.closed.gradient_bytes, 2 * bf16.closed.gradient_bytes);
  }
}

TEST(LlmMemoryAgreement, DefaultFp32MainGradientsWithFp8AndExperts) {
  llm::TransformerConfig fp8 = small_gpt();
  fp8.dtype = DType::kFloat8;  // the FP8 recipe keeps the same fp32 main grads
  llm::ParallelConfig parallel = pp2_dp2();
  parallel.gradient_dtype = DType::kFloat32;
  expect_agreement(fp8, parallel);
  parallel.ep = 2;  // expert gradients in fp32 too, reduced over DP x CP / EP
  expect_agreement(small_moe(), parallel);
  parallel.zero_stage = 2;
  expect_agreement(small_moe(), parallel);
}

TEST(LlmMemoryAgreement, Fp16TrainingWithMegatronsFp16MainGradients) {
  llm::TransformerConfig model = small_gpt();
  model.dtype = DType::kFloat16;
  llm::ParallelConfig parallel = pp2_dp2();
  parallel.gradient_dtype = DType::kFloat16;
  expect_agreement(model, parallel);
  parallel.zero_stage = 2;
  expect_agreement(model, parallel);
}

TEST(LlmMemoryAgreement, Fp8KeepsWeightCopiesAndTransposes) {
  llm::TransformerConfig model = small_gpt();
  model.dtype = DType::kFloat8;
  expect_agreement(model, pp2_dp2());
  // The FP8 copies are parameters of the replay: the closed form's fp8_weight_bytes on top.
  const Measured bf16 = measure(small_gpt(), pp2_dp2());
  const Measured fp8 = measure(model, pp2_dp2());
  EXPECT_EQ(fp8.report.live_at_peak[MemoryCategory::kParameters] -
                bf16.report.live_at_peak[MemoryCategory::kParameters],
            fp8.closed.fp8_weight_bytes);
}

TEST(LlmMemoryAgreement, ContextParallelHalvesActivations) {
  llm::ParallelConfig parallel = pp2_dp2();
  parallel.cp = 2;
  expect_agreement(small_gpt(), parallel);
  const Measured without = measure(small_gpt(), pp2_dp2());
  const Measured with = measure(small_gpt(), parallel);
  EXPECT_EQ(2 * with.activations_entering_backward, without.activations_entering_backward);
}

TEST(LlmMemoryAgreement, P2pScatterGatherKeepsTheGatheredTensorOnly) {
  // Megatron-LM's scatter/gather: stage 0 receives 1/TP of each gradient and all-gathers it;
  // the received slice dies in the all-gather, so the closed form's terms hold unchanged.
  llm::ParallelConfig parallel = pp2_dp2();
  parallel.tp = 2;
  parallel.p2p_scatter_gather = true;
  expect_agreement(small_gpt(), parallel);
}

TEST(LlmMemoryAgreement, TensorAndSequenceParallel) {
  llm::ParallelConfig parallel = pp2_dp2();
  parallel.tp = 2;
  expect_agreement(small_gpt(), parallel);
  parallel.sequence_parallel = true;
  expect_agreement(small_gpt(), parallel);
  // Userbuffer TP overlap: the ring's chunks and the reduce-scatter's parts are transient; TE's
  // ten communication buffers of [s b, h] persist: s 512 x b 1 x h 256 x 10 x 2 bytes.
  parallel.tp_comm_overlap = true;
  expect_agreement(small_gpt(), parallel);
  EXPECT_EQ(measure(small_gpt(), parallel).closed.userbuffer_bytes, 512 * 256 * 10 * 2);
}

TEST(LlmMemoryAgreement, Fp8UserbuffersHoldFp8AllGathers) {
  // The six all-gather buffers hold E4M3 bytes under the FP8 recipe, the four reduce-scatter
  // ones bf16: 512 x 256 x (6 + 4 x 2) bytes; with CP 2 each holds s / CP tokens.
  llm::TransformerConfig model = small_gpt();
  model.dtype = DType::kFloat8;
  llm::ParallelConfig parallel = pp2_dp2();
  parallel.tp = 2;
  parallel.sequence_parallel = true;
  parallel.tp_comm_overlap = true;
  expect_agreement(model, parallel);
  EXPECT_EQ(measure(model, parallel).closed.userbuffer_bytes, 512 * 256 * (6 + 4 * 2));
  parallel.cp = 2;
  expect_agreement(model, parallel);
  EXPECT_EQ(measure(model, parallel).closed.userbuffer_bytes, 256 * 256 * (6 + 4 * 2));
}

TEST(LlmMemoryAgreement, ExpertTensorParallelSize) {
  // TP 2 with SP, EP 2: experts split over ETP 2 (the default) or whole (ETP 1, expert-DP 2).
  llm::ParallelConfig parallel = pp2_dp2();
  parallel.tp = 2;
  parallel.sequence_parallel = true;
  parallel.ep = 2;
  expect_agreement(small_moe(), parallel);
  const Measured etp2 = measure(small_moe(), parallel);
  parallel.etp = 1;
  expect_agreement(small_moe(), parallel);
  const Measured etp1 = measure(small_moe(), parallel);
  // Stage 0: 2 layers x 2 local experts x 2 GEMMs of 256 x 512, whole with ETP 1, halved by
  // ETP 2.
  EXPECT_EQ(etp1.closed.expert_parameter_count, 2.0 * 2 * 2 * 256 * 512);
  EXPECT_EQ(etp2.closed.expert_parameter_count, etp1.closed.expert_parameter_count / 2);
  // ZeRO 1 shards the expert state over expert-DP (2 with ETP 1, 1 with ETP 2).
  parallel.zero_stage = 1;
  parallel.gradient_dtype = DType::kFloat32;
  expect_agreement(small_moe(), parallel);
  parallel.ep = 4;  // one expert a rank, expert-DP 1
  expect_agreement(small_moe(), parallel);
}

TEST(LlmMemoryAgreement, ExpertParallelMoe) {
  llm::ParallelConfig parallel = pp2_dp2();
  parallel.ep = 2;
  expect_agreement(small_moe(), parallel);
}

// The flex dispatcher (DeepEP / HybridEP) permutes on the receiving side: the unpermute's
// backward keeps the experts' output rows (received tokens) instead of the combined rows.
// DeepEP's and HybridEP's communication buffers are not counted by either side.
TEST(LlmMemoryAgreement, ExpertParallelMoeWithTheFlexDispatcher) {
  llm::ParallelConfig parallel = pp2_dp2();
  parallel.ep = 2;
  parallel.moe_imbalance = 1.5;  // received rows differ from dispatched ones
  const Measured alltoall = measure(small_moe(), parallel);
  parallel.moe_token_dispatcher = llm::MoeTokenDispatcher::kFlex;
  expect_agreement(small_moe(), parallel);
  const Measured flex = measure(small_moe(), parallel);
  EXPECT_GT(flex.closed.activation_bytes, alltoall.closed.activation_bytes);
  parallel.moe_flex_backend = llm::MoeFlexBackend::kHybridEp;
  expect_agreement(small_moe(), parallel);
}

// Token dropping with a capacity factor (README "Token dropping"): dropping alone caps the
// busiest rank's rows at the factor; padded to capacity every expert's input is its capacity,
// sent and received, whatever the imbalance, and the combined rows the unpermute keeps are the
// padded ones too.
TEST(LlmMemoryAgreement, TokenDroppingAndPaddingToCapacity) {
  llm::TransformerConfig model = small_moe();
  model.moe.capacity_factor = 1.25;
  llm::ParallelConfig parallel = pp2_dp2();
  parallel.ep = 2;
  parallel.moe_imbalance = 2.0;  // capped at 1.25 by the dropping
  expect_agreement(model, parallel);
  const Measured dropping = measure(model, parallel);
  parallel.moe_pad_to_capacity = true;
  expect_agreement(model, parallel);
  const Measured padded = measure(model, parallel);
  // Padded, the combined rows grow from s b top_k to the capacity of every expert.
  EXPECT_GT(padded.closed.activation_bytes, dropping.closed.activation_bytes);
}

// SequentialMLP (moe_grouped_gemm off): in bf16 the experts save what the grouped linears
// save (the split's views of the input rows, FC1 outputs, FC2 inputs); with FP8 each expert's
// rows are padded to a multiple of 16 first, so its saved FP8 inputs and FC1 output carry the
// pad rows. Sequence 520: 1040 routed rows at EP 2, 520 per local expert, 528 padded.
TEST(LlmMemoryAgreement, SequentialExperts) {
  llm::TransformerConfig model = small_moe();
  model.seq_len = 520;
  llm::ParallelConfig parallel = pp2_dp2();
  parallel.ep = 2;
  const Measured bf16_grouped = measure(model, parallel);
  parallel.moe_grouped_gemm = false;
  expect_agreement(model, parallel);
  EXPECT_EQ(measure(model, parallel).closed.activation_bytes, bf16_grouped.closed.activation_bytes);
  model.dtype = DType::kFloat8;
  expect_agreement(model, parallel);
  const Measured fp8_sequential = measure(model, parallel);
  parallel.moe_grouped_gemm = true;
  const Measured fp8_grouped = measure(model, parallel);
  // Per layer and micro-batch in flight: 2 experts x 8 pad rows x (the FP8 input, h 256 x 1
  // byte; FC1's bf16 output and FC2's FP8 input, 512 x 3 bytes). Stage 0 holds 2 layers.
  const double per_layer = 2.0 * 8 * (256 + 512 * 3);
  EXPECT_NEAR(static_cast<double>(fp8_sequential.closed.activation_bytes) -
                  static_cast<double>(fp8_grouped.closed.activation_bytes),
              per_layer * 2 * fp8_grouped.closed.microbatches_in_flight, 1.0);
}

// overlap_param_gather with experts: Megatron-Core gathers each bucket into its parameter
// buffer in place (the bucket's param_data), dense and expert buffers alike, so the closed form
// is unchanged and the replay holds no gathered copy. DP 4, EP 2: expert-DP 2, so the experts
// are gathered too.
TEST(LlmMemoryAgreement, ExpertParallelMoeWithOverlappedParameterGather) {
  llm::ParallelConfig parallel = pp2_dp2();
  parallel.dp = 4;
  parallel.ep = 2;
  parallel.zero_stage = 1;
  parallel.overlap_grad_reduce = true;
  parallel.overlap_param_gather = true;
  expect_agreement(small_moe(), parallel);
  parallel.overlap_param_gather = false;
  const Measured off = measure(small_moe(), parallel);
  parallel.overlap_param_gather = true;
  const Measured on = measure(small_moe(), parallel);
  EXPECT_EQ(on.closed.total_bytes, off.closed.total_bytes);
  EXPECT_EQ(on.report.live_at_peak[MemoryCategory::kParameters],
            off.report.live_at_peak[MemoryCategory::kParameters]);
}

// Megatron-Core's combined 1F1B steps (--moe-a2a-overlap) do not change the closed form: with PP
// 1 micro-batch i + 1's forward runs beside micro-batch i's backward, layer by layer in opposite
// directions, and the interleaved schedule warms up one more forward, so as many micro-batches
// (chunks) are in flight when a backward starts as without it. The replay agrees: the same
// persistent state and activations entering the backward as the run without the overlap, and a
// peak at most one layer's activations (the closed form's per layer and micro-batch) above it,
// the forward's first layer allocated before the backward's last layer is freed.
void expect_overlap_keeps_memory(const llm::TransformerConfig& model, llm::ParallelConfig parallel,
                                 int stage) {
  SCOPED_TRACE("pp " + std::to_string(parallel.pp) + " stage " + std::to_string(stage));
  parallel.moe_a2a_overlap = false;
  const Measured off = measure(model, parallel, {}, stage);
  parallel.moe_a2a_overlap = true;
  const Measured on = measure(model, parallel, {}, stage);
  EXPECT_EQ(on.closed.total_bytes, off.closed.total_bytes);
  for (MemoryCategory category :
       {MemoryCategory::kParameters, MemoryCategory::kGradients, MemoryCategory::kOptimizerState})
    EXPECT_EQ(on.report.live_at_peak[category], off.report.live_at_peak[category]);
  EXPECT_EQ(on.activations_entering_backward, off.activations_entering_backward);
  const double per_layer = static_cast<double>(off.closed.activation_bytes) /
                           off.closed.microbatches_in_flight / off.closed.layers;
  const double peak_on = static_cast<double>(on.report.live_at_peak[MemoryCategory::kActivations]);
  const double peak_off =
      static_cast<double>(off.report.live_at_peak[MemoryCategory::kActivations]);
  std::cout << "stage " << stage << " activations at the peak: " << peak_off << " -> " << peak_on
            << " B (one layer " << per_layer << " B)\n";
  EXPECT_LE(peak_on, peak_off + per_layer);
}

TEST(LlmMemoryAgreement, MoeAllToAllOverlapKeepsTheClosedForm) {
  llm::ParallelConfig parallel;
  parallel.dp = 2;
  parallel.ep = 2;
  expect_overlap_keeps_memory(small_moe(), parallel, 0);
  llm::TransformerConfig deep = small_moe();
  deep.layers = 6;
  deep.global_batch = 12;  // 6 micro-batches at DP 2, a multiple of PP 3
  parallel.pp = 3;
  parallel.virtual_stages = 2;
  for (int stage = 0; stage < parallel.pp; ++stage)
    expect_overlap_keeps_memory(deep, parallel, stage);
}

TEST(LlmMemoryAgreement, Fp8ExpertsKeepTheirCopiesToo) {
  // FP8 expert GEMMs: each local expert's FP8 copy and transpose are held like the dense
  // layers' (closed form: fp8_moe_linear_parameters_per_layer).
  llm::TransformerConfig model = small_moe();
  model.dtype = DType::kFloat8;
  llm::ParallelConfig parallel = pp2_dp2();
  parallel.ep = 2;
  expect_agreement(model, parallel);
}

// FP8: the linear layers' saved inputs as Transformer Engine keeps them (1 byte per element,
// llm_memory.cpp fp8_input_terms), in every layout that changes which tensor is saved: the FP8
// local rows gathered again (SP with the FP8 all-gather, with and without userbuffers), the
// bf16 local rows (blockwise scaling or no FP8 all-gather with SP), the FP8 transpose (no SP),
// the projection's copy beside the flash / ring attention's kept output or alone (unfused
// attention, with and without core_attn recompute), full recompute.
TEST(LlmMemoryAgreement, Fp8SavedInputsInEveryLayout) {
  llm::TransformerConfig llama = small_llama();
  llama.dtype = DType::kFloat8;
  llm::ParallelConfig parallel = pp2_dp2();
  auto check = [&](const llm::TransformerConfig& model, const char* layout) {
    SCOPED_TRACE(layout);
    expect_agreement(model, parallel);
  };
  parallel.tp = 2;
  check(llama, "no SP: the FP8 transposes");
  parallel.sequence_parallel = true;
  check(llama, "SP: the FP8 local rows");
  parallel.tp_comm_overlap = true;
  check(llama, "SP, userbuffers");
  parallel.fp8_all_gather = false;
  check(llama, "SP, userbuffers, bf16 gather: the bf16 local rows");
  parallel.tp_comm_overlap = false;
  check(llama, "SP, bf16 gather");
  parallel.fp8_all_gather = true;
  llama.fp8_recipe = llm::Fp8Recipe::kBlockwise;
  check(llama, "SP, blockwise (bf16 gather)");
  llama.fp8_recipe = llm::Fp8Recipe::kCurrent;
  check(llama, "SP, current scaling");
  parallel.cp = 2;
  check(llama, "SP, CP 2: ring attention keeps its output too");
  parallel.cp = 1;
  parallel.recompute = llm::Recompute::kFull;
  check(llama, "full recompute");
  llm::TransformerConfig gpt = small_gpt();
  gpt.dtype = DType::kFloat8;
  gpt.attention = llm::AttentionKernel::kUnfused;
  parallel.recompute = llm::Recompute::kNone;
  check(gpt, "unfused attention: its backward does not read its output");
  parallel.recompute = llm::Recompute::kSelective;
  check(gpt, "unfused attention, core_attn recompute");
}

// FP8 experts and shared experts: the grouped linears' FP8 transposes, the shared experts'
// inputs as the dense MLP's, beside the router input the router keeps; with the shared experts
// overlapped, the flex dispatcher, and moe_act (the FP8 copy of FC2's input stays).
TEST(LlmMemoryAgreement, Fp8ExpertsAndSharedExpertsSaveFp8Inputs) {
  llm::TransformerConfig model = small_moe();
  model.dtype = DType::kFloat8;
  model.moe.shared_expert_ffn_hidden = 256;
  llm::ParallelConfig parallel = pp2_dp2();
  parallel.ep = 2;
  expect_agreement(model, parallel);
  parallel.tp = 2;
  parallel.sequence_parallel = true;
  expect_agreement(model, parallel);
  parallel.moe_shared_expert_overlap = true;
  expect_agreement(model, parallel);
  parallel.moe_shared_expert_overlap = false;
  model.fp8_recipe = llm::Fp8Recipe::kBlockwise;
  expect_agreement(model, parallel);
  model.fp8_recipe = llm::Fp8Recipe::kDelayed;
  parallel.recompute = llm::Recompute::kSelective;
  parallel.recompute_modules = llm::parse_recompute_modules("layernorm moe_act", "<test>", "");
  expect_agreement(model, parallel);
  parallel.recompute = llm::Recompute::kNone;
  parallel.recompute_modules = {};
  parallel.moe_token_dispatcher = llm::MoeTokenDispatcher::kFlex;
  parallel.etp = 1;  // the flex dispatcher's
  expect_agreement(model, parallel);
}

// What FP8 saves, by hand, per layer and micro-batch (s 512, b 1, h 256, 4 heads of 64: the
// context is 256 wide): QKV's and FC1's inputs drop from 2 to 1 byte per element (-s h each),
// FC2's too (-s f), and the projection saves a 1-byte copy of the context beside the bf16 one
// the flash attention keeps (+s 256).
// - small_llama (f 896), TP 1: 512 x (-256 - 256 - 896 + 256) = -589824 bytes; TP 2 with SP
//   every term halves (the local rows of QKV's and FC1's inputs, half the context and of f):
//   -294912.
// - small_gpt with unfused attention (f 1024), TP 1: its backward does not read the context,
//   whose bf16 copy goes (-s 256): 512 x (-256 - 256 - 1024 - 256) = -917504.
// - small_moe with a 256-wide shared expert, TP 1, EP 1: attention as above (0 net), the
//   experts' 1024 routed rows (s top_k) with their FC1 input (h) and FC2 input (512) at 1 byte:
//   -1024 x (256 + 512) = -786432; the shared expert's FC2 input -512 x 256 and its FC1
//   input's FP8 transpose +512 x 256 beside the router input: -786432 in all.
// The closed form's per-layer terms and the allocator replay (stage 0: 2 layers, 2 micro-
// batches in flight) both differ by exactly that.
TEST(LlmMemoryAgreement, Fp8MinusBf16ActivationsByHand) {
  struct Case {
    llm::TransformerConfig model;
    int tp;
    double per_layer_bytes;
  };
  llm::TransformerConfig unfused = small_gpt();
  unfused.attention = llm::AttentionKernel::kUnfused;
  llm::TransformerConfig moe = small_moe();
  moe.moe.shared_expert_ffn_hidden = 256;
  const Case cases[] = {{small_llama(), 1, -589824},
                        {small_llama(), 2, -294912},
                        {unfused, 1, -917504},
                        {moe, 1, -786432}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.model.name + (c.model.is_moe() ? " moe" : "") + " tp " + std::to_string(c.tp));
    llm::ParallelConfig parallel = pp2_dp2();
    parallel.tp = c.tp;
    parallel.sequence_parallel = c.tp > 1;
    llm::TransformerConfig fp8 = c.model;
    fp8.dtype = DType::kFloat8;
    auto per_layer = [&](const llm::TransformerConfig& model) {
      return model.is_moe() ? moe_activation_bytes_per_layer(model, parallel)
                            : activation_bytes_per_layer(model, parallel);
    };
    EXPECT_DOUBLE_EQ(per_layer(fp8) - per_layer(c.model), c.per_layer_bytes);
    const Measured bf16_replay = measure(c.model, parallel);
    const Measured fp8_replay = measure(fp8, parallel);
    const double in_stage = llm::layers_of_stage(fp8, parallel, 0) *
                            static_cast<double>(fp8_replay.closed.microbatches_in_flight);
    EXPECT_EQ(in_stage, 4);
    EXPECT_DOUBLE_EQ(static_cast<double>(fp8_replay.activations_entering_backward) -
                         static_cast<double>(bf16_replay.activations_entering_backward),
                     c.per_layer_bytes * in_stage);
  }
}

TEST(LlmMemoryAgreement, Zero3WithExperts) {
  // DP 2, EP 2: expert-DP 1, so the experts stay whole on their rank while the dense
  // parameters shard over DP; the embedding is kept whole as in the dense case.
  llm::ParallelConfig parallel = pp2_dp2();
  parallel.ep = 2;
  parallel.zero_stage = 3;
  const llm::LocalShapes shapes = llm::local_shapes(small_moe(), parallel);
  const double embedding_bytes = static_cast<double>(shapes.embedding_parameters()) * 2;
  expect_agreement(small_moe(), parallel, embedding_bytes * (1 - 1.0 / parallel.dp));
}

TEST(LlmMemoryAgreement, DistributedOptimizerShardsAdamState) {
  llm::ParallelConfig parallel = pp2_dp2();
  parallel.zero_stage = 1;
  expect_agreement(small_gpt(), parallel);
  const Measured replicated = measure(small_gpt(), pp2_dp2());
  const Measured sharded = measure(small_gpt(), parallel);
  EXPECT_NEAR(
      2.0 * static_cast<double>(sharded.report.live_at_peak[MemoryCategory::kOptimizerState]),
      static_cast<double>(replicated.report.live_at_peak[MemoryCategory::kOptimizerState]),
      kRoundingBytes);
}

TEST(LlmMemoryAgreement, Zero3ShardsWeightsButNotTheEmbedding) {
  llm::ParallelConfig parallel = pp2_dp2();
  parallel.zero_stage = 3;
  // The generator keeps the embedding whole under ZeRO-3 (llm_rank_generator.hpp); the closed
  // form shards it with the rest.
  const llm::LocalShapes shapes = llm::local_shapes(small_gpt(), parallel);
  const double embedding_bytes = static_cast<double>(shapes.embedding_parameters()) * 2;
  expect_agreement(small_gpt(), parallel, embedding_bytes * (1 - 1.0 / parallel.dp));
}

TEST(LlmMemoryAgreement, GatedFfnAndGroupedQueryAttention) {
  llm::TransformerConfig model = small_gpt();  // Llama's shapes: SwiGLU of 3.5h, 2 KV heads
  model.gated_ffn = true;
  model.ffn_hidden = 896;
  model.kv_heads = 2;
  llm::ParallelConfig parallel = pp2_dp2();
  expect_agreement(model, parallel);
  parallel.tp = 2;
  parallel.sequence_parallel = true;
  expect_agreement(model, parallel);
}

TEST(LlmMemoryAgreement, RotaryEmbeddingKeepsRotatedQueriesAndKeys) {
  // Megatron-Core rotates q and k into new tensors the attention keeps: 2 (h + kv d) / h more
  // of Table 2's split terms; the fused SwiGLU saves its input only (the FC1 output, already
  // counted). Fused or not, the same tensors are saved.
  llm::TransformerConfig model = small_llama();
  llm::ParallelConfig parallel = pp2_dp2();
  expect_agreement(model, parallel);
  parallel.tp = 2;
  parallel.sequence_parallel = true;
  expect_agreement(model, parallel);
  parallel.recompute = llm::Recompute::kSelective;
  expect_agreement(model, parallel);
  llm::ParallelConfig context = pp2_dp2();
  context.cp = 2;
  expect_agreement(model, context);
  model.bias_swiglu_fusion = false;
  model.rope_fusion = false;
  expect_agreement(model, pp2_dp2());
}

TEST(LlmMemoryAgreement, FusedCrossEntropyKeepsItsSoftmaxOrGradient) {
  // Megatron-Core's native fusion keeps the same fp32 softmax for the backward; Transformer
  // Engine's keeps the bf16 gradient in place of the logits instead.
  llm::TransformerConfig model = small_llama();
  llm::ParallelConfig sharded = pp2_dp2();
  sharded.tp = 2;
  sharded.sequence_parallel = true;
  for (const llm::CrossEntropyFusion fusion :
       {llm::CrossEntropyFusion::kNative, llm::CrossEntropyFusion::kTe}) {
    model.cross_entropy_fusion = fusion;
    expect_agreement(model, pp2_dp2());
    expect_agreement(model, sharded);
  }
}

TEST(LlmMemoryAgreement, HeadDimApartFromHiddenOverHeads) {
  // 4 heads of 96 (384 wide, not 256), 2 KV heads: the QKV output, the rotated Q and K and the
  // projection's input are heads x d wide (issue 15).
  llm::TransformerConfig model = small_llama();
  model.kv_channels = 96;
  llm::ParallelConfig parallel = pp2_dp2();
  expect_agreement(model, parallel);
  parallel.tp = 2;
  parallel.sequence_parallel = true;
  expect_agreement(model, parallel);
  expect_agreement(small_moe_with_head_dim(), pp2_dp2());
}

TEST(LlmMemoryAgreement, QkLayerNormKeepsItsInverseRmsAndWithoutRopeItsOutputs) {
  // The norms' inputs are slices of the kept QKV output; they add the fp32 inverse RMS per
  // head row and, without rope, the normed Q and K the attention keeps.
  llm::TransformerConfig model = small_gpt();
  model.kv_heads = 2;
  model.qk_layernorm = true;
  llm::ParallelConfig parallel = pp2_dp2();
  expect_agreement(model, parallel);
  model.position_embedding = llm::PositionEmbedding::kRope;
  expect_agreement(model, parallel);
  parallel.tp = 2;
  parallel.sequence_parallel = true;
  expect_agreement(model, parallel);
  llm::ParallelConfig full_recompute = pp2_dp2();  // only the layer inputs are kept
  full_recompute.recompute = llm::Recompute::kFull;
  expect_agreement(model, full_recompute);
  llm::ParallelConfig context = pp2_dp2();
  context.cp = 2;
  expect_agreement(model, context);
}

TEST(LlmMemoryAgreement, SlidingWindowKeepsWhatFullAttentionKeeps) {
  // Flash attention saves Q, K, V, the output and its statistics whatever the mask.
  llm::TransformerConfig model = small_gpt();
  model.position_embedding = llm::PositionEmbedding::kRope;
  model.window_size = 128;
  model.full_attention_every = 2;
  expect_agreement(model, pp2_dp2());
  llm::TransformerConfig full = model;
  full.window_size = 0;
  full.full_attention_every = 0;
  EXPECT_EQ(estimate_llm_memory(model, pp2_dp2(), {}).stages.at(0).activation_bytes,
            estimate_llm_memory(full, pp2_dp2(), {}).stages.at(0).activation_bytes);
}

llm::TransformerConfig small_mla() {
  // DeepSeek-V3's attention at a small width: q and kv latents, nope 64 + rope 32, v 48.
  llm::TransformerConfig model = small_gpt();
  model.gated_ffn = true;
  model.ffn_hidden = 896;
  model.position_embedding = llm::PositionEmbedding::kRope;
  model.mla.q_lora_rank = 96;
  model.mla.kv_lora_rank = 64;
  model.mla.qk_nope_head_dim = 64;
  model.mla.qk_rope_head_dim = 32;
  model.mla.v_head_dim = 48;
  return model;
}

// `model` with 4 experts (top-2, 512 wide) and one multi-token prediction layer (DeepSeek-V3's
// kinds of layers on a small MLA model).
llm::TransformerConfig with_experts_and_mtp(llm::TransformerConfig model) {
  model.moe.num_experts = 4;
  model.moe.top_k = 2;
  model.moe.expert_ffn_hidden = 512;
  model.mtp_num_layers = 1;
  return model;
}

TEST(LlmMemoryAgreement, MultiLatentAttentionKeepsLatentsAndQueryKeyValue) {
  // The latents of the rank's own tokens (down projections' outputs and the normed latents)
  // and the query, key and value the rotary kernels build, at their own widths.
  llm::TransformerConfig model = small_mla();
  llm::ParallelConfig parallel = pp2_dp2();
  expect_agreement(model, parallel);
  parallel.tp = 2;
  parallel.sequence_parallel = true;
  expect_agreement(model, parallel);
  parallel.sequence_parallel = false;
  expect_agreement(model, parallel);
  llm::ParallelConfig context = pp2_dp2();
  context.cp = 2;
  expect_agreement(model, context);
  model.rope_fusion = false;
  expect_agreement(model, pp2_dp2());
  model.mla.q_lora_rank = 0;  // DeepSeek-V2-Lite: queries not compressed
  expect_agreement(model, pp2_dp2());
  llm::ParallelConfig recompute = pp2_dp2();
  recompute.recompute = llm::Recompute::kFull;
  expect_agreement(model, recompute);
  llm::TransformerConfig moe = small_mla();
  moe.moe.num_experts = 4;
  moe.moe.top_k = 2;
  moe.moe.expert_ffn_hidden = 512;
  llm::ParallelConfig experts = pp2_dp2();
  experts.ep = 2;
  expect_agreement(moe, experts);
}

// Megatron-Core's --recompute-modules: the closed form drops what the generated trace no
// longer keeps into the backward (the pre-MLP norm's output and the experts' FC2 input; MLA's
// query, key, value and normed latents, keeping the gathered k_pe).
// PP 2 x DP 2 with selective recompute of these Megatron-Core modules.
llm::ParallelConfig pp2_dp2_recomputing(const char* modules) {
  llm::ParallelConfig parallel = pp2_dp2();
  parallel.recompute = llm::Recompute::kSelective;
  parallel.recompute_modules = llm::parse_recompute_modules(modules, "<test>", "");
  return parallel;
}

TEST(LlmMemoryAgreement, GranularRecomputeLayernormAndMoeAct) {
  llm::ParallelConfig parallel = pp2_dp2_recomputing("layernorm moe_act");
  expect_agreement(small_moe(), parallel);
  parallel.tp = 2;
  parallel.sequence_parallel = true;
  expect_agreement(small_moe(), parallel);
  parallel.ep = 2;
  expect_agreement(small_moe(), parallel);
  llm::TransformerConfig mla_moe = small_mla();
  mla_moe.moe.num_experts = 4;
  mla_moe.moe.top_k = 2;
  mla_moe.moe.expert_ffn_hidden = 512;
  expect_agreement(mla_moe, parallel);
}

TEST(LlmMemoryAgreement, GranularRecomputeMlaUpProj) {
  llm::TransformerConfig model = small_mla();
  llm::ParallelConfig parallel = pp2_dp2_recomputing("mla_up_proj");
  expect_agreement(model, parallel);
  parallel.tp = 2;
  parallel.sequence_parallel = true;  // k_pe kept gathered over TP
  expect_agreement(model, parallel);
  parallel.sequence_parallel = false;
  expect_agreement(model, parallel);
  parallel.recompute_modules =
      llm::parse_recompute_modules("core_attn,layernorm,mla_up_proj", "<test>", "");
  expect_agreement(model, parallel);
  model.rope_fusion = false;
  expect_agreement(model, parallel);
  model.mla.q_lora_rank = 0;  // linear_q_proj on the (kept) normed hidden states
  expect_agreement(model, parallel);
}

// recompute_modules mlp: a dense layer's MLP checkpointed whole keeps none of its tensors (FC1's
// saved input, FC1's output, FC2's saved input); a MoE layer's block is untouched (Megatron
// sets recompute_mlp only where the MLP is not a MoELayer).
TEST(LlmMemoryAgreement, GranularRecomputeMlp) {
  llm::TransformerConfig llama = small_llama();
  llm::ParallelConfig parallel = pp2_dp2_recomputing("core_attn,mlp");
  expect_agreement(llama, parallel);
  parallel.tp = 2;
  expect_agreement(llama, parallel);
  parallel.sequence_parallel = true;
  expect_agreement(llama, parallel);
  llama.dtype = DType::kFloat8;
  expect_agreement(llama, parallel);
  parallel.tp_comm_overlap = true;
  expect_agreement(llama, parallel);
  parallel.tp_comm_overlap = false;
  llm::TransformerConfig moe = small_moe();  // dense first layer, then MoE layers
  moe.moe.first_dense_layers = 1;
  parallel.ep = 2;
  expect_agreement(moe, parallel);
  parallel.recompute_modules = {};
  parallel.recompute = llm::Recompute::kNone;
  expect_agreement(moe, parallel);  // the mixed stage without recomputation
  // shared_experts: the shared experts' FC1 input, FC1 output and FC2 input go too (bf16 and
  // FP8); beside the dispatcher (moe_shared_expert_overlap) they are kept.
  llm::TransformerConfig shared = small_moe();
  shared.moe.shared_expert_ffn_hidden = 256;
  llm::ParallelConfig shared_layout = pp2_dp2_recomputing("core_attn,shared_experts");
  shared_layout.tp = 2;
  shared_layout.sequence_parallel = true;
  shared_layout.ep = 2;
  expect_agreement(shared, shared_layout);
  shared_layout.moe_shared_expert_overlap = true;
  expect_agreement(shared, shared_layout);
  shared_layout.moe_shared_expert_overlap = false;
  shared.dtype = DType::kFloat8;
  expect_agreement(shared, shared_layout);
  // moe: only the block's input stays (and not even that with layernorm).
  llm::ParallelConfig whole = pp2_dp2_recomputing("core_attn,moe");
  whole.tp = 2;
  whole.sequence_parallel = true;
  whole.ep = 2;
  expect_agreement(shared, whole);
  shared.dtype = DType::kBFloat16;
  expect_agreement(shared, whole);
  whole.recompute_modules = llm::parse_recompute_modules("layernorm,moe", "<test>", "");
  expect_agreement(shared, whole);
  parallel.ep = 1;
  parallel.recompute = llm::Recompute::kSelective;
  parallel.recompute_modules = llm::parse_recompute_modules("mlp", "<test>", "");
  expect_agreement(small_gpt(), parallel);
}

TEST(LlmMemoryAgreement, MultiTokenPredictionOnTheLastStage) {
  // MTP modules on the last stage (stage 1 of PP 2): each one's MoE layer, eh_proj and norms
  // and the stage's embedding copy as parameters; its layer's, embedding's, concatenation's
  // and head's activations (the head's once, as the LM head's).
  llm::TransformerConfig model = small_mla();
  model.moe.num_experts = 4;
  model.moe.top_k = 2;
  model.moe.expert_ffn_hidden = 512;
  model.mtp_num_layers = 1;
  llm::ParallelConfig parallel = pp2_dp2();
  expect_agreement(model, parallel, 0, 1);
  parallel.tp = 2;
  parallel.sequence_parallel = true;
  expect_agreement(model, parallel, 0, 1);
  model.mtp_num_layers = 2;
  expect_agreement(model, parallel, 0, 1);
  expect_agreement(model, parallel);  // the first stage has none
}

TEST(LlmMemoryAgreement, RecomputationKeepsLayerInputsOrQkv) {
  llm::ParallelConfig parallel = pp2_dp2();
  parallel.recompute = llm::Recompute::kFull;
  expect_agreement(small_gpt(), parallel);
  // Under sequence parallelism the kept layer input is the rank's [s/t, b, h] shard.
  llm::ParallelConfig sharded = parallel;
  sharded.tp = 2;
  sharded.sequence_parallel = true;
  expect_agreement(small_gpt(), sharded);
  llm::TransformerConfig unfused = small_gpt();
  unfused.attention = llm::AttentionKernel::kUnfused;
  expect_agreement(unfused, pp2_dp2());
  parallel.recompute = llm::Recompute::kSelective;
  expect_agreement(unfused, parallel);
}

TEST(LlmMemoryAgreement, Fp32SoftmaxFallbackKeepsItsFp32Output) {
  // TP 2: micro-batch 1 x 4 heads / 2 = 2 attention batches, not a multiple of 4, so Megatron's
  // fused kernel is unavailable and PyTorch's fp32 softmax runs (megatron_fused_softmax.hpp).
  llm::TransformerConfig unfused = small_gpt();
  unfused.attention = llm::AttentionKernel::kUnfused;
  llm::ParallelConfig parallel = pp2_dp2();
  parallel.tp = 2;
  ASSERT_FALSE(llm::megatron_fused_causal_softmax_available(2, unfused.seq_len));
  for (bool dropout : {false, true}) {
    unfused.dropout = dropout;
    if (!dropout)  // the generated trace has no mask tensors to replay (src/memory/README.md)
      expect_agreement(unfused, parallel);
    // Hand count per layer and micro-batch (s 512, b 1, h 256, a 4, t 2, bf16): Table 2's
    // sbh (10 + 24/t + 5as/(ht)) with dropout, sbh (8 + 24/t + 2as/(ht)) without, plus 2 or 4
    // bytes per score for b a / t = 2 attention batches of s x s.
    const double sbh = 512.0 * 256, scores = 2 * 512.0 * 512;
    const double expected =
        dropout ? sbh * (10 + 12 + 20) + 2 * scores : sbh * (8 + 12 + 8) + 4 * scores;
    EXPECT_DOUBLE_EQ(activation_bytes_per_layer(unfused, parallel), expected);
  }
}

TEST(LlmMemoryAgreement, TransformerEngineCublasWorkspaces) {
  // The generator declares TE's workspaces for the per-stream size it is given; the closed form
  // sizes them from the device's architecture. Each side against the run without them.
  struct Case {
    const char* architecture;
    llm::TransformerConfig model;
    bool userbuffers;
    Bytes expected;  // TE's get_workspace (x 3 with userbuffers) + 4 grouped-GEMM workspaces
  };
  constexpr Bytes kMiB = 1024 * 1024;
  const Case cases[] = {{"hopper", small_gpt(), false, 32 * kMiB},
                        {"ampere", small_gpt(), false, 4 * kMiB},
                        {"hopper", small_gpt(), true, 3 * 32 * kMiB},
                        {"hopper", small_moe(), false, 32 * kMiB + 4 * 32 * kMiB}};
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.architecture) + (c.userbuffers ? " userbuffers" : "") +
                 (c.model.is_moe() ? " moe" : ""));
    llm::ParallelConfig parallel = pp2_dp2();
    if (c.userbuffers) {
      parallel.tp = 2;
      parallel.sequence_parallel = true;
      parallel.tp_comm_overlap = true;
    }
    if (c.model.is_moe())
      parallel.ep = 2;
    const Measured without = measure(c.model, parallel);
    DeviceMemory device;
    device.architecture = c.architecture;
    parallel.cublas_workspace_bytes = llm::te_cublas_workspace_bytes(c.architecture);
    const Measured with = measure(c.model, parallel, device);
    EXPECT_EQ(with.closed.workspace_bytes, c.expected);
    EXPECT_EQ(without.closed.workspace_bytes, 0);
    EXPECT_EQ(with.closed.total_bytes - without.closed.total_bytes, c.expected);
    EXPECT_EQ(with.report.live_at_peak[MemoryCategory::kWorkspace] -
                  without.report.live_at_peak[MemoryCategory::kWorkspace],
              c.expected);
    // Everything else the replay holds at its peak is unchanged.
    EXPECT_EQ(with.report.live_at_peak[MemoryCategory::kActivations],
              without.report.live_at_peak[MemoryCategory::kActivations]);
  }
}

TEST(LlmMemoryAgreement, InterleavedTwoStages) {
  // PP 2 x VP 2 (Megatron with overlap_p2p_comm): stage 0 runs virtual stages 0 and 2, a layer
  // each. Entering its first backward it has run the (p - 1) 2 + (v - 1) p warm-up forwards and
  // the first steady one, 5 chunks of one layer: the closed form's p (1 + (p - 1) / (p v)) =
  // 2.5 micro-batches of its 2 layers (Korthikanti et al. 2022, Sec. 4.2.3).
  llm::ParallelConfig parallel = pp2_dp2();
  parallel.virtual_stages = 2;
  EXPECT_DOUBLE_EQ(
      estimate_llm_memory(small_gpt(), parallel, {}).stages.at(0).microbatches_in_flight, 2.5);
  expect_agreement(small_gpt(), parallel);
}

TEST(LlmMemoryAgreement, UnevenSplitFirstStageHoldsItsOwnLayers) {
  // Megatron's --decoder-first-pipeline-num-layers 1: stage 0 holds 1 layer, stage 1 the 3 left.
  llm::ParallelConfig parallel = pp2_dp2();
  parallel.first_stage_layers = 1;
  expect_agreement(small_gpt(), parallel);
  // The embedding and the loss counted as layers: (4 + 2) / 2 = 3, stage 0 builds 2.
  llm::ParallelConfig accounted = pp2_dp2();
  accounted.account_for_embedding = true;
  accounted.account_for_loss = true;
  expect_agreement(small_gpt(), accounted);
}

// FP8 minus bf16 activations of one multi-latent attention layer (small_mla: s 512, b 1, h 256,
// q latent 96, kv latent 64, 4 heads of v 48, gated FFN 896), derived by hand, closed form and
// replay. Per TP rank, tokens T = 512 (local rows T / 2 with SP over TP 2):
// - the down projections (TELinear, duplicated) save FP8 transposes of the normed local rows,
//   1 byte each, and ln1's bf16 rows are freed: +2 x rows x 256 - 2 x rows x 256 = 0 (layernorm
//   recompute had freed ln1 already: +2 x 512 x 256 = +262144); without query compression
//   only kv_down's (+131072) and linear_q_proj's transpose (+131072) against ln1 (-262144);
// - the up projections without SP: FP8 transposes of the normed latents instead of their bf16
//   rows, -512 x (96 + 64) = -81920 (-32768 with the kv latent alone); with SP the bf16 local
//   rows stay (gathered again), with mla_up_proj recompute the latents were freed already: 0;
// - linear_proj's FP8 input beside the kept context: +512 x 4 x 48 / TP;
// - FC1 and FC2 (the previous helper's terms): -rows x 256 and -512 x 896 / TP.
TEST(LlmMemoryAgreement, Fp8MinusBf16MultiLatentAttentionByHand) {
  struct Case {
    std::int64_t q_lora;
    int tp;
    const char* recompute_modules;  // "" for none
    double per_layer_bytes;
  };
  const Case cases[] = {
      // 0 - 81920 + 98304 - 131072 - 458752
      {96, 1, "", -573440},
      // 0 - 32768 + 98304 - 131072 - 458752
      {0, 1, "", -524288},
      // 0 + 0 + 98304 - 131072 - 458752
      {96, 1, "mla_up_proj", -491520},
      // 262144 + 0 + 98304 - 131072 - 458752
      {96, 1, "mla_up_proj,layernorm", -229376},
      // SP over TP 2: 0 + 0 + 49152 - 65536 - 229376
      {96, 2, "", -245760},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE("q_lora " + std::to_string(c.q_lora) + " tp " + std::to_string(c.tp) + " " +
                 c.recompute_modules);
    llm::TransformerConfig bf16 = small_mla();
    bf16.mla.q_lora_rank = c.q_lora;
    llm::TransformerConfig fp8 = bf16;
    fp8.dtype = DType::kFloat8;
    llm::ParallelConfig parallel = pp2_dp2();
    parallel.tp = c.tp;
    parallel.sequence_parallel = c.tp > 1;
    if (c.recompute_modules[0] != '\0') {
      parallel.recompute = llm::Recompute::kSelective;
      parallel.recompute_modules = llm::parse_recompute_modules(c.recompute_modules, "<test>", "");
    }
    EXPECT_DOUBLE_EQ(
        activation_bytes_per_layer(fp8, parallel) - activation_bytes_per_layer(bf16, parallel),
        c.per_layer_bytes);
    const Measured bf16_replay = measure(bf16, parallel);
    const Measured fp8_replay = measure(fp8, parallel);
    const double in_stage = llm::layers_of_stage(fp8, parallel, 0) *
                            static_cast<double>(fp8_replay.closed.microbatches_in_flight);
    EXPECT_DOUBLE_EQ(static_cast<double>(fp8_replay.activations_entering_backward) -
                         static_cast<double>(bf16_replay.activations_entering_backward),
                     c.per_layer_bytes * in_stage);
  }
}

// FP8 with multi-latent attention and multi-token prediction: every Transformer Engine linear
// layer of the MLA block (the duplicated down projections whole, the up projections and
// linear_proj over TP) and each MTP module's eh_proj keeps an FP8 copy and its transpose.
TEST(LlmMemoryAgreement, Fp8MultiLatentAttentionAndMultiTokenPrediction) {
  llm::TransformerConfig model = small_mla();
  model.dtype = DType::kFloat8;
  llm::ParallelConfig parallel = pp2_dp2();
  expect_agreement(model, parallel);
  parallel.tp = 2;
  parallel.sequence_parallel = true;
  expect_agreement(model, parallel);
  const Measured bf16 = measure(small_mla(), parallel);
  const Measured fp8 = measure(model, parallel);
  EXPECT_EQ(fp8.report.live_at_peak[MemoryCategory::kParameters] -
                bf16.report.live_at_peak[MemoryCategory::kParameters],
            fp8.closed.fp8_weight_bytes);
  // By hand, per TP rank of a layer: q_down 256 x 96 and kv_down 256 x (64 + 32) whole,
  // q_up 96 x 4 heads x (64 + 32), kv_up 64 x 4 heads x (64 + 48) and linear_proj
  // 4 heads x 48 x 256 over TP 2, the gated MLP 3 x 256 x 896 over TP 2; one byte for the
  // copy and one for its transpose.
  const std::int64_t per_layer =
      256 * 96 + 256 * 96 + (96 * 4 * 96 + 64 * 4 * 112 + 4 * 48 * 256 + 3 * 256 * 896) / 2;
  EXPECT_EQ(fp8.closed.fp8_weight_bytes, 2 * per_layer * llm::layers_of_stage(model, parallel, 0));
  // The up projections' FP8 transposes (no SP), and without query compression.
  parallel.sequence_parallel = false;
  expect_agreement(model, parallel);
  llm::TransformerConfig uncompressed = model;
  uncompressed.mla.q_lora_rank = 0;
  expect_agreement(uncompressed, pp2_dp2());
  llm::ParallelConfig recomputed = pp2_dp2();
  recomputed.recompute = llm::Recompute::kSelective;
  recomputed.recompute_modules =
      llm::parse_recompute_modules("mla_up_proj,layernorm", "<test>", "");
  expect_agreement(model, recomputed);
  expect_agreement(uncompressed, recomputed);
  const llm::TransformerConfig mtp = with_experts_and_mtp(model);
  llm::ParallelConfig experts = pp2_dp2();
  experts.ep = 2;
  expect_agreement(mtp, experts, 0, 1);
  expect_agreement(mtp, experts);
  experts.tp = 2;
  experts.sequence_parallel = true;  // eh_proj's bf16 rows gathered again
  expect_agreement(mtp, experts, 0, 1);
  expect_agreement(mtp, experts);
}

// FP8 primary weights (fp8_param_gather): every linear weight is one E4M3 byte in the FP8
// parameter buffer plus its transpose, where the bf16-weight recipe holds 2 bytes of weight, an
// FP8 copy and a transpose: 2 bytes less per linear parameter in the closed form and in the
// replay, dense and with experts, delayed and current scaling, MLA with MTP.
TEST(LlmMemoryAgreement, Fp8PrimaryWeightsHoldOneByteAndTheirTranspose) {
  auto primary_against_copies = [](const llm::TransformerConfig& model,
                                   llm::ParallelConfig parallel, int stage) {
    parallel.zero_stage = std::max(1, parallel.zero_stage);
    parallel.fp8_param_gather = true;
    expect_agreement(model, parallel, 0, stage);
    const Measured primary = measure(model, parallel, {}, stage);
    parallel.fp8_param_gather = false;
    const Measured copies = measure(model, parallel, {}, stage);
    // The closed form's FP8-cast linear parameters: half its copies' bytes.
    const Bytes linear = copies.closed.fp8_weight_bytes / 2;
    EXPECT_GT(linear, 0);
    EXPECT_EQ(primary.closed.fp8_weight_bytes, linear);
    EXPECT_EQ(primary.closed.parameter_bytes, copies.closed.parameter_bytes - linear);
    EXPECT_EQ(primary.closed.gradient_bytes, copies.closed.gradient_bytes);
    EXPECT_EQ(primary.closed.optimizer_bytes, copies.closed.optimizer_bytes);
    EXPECT_EQ(copies.report.live_at_peak[MemoryCategory::kParameters] -
                  primary.report.live_at_peak[MemoryCategory::kParameters],
              2 * linear);
  };
  llm::TransformerConfig dense = small_gpt();
  dense.dtype = DType::kFloat8;
  primary_against_copies(dense, pp2_dp2(), 0);
  primary_against_copies(dense, pp2_dp2(), 1);
  dense.fp8_recipe = llm::Fp8Recipe::kCurrent;
  llm::ParallelConfig tp2 = pp2_dp2();
  tp2.tp = 2;
  tp2.sequence_parallel = true;
  primary_against_copies(dense, tp2, 0);
  llm::TransformerConfig moe = small_moe();
  moe.dtype = DType::kFloat8;
  llm::ParallelConfig experts = pp2_dp2();
  experts.dp = 4;
  experts.ep = 2;
  experts.overlap_grad_reduce = true;
  experts.overlap_param_gather = true;
  primary_against_copies(moe, experts, 0);
  experts.zero_stage = 2;
  primary_against_copies(moe, experts, 1);
  llm::TransformerConfig mla = small_mla();
  mla.dtype = DType::kFloat8;
  llm::ParallelConfig mla_experts = pp2_dp2();
  mla_experts.ep = 2;
  primary_against_copies(with_experts_and_mtp(mla), mla_experts, 1);
}

// One stage holding both ends (PP 1): a tied word embedding is one matrix for the input
// embedding and the output layer, an untied model has the output layer's weights besides: v h
// more parameters (bf16), gradients (bf16 here) and Adam state (12 bytes), in the closed form
// and in the trace alike. (expect_agreement checks stage 0 of PP > 1 only: at PP 1 the stage's
// final norm is counted as a layer norm by one side and as an RMSNorm by the other.)
TEST(LlmMemoryAgreement, TiedAndUntiedEmbeddingsOnOneStage) {
  llm::ParallelConfig parallel = pp2_dp2();
  parallel.pp = 1;
  llm::TransformerConfig tied = small_llama();
  tied.tied_embeddings = true;
  llm::TransformerConfig untied = small_llama();
  untied.tied_embeddings = false;
  const Measured one = measure(tied, parallel);
  const Measured two = measure(untied, parallel);
  const Bytes head = static_cast<Bytes>(tied.vocab) * tied.hidden;
  EXPECT_EQ(two.closed.parameter_bytes - one.closed.parameter_bytes, 2 * head);
  EXPECT_EQ(two.closed.gradient_bytes - one.closed.gradient_bytes, 2 * head);
  EXPECT_EQ(two.closed.optimizer_bytes - one.closed.optimizer_bytes, 12 * head);
  for (const auto& [category, bytes] : {std::pair{MemoryCategory::kParameters, 2 * head},
                                        std::pair{MemoryCategory::kGradients, 2 * head},
                                        std::pair{MemoryCategory::kOptimizerState, 12 * head}})
    EXPECT_NEAR(
        static_cast<double>(two.report.live_at_peak[category] - one.report.live_at_peak[category]),
        static_cast<double>(bytes), kRoundingBytes);
  // With PP > 1 the last stage holds a copy of a tied matrix: stage 0 is the same either way.
  parallel.pp = 2;
  EXPECT_EQ(measure(untied, parallel).closed.parameter_bytes,
            measure(tied, parallel).closed.parameter_bytes);
}

}  // namespace
}  // namespace perfsim::memory

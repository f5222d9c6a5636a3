// Multi-latent attention (LayerEmitter::mla_attention_forward / mla_attention_backward), as
// Megatron-Core's MLASelfAttention runs it with Transformer Engine modules
// (megatron/core/transformer/multi_latent_attention.py, get_gpt_layer_with_transformer_engine
// _spec with multi_latent_attention): linear_q_down_proj and linear_kv_down_proj are TELinear
// with parallel_mode "duplicated" (whole weights on every TP rank, applied to the rank's own
// sequence-parallel tokens, no collective), linear_q_up_proj and linear_kv_up_proj column-
// parallel over heads (TELayerNormColumnParallelLinear: the latent norm fused in front, the
// normed latent all-gathered over TP with SP), k_pos_emb all-gathered over TP with SP
// (gather_from_sequence_parallel_region), linear_proj row-parallel (in LayerEmitter).
#include "generators/llm/llm_layer_emitter.hpp"

namespace perfsim::generators::llm {
namespace {

// Informational flops per element (the kernel models price these kernels by their bytes).
constexpr double kNormFlops = 8;
constexpr double kNormBackwardFlops = 12;
constexpr double kRopeFlops = 3;  // two multiplies and an add per rotated element

}  // namespace

// linear_q_up_proj reads the normed query latent (the norm writes the amax); without query
// compression linear_q_proj reads the gathered hidden states (an amax kernel).
Fp8Scaling LayerEmitter::q_up_scaling() const {
  return shapes_.q_lora_rank > 0 ? kAmaxNormTpReduced : kAmaxKernelTpReduced;
}

TensorRef LayerEmitter::sequence_gather(const TensorRef& local, std::int64_t width) {
  if (tp_.size == 1 || !shapes_.sequence_parallel)
    return local;
  const std::int64_t rows = shapes_.seq_local * shapes_.batch;
  TensorRef full = activation({shapes_.tokens(), width});
  builder_.communicate({CollectiveKind::kAllGather, tp_.name, tp_.size, -1, kTensorParallelStream},
                       RankTraceBuilder::view(local, {rows, width}), full);
  return full;
}

TensorRef LayerEmitter::sequence_reduce(const TensorRef& full, std::int64_t width) {
  if (tp_.size == 1)
    return full;
  const TensorRef shaped = RankTraceBuilder::view(full, {shapes_.tokens(), width});
  if (!shapes_.sequence_parallel) {
    builder_.communicate(
        {CollectiveKind::kAllReduce, tp_.name, tp_.size, -1, kTensorParallelStream}, shaped,
        shaped);
    return shaped;
  }
  TensorRef local = activation({shapes_.seq_local * shapes_.batch, width});
  builder_.communicate(
      {CollectiveKind::kReduceScatter, tp_.name, tp_.size, -1, kTensorParallelStream}, shaped,
      local);
  return local;
}

// Ring attention as LayerEmitter::ring_attention_forward does it (Megatron CP with causal load
// balancing, every step half of the unmasked work), with K and V of different head dimensions
// travelling as one buffer (Transformer Engine's p2p CP concatenates them).
TensorRef LayerEmitter::mla_ring_attention_forward(const MlaSaved& saved) {
  const std::int64_t b = shapes_.batch, s = shapes_.seq, heads = shapes_.heads_local;
  const std::int64_t q_dim = shapes_.q_head_dim(), v_dim = shapes_.v_head_dim;
  const TensorRef query = RankTraceBuilder::view(saved.query, {b, heads, s, q_dim});
  TensorRef kv = activation({b, heads, s, q_dim + v_dim});
  TensorRef context = activation({b, heads, s, v_dim});
  const double half_work = 1.0 * b * heads * s * s * (q_dim + v_dim);
  for (std::int64_t step = 0; step < cp_.size; ++step) {
    const bool exchanging = step + 1 < cp_.size;
    const TensorRef next = exchanging ? exchange_chunk(kv) : kv;
    const bool own_chunk = step == 0;
    const TensorRef k = own_chunk ? RankTraceBuilder::view(saved.key, {b, heads, s, q_dim})
                                  : RankTraceBuilder::view(kv, {b, heads, s / 2, q_dim});
    const TensorRef v = own_chunk ? RankTraceBuilder::view(saved.value, {b, heads, s, v_dim})
                                  : RankTraceBuilder::view(kv, {b, heads, s / 2, v_dim});
    ContentionScope beside(builder_, 0, exchanging ? cp_hbm_GBps(CollectiveKind::kSend) : 0);
    flash_attention("aten::_scaled_dot_product_flash_attention", {query, k, v}, context, own_chunk,
                    half_work);
    kv = next;
  }
  return context;
}

TensorRef LayerEmitter::mla_ring_attention_backward(const TensorRef& grad_context,
                                                    const MlaSaved& saved,
                                                    const TensorRef& output) {
  const std::int64_t b = shapes_.batch, s = shapes_.seq, heads = shapes_.heads_local;
  const std::int64_t q_dim = shapes_.q_head_dim(), v_dim = shapes_.v_head_dim;
  const TensorRef query = saved_operand(saved.query, {b, heads, s, q_dim});
  const TensorRef own_k = saved_operand(saved.key, {b, heads, s, q_dim});
  const TensorRef own_v = saved_operand(saved.value, {b, heads, s, v_dim});
  // K, V and their gradients travel together.
  TensorRef kv_and_grad = activation({b, heads, s, 2 * (q_dim + v_dim)});
  TensorRef grad_qkv = activation({shapes_.tokens(), heads * (2 * q_dim + v_dim)});
  const double half_work = 1.0 * b * heads * s * s * (3 * q_dim + 2 * v_dim);
  for (std::int64_t step = 0; step < cp_.size; ++step) {
    const bool exchanging = step + 1 < cp_.size;
    const TensorRef next = exchanging ? exchange_chunk(kv_and_grad) : kv_and_grad;
    const bool own_chunk = step == 0;
    ContentionScope beside(builder_, 0, exchanging ? cp_hbm_GBps(CollectiveKind::kSend) : 0);
    flash_attention(
        "aten::_scaled_dot_product_flash_attention_backward",
        {RankTraceBuilder::view(grad_context, {b, heads, s, v_dim}), query,
         own_chunk ? own_k : RankTraceBuilder::view(kv_and_grad, {b, heads, s / 2, q_dim}),
         own_chunk ? own_v : RankTraceBuilder::view(kv_and_grad, {b, heads, s / 2, v_dim}),
         saved_operand(output, {b, heads, s, v_dim})},
        grad_qkv, own_chunk, half_work);
    kv_and_grad = next;
  }
  return grad_qkv;
}

TensorRef LayerEmitter::mla_attention_forward(const TensorRef& normed, const LayerWeights& weights,
                                              MlaSaved& saved) {
  const std::int64_t h = shapes_.hidden;
  const std::int64_t local_rows = shapes_.seq_local * shapes_.batch;
  const std::int64_t b = shapes_.batch, s = shapes_.seq, heads = shapes_.heads_local;
  const std::int64_t q_lora = shapes_.q_lora_rank, kv_lora = shapes_.kv_lora_rank;
  const std::int64_t rope = shapes_.qk_rope_head_dim;
  const std::int64_t v_dim = shapes_.v_head_dim, q_dim = shapes_.q_head_dim();
  // Down projections on this rank's own tokens (duplicated weights: no collective).
  TensorRef q_input;
  if (q_lora > 0) {
    saved.q_compressed = linear_forward(normed, weights.q_down, weights.q_down_fp8, local_rows, h,
                                        q_lora, kAmaxKernel, &saved.q_down_input_fp8);
    saved.q_normed = elementwise("aten::native_layer_norm", {saved.q_compressed},
                                 {local_rows, q_lora}, kNormFlops);
    q_input = sequence_gather(saved.q_normed, q_lora);
  } else {
    // linear_q_proj: an ordinary column-parallel layer on the gathered hidden states.
    q_input = tp_gather(normed);
  }
  saved.kv_combined =
      linear_forward(normed, weights.kv_down, weights.kv_down_fp8, local_rows, h,
                     shapes_.kv_down_width(), kAmaxKernel, &saved.kv_down_input_fp8);
  saved.kv_normed = elementwise("aten::native_layer_norm",
                                {RankTraceBuilder::view(saved.kv_combined, {local_rows, kv_lora})},
                                {local_rows, kv_lora}, kNormFlops);
  const TensorRef kv_input = sequence_gather(saved.kv_normed, kv_lora);
  const TensorRef k_pe =
      sequence_gather(RankTraceBuilder::view(saved.kv_combined, {local_rows, rope}), rope);
  saved.k_pe = k_pe;
  mla_up_projections(q_input, kv_input, k_pe, weights, saved);
  if (cp_.size > 1)
    return mla_ring_attention_forward(saved);
  // Causal flash attention, q/k head dimension nope + rope, v head dimension v_head_dim:
  // half of 2 b heads s^2 (q_dim + v_dim).
  TensorRef context = activation({b, heads, s, v_dim});
  flash_attention("aten::_scaled_dot_product_flash_attention",
                  {RankTraceBuilder::view(saved.query, {b, heads, s, q_dim}),
                   RankTraceBuilder::view(saved.key, {b, heads, s, q_dim}),
                   RankTraceBuilder::view(saved.value, {b, heads, s, v_dim})},
                  context, true, 1.0 * b * heads * s * s * (q_dim + v_dim));
  return context;
}

void LayerEmitter::mla_rope_forward(const TensorRef& q, const TensorRef& kv, const TensorRef& k_pe,
                                    MlaSaved& saved) {
  const std::int64_t tokens = shapes_.tokens();
  const std::int64_t s = shapes_.seq, heads = shapes_.heads_local;
  const std::int64_t rope = shapes_.qk_rope_head_dim, nope = shapes_.qk_nope_head_dim;
  const std::int64_t v_dim = shapes_.v_head_dim;
  // Rotary embedding of the rope parts; query, key and value as new contiguous tensors.
  const std::int64_t value_width = heads * v_dim;
  if (model_.rope_fusion) {
    const TensorRef frequencies = builder_.tensor({s, 1, 1, rope}, DType::kFloat32);
    saved.query = elementwise("megatron::fused_mla_rope_q", {q, frequencies},
                              {tokens, shapes_.q_up_width()}, kRopeFlops);
    saved.key = activation({tokens, shapes_.q_up_width()});
    saved.value = activation({tokens, value_width});
    builder_.compute("megatron::fused_mla_rope_kv", {kv, k_pe, frequencies},
                     {saved.key, saved.value}, KernelCategory::kOther,
                     kRopeFlops * static_cast<double>(tokens * heads * rope));
  } else {
    // apply_rotary_pos_emb on q_pos_emb and on the shared k_pos_emb, then the cats (k_pe
    // expanded over the heads) and value.contiguous().
    const TensorRef q_pe = rope_forward(q, heads, rope);
    const TensorRef k_pe_rotated = rope_forward(k_pe, 1, rope);
    saved.query = activation({tokens, shapes_.q_up_width()});
    builder_.compute("aten::cat", {RankTraceBuilder::view(q, {tokens, heads * nope}), q_pe},
                     {saved.query}, KernelCategory::kMemory, 0);
    saved.key = activation({tokens, shapes_.q_up_width()});
    builder_.compute("aten::cat",
                     {RankTraceBuilder::view(kv, {tokens, heads * nope}),
                      RankTraceBuilder::view(k_pe_rotated, {tokens, 1, rope})},
                     {saved.key}, KernelCategory::kMemory, 0);
    saved.value = activation({tokens, value_width});
    builder_.compute("aten::copy_",
                     {saved.value, RankTraceBuilder::view(kv, {tokens, value_width})},
                     {saved.value}, KernelCategory::kMemory, 0);
  }
}

void LayerEmitter::mla_up_projections(const TensorRef& q_input, const TensorRef& kv_input,
                                      const TensorRef& k_pe, const LayerWeights& weights,
                                      MlaSaved& saved) {
  const std::int64_t tokens = shapes_.tokens();
  // Up projections over the local heads (the latents' norms are fused in front: under FP8
  // current scaling they write the amax, reduced over TP with SP). FP8: the casts'
  // transposes are saved (MlaSaved) unless the backward gathers the bf16 latent again.
  const bool keeps_fp8 = !backward_gathers_input();
  const TensorRef q = linear_forward(q_input, weights.q_up, weights.q_up_fp8, tokens,
                                     shapes_.q_up_input(), shapes_.q_up_width(), q_up_scaling(),
                                     keeps_fp8 ? &saved.q_up_input_fp8 : nullptr);
  const TensorRef kv = linear_forward(
      kv_input, weights.kv_up, weights.kv_up_fp8, tokens, shapes_.kv_lora_rank,
      shapes_.kv_up_width(), kAmaxNormTpReduced, keeps_fp8 ? &saved.kv_up_input_fp8 : nullptr);
  mla_rope_forward(q, kv, k_pe, saved);
}

MlaSaved LayerEmitter::mla_recompute_up_proj(const MlaSaved& kept, const TensorRef& normed,
                                             const LayerWeights& weights) {
  const std::int64_t local_rows = shapes_.seq_local * shapes_.batch;
  const std::int64_t q_lora = shapes_.q_lora_rank, kv_lora = shapes_.kv_lora_rank;
  MlaSaved remade = kept;
  // The checkpointed function's inputs: q_compressed, the kv latent (the front of
  // kv_combined), k_pe; without query compression linear_q_proj reads the normed hidden states.
  TensorRef q_input;
  if (q_lora > 0) {
    remade.q_normed = elementwise("aten::native_layer_norm",
                                  {saved_operand(kept.q_compressed, {local_rows, q_lora})},
                                  {local_rows, q_lora}, kNormFlops);
    q_input = sequence_gather(remade.q_normed, q_lora);
  } else {
    q_input = tp_gather(saved_operand(normed, {shapes_.seq_local, shapes_.batch, shapes_.hidden}));
  }
  remade.kv_normed = elementwise("aten::native_layer_norm",
                                 {saved_operand(kept.kv_combined, {local_rows, kv_lora})},
                                 {local_rows, kv_lora}, kNormFlops);
  const TensorRef kv_input = sequence_gather(remade.kv_normed, kv_lora);
  // The FP8 inputs the up projections save are made again too (the forward's went with the
  // checkpoint).
  remade.q_up_input_fp8 = remade.kv_up_input_fp8 = TensorRef{};
  mla_up_projections(q_input, kv_input, saved_operand(kept.k_pe, kept.k_pe.shape), weights, remade);
  return remade;
}

TensorRef LayerEmitter::saved_wgrad_input(const TensorRef& saved_fp8, const TensorRef& local,
                                          std::int64_t width) {
  if (saved_fp8.tensor_id >= 0)
    return saved_operand(saved_fp8, {width, shapes_.tokens()});
  return sequence_gather(saved_operand(local, {shapes_.seq_local * shapes_.batch, width}), width);
}

TensorRef LayerEmitter::mla_attention_backward(const TensorRef& grad_context,
                                               const LayerWeights& weights,
                                               const ForwardSaved& saved) {
  MlaSaved mla = saved.mla;
  if (recomputes(&RecomputeModules::mla_up_proj)) {
    // qkv_up_proj_and_rope_apply again as the attention output's gradient arrives.
    builder_.set_phase("recompute");
    mla = mla_recompute_up_proj(saved.mla, saved.ln1, weights);
    builder_.set_phase("backward");
  }
  const std::int64_t h = shapes_.hidden, tokens = shapes_.tokens();
  const std::int64_t local_rows = shapes_.seq_local * shapes_.batch;
  const std::int64_t b = shapes_.batch, s = shapes_.seq, heads = shapes_.heads_local;
  const std::int64_t q_lora = shapes_.q_lora_rank, kv_lora = shapes_.kv_lora_rank;
  const std::int64_t rope = shapes_.qk_rope_head_dim, nope = shapes_.qk_nope_head_dim;
  const std::int64_t v_dim = shapes_.v_head_dim, q_dim = shapes_.q_head_dim();
  const std::int64_t q_width = shapes_.q_up_width(), kv_width = shapes_.kv_up_width();
  const std::vector<std::int64_t> local_shape{shapes_.seq_local, b, h};
  // Flash attention backward: the gradients of query, key and value side by side.
  // The fused backward reads the forward's output O too (attention_core_backward).
  const TensorRef grad_qkv = cp_.size > 1
                                 ? mla_ring_attention_backward(grad_context, mla, saved.context)
                                 : activation({tokens, 2 * q_width + heads * v_dim});
  if (cp_.size == 1)
    flash_attention("aten::_scaled_dot_product_flash_attention_backward",
                    {RankTraceBuilder::view(grad_context, {b, heads, s, v_dim}),
                     saved_operand(mla.query, {b, heads, s, q_dim}),
                     saved_operand(mla.key, {b, heads, s, q_dim}),
                     saved_operand(mla.value, {b, heads, s, v_dim}),
                     saved_operand(saved.context, {b, heads, s, v_dim})},
                    grad_qkv, true, 1.0 * b * heads * s * s * (3 * q_dim + 2 * v_dim));
  const TensorRef grad_query = builder_.alias(grad_qkv, {tokens, q_width}, grad_qkv.dtype, 0);
  const TensorRef grad_key =
      builder_.alias(grad_qkv, {tokens, q_width}, grad_qkv.dtype, tokens * q_width);
  const TensorRef grad_value =
      builder_.alias(grad_qkv, {tokens, heads * v_dim}, grad_qkv.dtype, 2 * tokens * q_width);
  // The rotary embedding backward: gradients of the up projections' outputs and of k_pe.
  TensorRef grad_q, grad_kv, grad_k_pe;
  if (model_.rope_fusion) {
    const TensorRef frequencies = builder_.tensor({s, 1, 1, rope}, DType::kFloat32);
    grad_q = elementwise("megatron::fused_mla_rope_q_backward", {grad_query, frequencies},
                         {tokens, q_width}, kRopeFlops);
    grad_kv = activation({tokens, kv_width});
    grad_k_pe = activation({tokens, rope});
    builder_.compute("megatron::fused_mla_rope_kv_backward", {grad_key, grad_value, frequencies},
                     {grad_kv, grad_k_pe}, KernelCategory::kOther,
                     kRopeFlops * static_cast<double>(tokens * heads * rope));
  } else {
    // The cats' backward are views; rotate-half's backward on q's rope part and on k_pe after
    // the expand's backward (a sum over the heads); the splits' backward are cats.
    rope_backward(grad_qkv, heads, rope, 0);
    grad_k_pe = activation({tokens, rope});
    builder_.compute(
        "aten::sum",
        {builder_.alias(grad_qkv, {tokens, heads, rope}, grad_qkv.dtype, tokens * q_width)},
        {grad_k_pe}, KernelCategory::kOther, static_cast<double>(tokens * heads * rope));
    rope_backward(grad_k_pe, 1, rope, 0);
    grad_q = activation({tokens, q_width});
    builder_.compute("aten::cat", {grad_query}, {grad_q}, KernelCategory::kMemory, 0);
    grad_kv = activation({tokens, kv_width});
    builder_.compute("aten::cat",
                     {RankTraceBuilder::view(grad_key, {tokens, heads * nope}), grad_value},
                     {grad_kv}, KernelCategory::kMemory, 0);
  }
  auto latent_norm_backward = [&](const TensorRef& grad_normed, const TensorRef& norm_input,
                                  std::int64_t width) {
    return elementwise("aten::native_layer_norm_backward",
                       {RankTraceBuilder::view(grad_normed, {local_rows, width}),
                        saved_operand(norm_input, {local_rows, width})},
                       {local_rows, width}, kNormBackwardFlops);
  };
  // linear_kv_up_proj: data gradient reduced over TP, weight gradient on the re-gathered
  // latent, then kv_layernorm's backward.
  // FP8: each output gradient cast to E5M2 (with its transpose); an input gathered again in
  // bf16 with SP is cast again for the weight gradient.
  const bool regathered = shapes_.sequence_parallel && tp_.size > 1;
  const TensorRef grad_kv_operand = backward_operand(grad_kv, tokens, kv_width);
  const TensorRef grad_kv_latent = sequence_reduce(
      data_gradient(grad_kv_operand, weights.kv_up, weights.kv_up_fp8, tokens, kv_width, kv_lora),
      kv_lora);
  weight_gradient(saved_wgrad_input(mla.kv_up_input_fp8, mla.kv_normed, kv_lora), grad_kv_operand,
                  kv_lora, tokens, kv_width, regathered);
  const TensorRef grad_kv_compressed =
      latent_norm_backward(grad_kv_latent, mla.kv_combined, kv_lora);
  // k_pe's gradient back to this rank's tokens (the all-gather's backward, with SP).
  const TensorRef grad_k_pe_local =
      shapes_.sequence_parallel ? sequence_reduce(grad_k_pe, rope) : grad_k_pe;
  // torch.split's backward: the latent's and k_pe's gradients side by side.
  const TensorRef grad_kv_combined = activation({local_rows, shapes_.kv_down_width()});
  builder_.compute("aten::cat", {grad_kv_compressed, grad_k_pe_local}, {grad_kv_combined},
                   KernelCategory::kMemory, 0);
  // The query side.
  TensorRef grad_normed_from_q;
  TensorRef grad_q_compressed;
  if (q_lora > 0) {
    const TensorRef grad_q_operand = backward_operand(grad_q, tokens, q_width);
    const TensorRef grad_q_latent = sequence_reduce(
        data_gradient(grad_q_operand, weights.q_up, weights.q_up_fp8, tokens, q_width, q_lora),
        q_lora);
    weight_gradient(saved_wgrad_input(mla.q_up_input_fp8, mla.q_normed, q_lora), grad_q_operand,
                    q_lora, tokens, q_width, regathered);
    grad_q_compressed = backward_operand(
        latent_norm_backward(grad_q_latent, mla.q_compressed, q_lora), local_rows, q_lora);
    grad_normed_from_q =
        data_gradient(grad_q_compressed, weights.q_down, weights.q_down_fp8, local_rows, q_lora, h);
  } else {
    // linear_q_proj, column-parallel on the hidden states: data gradient reduced over TP (on
    // h), weight gradient on the gathered normed input.
    const TensorRef grad_q_operand = backward_operand(grad_q, tokens, q_width);
    grad_normed_from_q = tp_reduce(
        data_gradient(grad_q_operand, weights.q_up, weights.q_up_fp8, tokens, q_width, h));
    weight_gradient(saved_wgrad_input(mla.q_up_input_fp8, saved.ln1, h), grad_q_operand, h, tokens,
                    q_width, regathered);
  }
  // The down projections: data gradients on this rank's tokens, summed; weight gradients.
  const TensorRef grad_kv_combined_operand =
      backward_operand(grad_kv_combined, local_rows, shapes_.kv_down_width());
  const TensorRef grad_normed_from_kv =
      data_gradient(grad_kv_combined_operand, weights.kv_down, weights.kv_down_fp8, local_rows,
                    shapes_.kv_down_width(), h);
  // FP8: each reads the transpose its forward's cast saved (MlaSaved), not the bf16 ln1.
  auto down_input = [&](const TensorRef& saved_fp8) {
    return saved_wgrad_operand(saved_fp8, {h, local_rows}, saved.ln1, {h, local_rows});
  };
  weight_gradient(down_input(mla.kv_down_input_fp8), grad_kv_combined_operand, h, local_rows,
                  shapes_.kv_down_width(), false);
  if (q_lora > 0)
    weight_gradient(down_input(mla.q_down_input_fp8), grad_q_compressed, h, local_rows, q_lora,
                    false);
  const TensorRef grad_normed =
      elementwise("aten::add",
                  {RankTraceBuilder::view(grad_normed_from_q, {local_rows, h}),
                   RankTraceBuilder::view(grad_normed_from_kv, {local_rows, h})},
                  {local_rows, h}, 1);
  // The input layer norm's backward.
  return elementwise(
      "aten::native_layer_norm_backward",
      {RankTraceBuilder::view(grad_normed, local_shape), saved_operand(saved.x, local_shape)},
      local_shape, kNormBackwardFlops);
}

}  // namespace perfsim::generators::llm

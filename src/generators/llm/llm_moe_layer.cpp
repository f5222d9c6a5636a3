// The MoE block of a transformer layer (LayerEmitter::moe_forward / moe_backward), as
// Megatron-LM's MoELayer runs it with the alltoall token dispatcher and Transformer Engine's
// grouped linear layers. Every rank is modelled as the busiest rank of its EP group
// (LocalShapes::received_tokens): the all-to-all synchronizes the group, so it sets the pace.
#include "generators/llm/llm_delayed_wgrad.hpp"
#include "generators/llm/llm_layer_emitter.hpp"

namespace perfsim::generators::llm {

std::int64_t LayerEmitter::tokens_per_expert() const {
  return (shapes_.expert_tokens() + shapes_.experts_local - 1) / shapes_.experts_local;
}

TensorRef LayerEmitter::grouped_gemm(const TensorRef& a, const TensorRef& b, std::int64_t m,
                                     std::int64_t k, std::int64_t n) {
  const std::int64_t experts = shapes_.experts_local;
  TensorRef out = activation({experts, m, n});
  builder_.compute(
      "te::grouped_gemm",
      {RankTraceBuilder::view(a, {experts, m, k}), RankTraceBuilder::view(b, {experts, k, n})},
      {out}, KernelCategory::kGemm, 2.0 * experts * m * k * n);
  expert_gemm_launches();
  return out;
}

TensorRef LayerEmitter::expert_all_to_all(const TensorRef& rows, std::int64_t out_rows) {
  TensorRef out = activation({out_rows, shapes_.hidden});
  if (ep_.size == 1)
    return RankTraceBuilder::view(rows, {out_rows, shapes_.hidden});
  // Unequal splits (all-to-allv); the collective model prices the larger of the bytes sent and
  // received, which on the busiest rank is the received_tokens side.
  builder_.communicate({CollectiveKind::kAllToAllv, ep_.name, ep_.size, -1, kExpertParallelStream},
                       rows, out);
  return out;
}

// Over the expert tensor-parallel group (ETP ranks, the TP group by default).
TensorRef LayerEmitter::tp_gather_rows(const TensorRef& local, std::int64_t rows,
                                       std::int64_t width) {
  const int etp = ep_.tensor_size;
  if (etp == 1)
    return local;
  TensorRef full = activation({rows * etp, width});
  builder_.communicate(
      {CollectiveKind::kAllGather, ep_.tensor_name, etp, -1, kTensorParallelStream},
      RankTraceBuilder::view(local, {rows, width}), full);
  return full;
}

TensorRef LayerEmitter::tp_reduce_scatter_rows(const TensorRef& full, std::int64_t rows,
                                               std::int64_t width) {
  const int etp = ep_.tensor_size;
  if (etp == 1)
    return full;
  TensorRef local = activation({rows, width});
  builder_.communicate(
      {CollectiveKind::kReduceScatter, ep_.tensor_name, etp, -1, kTensorParallelStream},
      RankTraceBuilder::view(full, {rows * etp, width}), local);
  return local;
}

TensorRef LayerEmitter::expert_weight_operand(const TensorRef& weight, const Fp8Copy& fp8,
                                              bool transposed, std::int64_t k, std::int64_t n) {
  const std::vector<std::int64_t> shape{shapes_.experts_local, k, n};
  if (!shapes_.fp8_linear)
    return RankTraceBuilder::view(weight, shape);
  return fp8_weight_operand(fp8, transposed, shape);
}

TensorRef LayerEmitter::alltoall_dispatch(const TensorRef& normed, const TensorRef& probabilities,
                                          MoeSaved& saved, std::int64_t tokens,
                                          const std::function<void()>& beside_all_to_alls) {
  const std::int64_t h = shapes_.hidden, received = shapes_.received_tokens;
  dispatcher_token_counts(tokens);
  // The host waits for the copied counts: before the permute when tokens are dropped without
  // padding (it sizes the permute's output), after it when dropless; never when padded.
  const bool drops_unpadded = drops_tokens() && !moe_switches_.pad_to_capacity;
  if (drops_unpadded)
    dispatcher_wait();
  const Permuted permuted = permute_tokens(normed, probabilities, saved.routing_map, tokens);
  if (!drops_tokens())
    dispatcher_wait();
  const TensorRef arrived = expert_all_to_all(permuted.rows, received);
  const TensorRef arrived_probabilities =
      probabilities_all_to_all(permuted.probabilities, received);
  beside_all_to_alls();
  return sort_chunks(tp_gather_rows(arrived, received, h),
                     tp_gather_rows(arrived_probabilities, received, 1), shapes_.expert_tokens(), h,
                     false)
      .rows;
}

TensorRef LayerEmitter::grouped_experts_forward(const TensorRef& expert_input,
                                                const LayerWeights& weights, MoeSaved& saved) {
  const std::int64_t h = shapes_.hidden;
  const std::int64_t per_expert = tokens_per_expert();
  const std::int64_t rows = shapes_.experts_local * per_expert;
  // FP8 (Transformer Engine's grouped linear, as Megatron-Core runs the experts): each GEMM's
  // input cast to E4M3, the cast's transpose saved for the weight gradient (grouped_linear.py
  // saves the quantized inputmats; the bf16 rows are freed: the permute's backward does not
  // read them, the activation's backward reads its input), the weights' FP8 copies made at the
  // first micro-batch.
  const TensorRef fc1 =
      grouped_gemm(grouped_operand(expert_input, per_expert, h, &saved.expert_input_fp8),
                   expert_weight_operand(weights.expert_fc1, weights.expert_fc1_fp8, false, h,
                                         shapes_.expert_fc1_width),
                   per_expert, h, shapes_.expert_fc1_width);
  const TensorRef act = ffn_activation(fc1, rows, shapes_.expert_ffn_local);
  saved.expert_input = expert_input;
  saved.fc1 = fc1;
  saved.act = act;
  return grouped_gemm(grouped_operand(act, per_expert, shapes_.expert_ffn_local, &saved.act_fp8),
                      expert_weight_operand(weights.expert_fc2, weights.expert_fc2_fp8, false,
                                            shapes_.expert_ffn_local, h),
                      per_expert, shapes_.expert_ffn_local, h);
}

TensorRef LayerEmitter::moe_forward(const TensorRef& normed, const LayerWeights& weights,
                                    MoeSaved& saved) {
  const std::int64_t h = shapes_.hidden;
  const std::int64_t tokens = shapes_.seq_local * shapes_.batch;  // this rank's (SP) tokens
  const std::int64_t experts = shapes_.experts;
  const std::int64_t dispatched = shapes_.dispatched_tokens, received = shapes_.received_tokens;
  const std::vector<std::int64_t> local_shape{shapes_.seq_local, shapes_.batch, h};

  // Router: logits (fp32 from bf16 operands with moe_router_dtype fp32: TE's general_gemm
  // writes them so), then top-k and the aux loss (Megatron's TopKRouter; llm_moe_router.cpp).
  const TensorRef logits = mm(normed, weights.router, tokens, h, experts,
                              moe_switches_.router_fp32 ? DType::kFloat32 : DType::kUnknown);
  const TensorRef probabilities = router_forward(logits, tokens, saved);
  // Dispatch: the token counts to the host (llm_moe_host_path.cpp); each token copied once per
  // chosen expert with its probability, grouped by expert (llm_moe_permute.cpp); the host waits
  // for the counts; tokens and probabilities sent to the experts' ranks and regrouped by local
  // expert (the probabilities weight the experts' activation).
  // moe_shared_expert_overlap (alltoall dispatcher only): the shared experts' pieces around the
  // all-to-alls (llm_moe_shared_overlap.cpp). The flex dispatcher (llm_moe_flex.cpp) sends the
  // tokens first and permutes on arrival.
  const bool shared_overlap = shared_experts_overlapped();
  // FP8 with fp8_all_gather: the shared FC1's saved input is the gather's FP8 local rows.
  const TensorRef shared_input =
      shared_overlap ? shared_expert_input(normed, &saved.shared.fc1_input_fp8) : TensorRef{};
  const TensorRef expert_input =
      moe_switches_.flex ? flex_dispatch(normed, saved.routing_map, tokens)
                         : alltoall_dispatch(normed, probabilities, saved, tokens, [&] {
                             if (shared_overlap)
                               shared_expert_fc1_beside(shared_input, weights, saved.shared);
                           });
  // The local experts on their tokens: one expert after another without grouped GEMMs
  // (SequentialMLP, llm_moe_sequential.cpp), else Transformer Engine's grouped linears.
  const TensorRef fc2 = moe_switches_.grouped_gemm
                            ? grouped_experts_forward(expert_input, weights, saved)
                            : sequential_experts_forward(expert_input, weights, saved);
  // Combine: back over TP and EP, then each token's k rows summed (the probabilities were
  // applied in the activation).
  TensorRef combined, shared_output;
  if (moe_switches_.flex) {
    combined = flex_combine(fc2, tokens, saved.returned);
  } else {
    const TensorRef expert_output = tp_reduce_scatter_rows(
        sort_chunks(fc2, {}, shapes_.expert_tokens(), h, false).rows, received, h);
    saved.returned = expert_all_to_all(expert_output, dispatched);
    if (shared_overlap)
      shared_output = shared_expert_fc2_beside(weights, saved.shared);
    combined = unpermute_tokens(saved.returned, saved.routing_map, tokens);
  }
  const TensorRef routed = RankTraceBuilder::view(combined, local_shape);
  if (shapes_.shared_ffn_local == 0)
    return routed;
  if (shared_overlap)
    return elementwise("aten::add", {routed, shared_output}, local_shape, 1);
  const TensorRef shared_out =
      RankTraceBuilder::view(shared_experts_forward(normed, weights, saved.shared), local_shape);
  return elementwise("aten::add", {routed, shared_out}, local_shape, 1);
}

TensorRef LayerEmitter::shared_experts_forward(const TensorRef& normed, const LayerWeights& weights,
                                               MlpSaved& saved) {
  // The shared experts' FC1 reads the block's own norm (no LayerNormLinear): an amax kernel.
  const TensorRef input = gather_linear_input(normed, kAmaxKernelTpReduced, &saved.fc1_input_fp8);
  mlp_forward(input, weights, shapes_.shared_ffn_local, shapes_.shared_fc1_width,
              kAmaxKernelTpReduced, false, saved);
  return tp_reduce(saved.output);
}

TensorRef LayerEmitter::grouped_experts_backward(const TensorRef& grad_expert_output,
                                                 const LayerWeights& weights,
                                                 const MoeSaved& saved) {
  const std::int64_t h = shapes_.hidden;
  const std::int64_t per_expert = tokens_per_expert();
  const std::int64_t ffn = shapes_.expert_ffn_local, fc1_width = shapes_.expert_fc1_width;
  const std::int64_t rows = shapes_.experts_local * per_expert;
  // FP8: each output gradient cast to E5M2 with its transpose; the weights' FP8 transposes
  // were made with their copies.
  TensorRef act = saved.act;
  if (recomputes(&RecomputeModules::moe_act)) {
    // moe_act: FC2's input was freed after FC2's forward; the activation runs again on the
    // kept FC1 output as FC2's output gradient arrives (CheckpointWithoutOutput's hook).
    builder_.set_phase("recompute");
    const TensorRef fc1 = saved_operand(saved.fc1, {rows, fc1_width});
    act = ffn_activation(fc1, rows, ffn);
    builder_.set_phase("backward");
  }
  const TensorRef grad_fc2_out = grouped_operand(grad_expert_output, per_expert, h);
  const TensorRef grad_act = grouped_gemm(
      grad_fc2_out, expert_weight_operand(weights.expert_fc2, weights.expert_fc2_fp8, true, h, ffn),
      per_expert, h, ffn);
  {
    const DelayedWgradScope delayed(builder_, delay_wgrad_);
    // FP8: the saved FP8 transpose (also with moe_act: the recomputed bf16 activation is then
    // not read, as TE's saved FP8 copy outlives the checkpoint's freed output).
    const std::vector<std::int64_t> act_t{shapes_.experts_local, ffn, per_expert};
    grouped_gemm(saved_wgrad_operand(saved.act_fp8, act_t, act, act_t), grad_fc2_out, ffn,
                 per_expert, h);  // grad W2 = act^T dY per expert
    expert_dummy_wgrads();
  }
  const TensorRef grad_fc1 = ffn_activation_backward(grad_act, saved.fc1, rows, ffn);
  const TensorRef grad_fc1_out = grouped_operand(grad_fc1, per_expert, fc1_width);
  const TensorRef grad_expert_input = grouped_gemm(
      grad_fc1_out,
      expert_weight_operand(weights.expert_fc1, weights.expert_fc1_fp8, true, fc1_width, h),
      per_expert, fc1_width, h);
  {
    const DelayedWgradScope delayed(builder_, delay_wgrad_);
    const std::vector<std::int64_t> input_t{shapes_.experts_local, h, per_expert};
    grouped_gemm(saved_wgrad_operand(saved.expert_input_fp8, input_t, saved.expert_input, input_t),
                 grad_fc1_out, h, per_expert, fc1_width);  // grad W1 = X^T dY per expert
    expert_dummy_wgrads();
  }
  return grad_expert_input;
}

TensorRef LayerEmitter::moe_backward(const TensorRef& grad_output, const LayerWeights& weights,
                                     const ForwardSaved& layer) {
  const MoeSaved& saved = layer.moe;
  const std::int64_t h = shapes_.hidden;
  const std::int64_t tokens = shapes_.seq_local * shapes_.batch;
  const std::int64_t experts = shapes_.experts;
  const std::int64_t dispatched = shapes_.dispatched_tokens, received = shapes_.received_tokens;
  const std::vector<std::int64_t> local_shape{shapes_.seq_local, shapes_.batch, h};
  const TensorRef grad_tokens = RankTraceBuilder::view(grad_output, {tokens, h});
  // The routing map / TE's row-id map the permute kernels' backwards read: kept by their
  // autograd contexts, which the memory closed form does not count (not a saved tensor here).
  const TensorRef routing_map = builder_.tensor({tokens, experts}, DType::kBool);

  // Unpermute backward: the output gradient copied to each of a token's k rows (the
  // probabilities were applied in the experts, whose activation backward gives their gradient).
  const bool shared_overlap = shared_experts_overlapped();
  TensorRef grad_expert_output, grad_shared_fc1_beside;
  if (moe_switches_.flex) {
    grad_expert_output = flex_combine_backward(grad_tokens, saved.returned, tokens);
  } else {
    const TensorRef grad_rows = unpermute_backward(
        grad_tokens, saved_operand(saved.returned, {dispatched, h}), routing_map, tokens);
    const TensorRef grad_arrived = expert_all_to_all(grad_rows, received);
    if (shared_overlap)
      grad_shared_fc1_beside =
          shared_expert_fc2_backward_beside(grad_output, weights, saved.shared);
    grad_expert_output =
        sort_chunks(tp_gather_rows(grad_arrived, received, h), {}, shapes_.expert_tokens(), h, true)
            .rows;
  }
  // The experts backward: FC2 data and weight gradients, activation, FC1 data and weight.
  const TensorRef grad_expert_input =
      moe_switches_.grouped_gemm ? grouped_experts_backward(grad_expert_output, weights, saved)
                                 : sequential_experts_backward(grad_expert_output, weights, saved);
  // The probabilities' gradients (the weighted activation's backward, one per expert row)
  // follow the rows' back: the sort's backward, over TP and EP, the permute's backward.
  TensorRef grad_shared_input;
  const Permuted grad_routing =
      moe_switches_.flex ? flex_dispatch_backward(grad_expert_input, tokens)
                         : alltoall_dispatch_backward(grad_expert_input, routing_map, tokens, [&] {
                             if (shared_overlap)
                               grad_shared_input = shared_expert_fc1_backward_beside(
                                   grad_shared_fc1_beside, weights, layer);
                           });
  const TensorRef grad_routed = RankTraceBuilder::view(grad_routing.rows, local_shape);
  // Router backward: through top-k, the score function and the aux loss to the logits, then
  // the router's GEMMs.
  const TensorRef grad_logits = router_backward(grad_routing.probabilities, saved, tokens);
  const TensorRef grad_router_input = router_gemm_backward(grad_logits, weights, layer.ln2, tokens);
  TensorRef grad_normed =
      elementwise("aten::add", {grad_routed, grad_router_input}, local_shape, 1);
  const std::vector<std::int64_t> norm_shape = local_shape;
  if (shapes_.shared_ffn_local == 0)
    return elementwise(
        "aten::native_layer_norm_backward",
        {RankTraceBuilder::view(grad_normed, norm_shape), saved_operand(layer.x1, norm_shape)},
        norm_shape, 12);
  if (shared_overlap)
    return elementwise("aten::add", {grad_shared_input, grad_normed}, local_shape, 1);
  // Shared experts: a dense MLP's backward, whose input gradient (reduced over TP) joins the
  // routed one before the norm's backward.
  MlpSaved shared = saved.shared;
  if (recomputes(&RecomputeModules::shared_experts)) {
    // Their forward was a normal checkpoint on the block's input (kept for the router): it
    // runs again, gather, GEMMs and reduction, as their output's gradient arrives.
    builder_.set_phase("recompute");
    shared = MlpSaved{};
    shared_experts_forward(layer.ln2, weights, shared);
    builder_.set_phase("backward");
  }
  const TensorRef grad_shared = backward_operand(tp_gather(grad_output), shapes_.tokens(), h, true);
  const TensorRef grad_shared_fc1 =
      mlp_backward(grad_shared, weights, shared, shapes_.shared_ffn_local);
  const TensorRef grad_norm_input =
      norm_input_backward(grad_shared_fc1, weights.fc1, weights.fc1_fp8, shapes_.shared_fc1_width,
                          layer.x1, layer.ln2, shared.fc1_input_fp8);
  return elementwise("aten::add", {grad_norm_input, grad_normed}, local_shape, 1);
}

LayerEmitter::Permuted LayerEmitter::alltoall_dispatch_backward(
    const TensorRef& grad_expert_input, const TensorRef& routing_map, std::int64_t tokens,
    const std::function<void()>& beside_all_to_alls) {
  const std::int64_t h = shapes_.hidden;
  const std::int64_t dispatched = shapes_.dispatched_tokens, received = shapes_.received_tokens;
  const Permuted grad_sorted =
      sort_chunks(grad_expert_input, builder_.tensor({shapes_.expert_tokens()}, DType::kFloat32),
                  shapes_.expert_tokens(), h, true);
  // Both reduce-scattered over ETP, then both all-to-alls back (posted together).
  const TensorRef grad_arrived_input = tp_reduce_scatter_rows(grad_sorted.rows, received, h);
  const TensorRef grad_arrived_probabilities =
      tp_reduce_scatter_rows(grad_sorted.probabilities, received, 1);
  const TensorRef grad_permuted = expert_all_to_all(grad_arrived_input, dispatched);
  const TensorRef grad_permuted_probabilities =
      probabilities_all_to_all(grad_arrived_probabilities, dispatched);
  beside_all_to_alls();
  // Permute backward: each token's k row gradients summed, the probabilities' gradients back to
  // [tokens, experts].
  return permute_backward(grad_permuted, grad_permuted_probabilities, routing_map, tokens);
}

}  // namespace perfsim::generators::llm

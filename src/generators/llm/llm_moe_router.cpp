// The MoE router after its GEMM, as Megatron-Core 0.14-0.16 runs it (megatron/core/transformer/
// moe/router.py TopKRouter.forward / routing / _apply_aux_loss / _apply_seq_aux_loss /
// _apply_expert_bias, moe_utils.py RandomSTE, topk_routing_with_score_function,
// group_limited_topk, compute_routing_scores_for_aux_loss, switch_load_balancing_loss_func,
// save_to_aux_losses_tracker, MoEAuxLossAutoScaler, RouterGatingLinearFunction) and, with
// moe_router_fusion, Transformer Engine's fused router (transformer_engine/pytorch/router.py,
// whose kernels take the score function, the groups, the expert bias and the scaling factor).
// One op per Python-level call that launches a kernel (README "The MoE layer's op inventory";
// DeepSeek-V3's switches: README "DeepSeek-V3's router as Megatron-Core runs it"). Scores after
// top-k for softmax (moe_router_pre_softmax False, the default).
#include "generators/llm/llm_layer_emitter.hpp"

namespace perfsim::generators::llm {
namespace {

// Informational flops per element (the kernel models price these kernels by their bytes).
constexpr double kSoftmaxFlops = 5;
constexpr double kSigmoidFlops = 4;
constexpr double kTopKFlops = 2;  // a compare and a select per candidate

}  // namespace

DType LayerEmitter::router_logits_dtype() const {
  return moe_switches_.router_fp32 ? DType::kFloat32 : shapes_.dtype;
}

// compute_topk: torch.topk, or with moe_router_group_topk group_limited_topk: each group of
// experts scored by the sum of its top (top_k / group_topk) scores, the best group_topk groups
// kept (a scattered mask, expanded to the experts and reshaped: a copy), the other experts'
// scores filled with -inf, then the top-k of those.
std::pair<TensorRef, TensorRef> LayerEmitter::router_topk(const TensorRef& scores,
                                                          std::int64_t tokens) {
  const std::int64_t experts = shapes_.experts, k = shapes_.top_k;
  const std::int64_t groups = model_.moe.router_num_groups;
  const std::int64_t group_topk = model_.moe.router_group_topk;
  const double candidates = static_cast<double>(tokens * experts);
  TensorRef candidate_scores = scores;
  if (group_topk > 0) {
    const std::int64_t per_group = experts / groups, per_group_k = k / group_topk;
    const TensorRef best_in_group = builder_.tensor({tokens, groups, per_group_k}, scores.dtype);
    builder_.compute("aten::topk", {RankTraceBuilder::view(scores, {tokens, groups, per_group})},
                     {best_in_group, builder_.tensor({tokens, groups, per_group_k}, DType::kInt64)},
                     KernelCategory::kOther, kTopKFlops * candidates);
    const TensorRef group_scores = builder_.tensor({tokens, groups}, scores.dtype);
    builder_.compute("aten::sum", {best_in_group}, {group_scores}, KernelCategory::kOther,
                     static_cast<double>(best_in_group.numel));
    const TensorRef group_index = builder_.tensor({tokens, group_topk}, DType::kInt64);
    builder_.compute("aten::topk", {group_scores},
                     {builder_.tensor({tokens, group_topk}, scores.dtype), group_index},
                     KernelCategory::kOther, kTopKFlops * static_cast<double>(tokens * groups));
    const TensorRef group_mask = builder_.tensor({tokens, groups}, scores.dtype);
    builder_.compute("aten::zeros_like", {}, {group_mask}, KernelCategory::kMemory, 0);
    builder_.compute("aten::scatter_", {group_mask, group_index}, {group_mask},
                     KernelCategory::kOther, 0);
    // unsqueeze and expand are views; reshape of the expanded mask copies it.
    const TensorRef score_mask = builder_.tensor({tokens, experts}, scores.dtype);
    builder_.compute("aten::reshape", {RankTraceBuilder::view(group_mask, {tokens, groups, 1})},
                     {score_mask}, KernelCategory::kMemory, 0);
    const TensorRef mask =
        elementwise("aten::_to_copy", {score_mask}, {tokens, experts}, 0, DType::kBool);
    const TensorRef excluded =
        elementwise("aten::bitwise_not", {mask}, {tokens, experts}, 1, DType::kBool);
    candidate_scores =
        elementwise("aten::masked_fill", {scores, excluded}, {tokens, experts}, 1, scores.dtype);
  }
  const TensorRef values = builder_.tensor({tokens, k}, scores.dtype);
  const TensorRef indices = builder_.tensor({tokens, k}, DType::kInt64);
  builder_.compute("aten::topk", {candidate_scores}, {values, indices}, KernelCategory::kOther,
                   kTopKFlops * candidates);
  return {values, indices};
}

// softmax (scores after top-k): top-k of the logits, softmax of the k in fp32, cast back to
// the logits' dtype (type_as: no kernel when the logits are fp32).
TensorRef LayerEmitter::softmax_topk(const TensorRef& logits, std::int64_t tokens,
                                     TensorRef& top_indices, MoeSaved& saved) {
  const std::int64_t k = shapes_.top_k;
  const auto [top_logits, indices] = router_topk(logits, tokens);
  top_indices = indices;
  const TensorRef top_fp32 =
      elementwise("aten::softmax", {top_logits}, {tokens, k}, kSoftmaxFlops, DType::kFloat32);
  saved.top_probabilities = logits.dtype == DType::kFloat32
                                ? top_fp32
                                : elementwise("aten::_to_copy", {top_fp32}, {tokens, k}, 0);
  return normalize_and_scale_topk(saved.top_probabilities, tokens);
}

// sigmoid: torch.sigmoid(logits.float()).type_as(logits) (the casts only for non-fp32
// logits); with the expert bias the choice is made on scores + expert_bias (an fp32 [experts]
// buffer) and the chosen scores gathered from the unbiased ones; the k scores normalized to
// sum to one (top_k > 1) and scaled.
TensorRef LayerEmitter::sigmoid_topk(const TensorRef& logits, std::int64_t tokens,
                                     TensorRef& top_indices, MoeSaved& saved) {
  const std::int64_t experts = shapes_.experts, k = shapes_.top_k;
  const std::vector<std::int64_t> dense{tokens, experts};
  const bool fp32 = logits.dtype == DType::kFloat32;
  const TensorRef logits_fp32 =
      fp32 ? logits : elementwise("aten::_to_copy", {logits}, dense, 0, DType::kFloat32);
  TensorRef scores =
      elementwise("aten::sigmoid", {logits_fp32}, dense, kSigmoidFlops, DType::kFloat32);
  if (!fp32)
    scores = elementwise("aten::_to_copy", {scores}, dense, 0, logits.dtype);
  TensorRef top_scores;
  if (model_.moe.expert_bias) {
    const TensorRef expert_bias = builder_.tensor({experts}, DType::kFloat32);
    const TensorRef for_routing =
        elementwise("aten::add", {scores, expert_bias}, dense, 1, DType::kFloat32);
    top_indices = router_topk(for_routing, tokens).second;
    top_scores = builder_.tensor({tokens, k}, logits.dtype);
    builder_.compute("aten::gather", {scores, top_indices}, {top_scores}, KernelCategory::kOther,
                     0);
  } else {
    std::tie(top_scores, top_indices) = router_topk(scores, tokens);
  }
  saved.top_probabilities = top_scores;
  return normalize_and_scale_topk(top_scores, tokens);
}

// probs / (probs.sum(-1, keepdim) + 1e-20) for sigmoid scores with top_k > 1, then
// probs * moe_router_topk_scaling_factor when it is set.
TensorRef LayerEmitter::normalize_and_scale_topk(const TensorRef& top_scores, std::int64_t tokens) {
  const std::int64_t k = shapes_.top_k;
  TensorRef probabilities = top_scores;
  if (model_.moe.sigmoid_scores && k > 1) {
    const TensorRef sums = builder_.tensor({tokens, 1}, top_scores.dtype);
    builder_.compute("aten::sum", {top_scores}, {sums}, KernelCategory::kOther,
                     static_cast<double>(tokens * k));
    const TensorRef denominators =
        elementwise("aten::add", {sums}, {tokens, 1}, 1, top_scores.dtype);
    probabilities =
        elementwise("aten::div", {top_scores, denominators}, {tokens, k}, 1, top_scores.dtype);
  }
  if (model_.moe.topk_scaling_factor > 0)
    probabilities = elementwise("aten::mul", {probabilities}, {tokens, k}, 1, top_scores.dtype);
  return probabilities;
}

TensorRef LayerEmitter::router_forward(const TensorRef& logits_in, std::int64_t tokens,
                                       MoeSaved& saved) {
  const std::int64_t experts = shapes_.experts, k = shapes_.top_k;
  const double candidates = static_cast<double>(tokens * experts);
  const DType dtype = logits_in.dtype;  // the router GEMM's output: router_logits_dtype()
  const std::vector<std::int64_t> dense{tokens, experts};
  TensorRef logits = logits_in;
  if (moe_switches_.force_load_balancing) {
    // RandomSTE.forward: logits.clone().normal_(generator); its backward passes the gradient
    // through in Python (no kernel, not generated).
    const TensorRef copy = builder_.tensor(dense, dtype);
    builder_.compute("aten::clone", {logits}, {copy}, KernelCategory::kMemory, 0);
    logits = builder_.tensor(dense, dtype);
    builder_.compute("aten::normal_", {copy}, {logits}, KernelCategory::kOther, candidates);
  }
  TensorRef routing_probabilities;
  if (moe_switches_.router_fusion) {
    // TE FusedTopkScoreFunction: one kernel writes the dense probabilities, the routing map and
    // the fp32 scores its backward reads (score function, groups, expert bias and scaling
    // factor are its arguments).
    routing_probabilities = builder_.tensor(dense, dtype);
    saved.routing_map = builder_.tensor(dense, DType::kBool);
    saved.probabilities = builder_.tensor(dense);
    std::vector<TensorRef> inputs{logits};
    if (model_.moe.expert_bias)
      inputs.push_back(builder_.tensor({experts}, DType::kFloat32));
    builder_.compute(
        "te::fused_topk_with_score_function", std::move(inputs),
        {routing_probabilities, saved.routing_map, saved.probabilities}, KernelCategory::kOther,
        ((model_.moe.sigmoid_scores ? kSigmoidFlops : kSoftmaxFlops) + kTopKFlops) * candidates);
    saved.top_probabilities = builder_.tensor({tokens, k});
  } else {
    // topk_routing_with_score_function, then the dense probabilities and the map scattered
    // from the indices.
    TensorRef top_indices;
    const TensorRef top_probabilities = model_.moe.sigmoid_scores
                                            ? sigmoid_topk(logits, tokens, top_indices, saved)
                                            : softmax_topk(logits, tokens, top_indices, saved);
    const TensorRef zeros = builder_.tensor(dense, dtype);
    builder_.compute("aten::zeros_like", {}, {zeros}, KernelCategory::kMemory, 0);
    routing_probabilities =
        elementwise("aten::scatter", {zeros, top_indices, top_probabilities}, dense, 0, dtype);
    const TensorRef map_zeros = builder_.tensor(dense, dtype);
    builder_.compute("aten::zeros_like", {}, {map_zeros}, KernelCategory::kMemory, 0);
    const TensorRef map_int = elementwise("aten::_to_copy", {map_zeros}, dense, 0, DType::kInt32);
    const TensorRef map_scattered =
        elementwise("aten::scatter", {map_int, top_indices}, dense, 0, DType::kInt32);
    saved.routing_map = elementwise("aten::_to_copy", {map_scattered}, dense, 0, DType::kBool);
  }
  if (drops_tokens())
    routing_probabilities = router_token_dropping(routing_probabilities, tokens, saved);
  // What backward reads on [tokens, experts]: the fused router's scores, or (unfused) the aux
  // loss's scores of every logit; without the loss, the dense probabilities.
  if (shapes_.moe_aux_loss) {
    const TensorRef scores = load_balancing_loss_forward(logits, tokens);
    if (!moe_switches_.router_fusion)
      saved.probabilities = scores;
  } else if (!moe_switches_.router_fusion) {
    saved.probabilities = routing_probabilities;
  }
  // _apply_expert_bias (a jit_fuser, torch.compile'd, function): the routing map's column sums
  // added into the fp32 local_tokens_per_expert buffer, one compiled kernel.
  if (model_.moe.expert_bias) {
    const TensorRef local_tokens_per_expert = builder_.tensor({experts}, DType::kFloat32);
    builder_.compute("megatron::apply_expert_bias", {saved.routing_map, local_tokens_per_expert},
                     {local_tokens_per_expert}, KernelCategory::kOther, candidates);
  }
  return routing_probabilities;
}

TensorRef LayerEmitter::load_balancing_loss_forward(const TensorRef& logits, std::int64_t tokens) {
  const std::int64_t experts = shapes_.experts, k = shapes_.top_k;
  const std::vector<std::int64_t> dense{tokens, experts};
  const double elements = static_cast<double>(tokens * experts);
  // compute_routing_scores_for_aux_loss: the score function on every logit (fp32) and its
  // top-k map.
  TensorRef scores, loss_map;
  if (moe_switches_.router_fusion) {
    scores = builder_.tensor(dense, DType::kFloat32);
    loss_map = builder_.tensor(dense, DType::kBool);
    builder_.compute(
        "te::fused_compute_score_for_moe_aux_loss", {logits}, {scores, loss_map},
        KernelCategory::kOther,
        ((model_.moe.sigmoid_scores ? kSigmoidFlops : kSoftmaxFlops) + kTopKFlops) * elements);
  } else {
    // fp32 in Megatron-Core (softmax(..., dtype=float32); sigmoid(logits.float()) normalized
    // per token); the final scores kept in the activation dtype here so the saved scores are
    // the bytes the memory closed form counts (llm_memory.cpp).
    if (model_.moe.sigmoid_scores) {
      const TensorRef logits_fp32 =
          logits.dtype == DType::kFloat32
              ? logits
              : elementwise("aten::_to_copy", {logits}, dense, 0, DType::kFloat32);
      const TensorRef sigmoid =
          elementwise("aten::sigmoid", {logits_fp32}, dense, kSigmoidFlops, DType::kFloat32);
      const TensorRef sums = builder_.tensor({tokens, 1}, DType::kFloat32);
      builder_.compute("aten::sum", {sigmoid}, {sums}, KernelCategory::kOther, elements);
      const TensorRef denominators =
          elementwise("aten::add", {sums}, {tokens, 1}, 1, DType::kFloat32);
      scores = elementwise("aten::div", {sigmoid, denominators}, dense, 1);
    } else {
      scores = elementwise("aten::softmax", {logits}, dense, kSoftmaxFlops);
    }
    const TensorRef top_scores = builder_.tensor({tokens, k}, DType::kFloat32);
    const TensorRef top_indices = builder_.tensor({tokens, k}, DType::kInt64);
    builder_.compute("aten::topk", {scores}, {top_scores, top_indices}, KernelCategory::kOther,
                     kTopKFlops * elements);
    const TensorRef zeros = builder_.tensor(dense);
    builder_.compute("aten::zeros_like", {}, {zeros}, KernelCategory::kMemory, 0);
    const TensorRef map_int = elementwise("aten::_to_copy", {zeros}, dense, 0, DType::kInt32);
    const TensorRef scattered =
        elementwise("aten::scatter", {map_int, top_indices}, dense, 0, DType::kInt32);
    loss_map = elementwise("aten::_to_copy", {scattered}, dense, 0, DType::kBool);
  }
  // Tokens per expert: a sum over the loss's routing map, then over the TP x CP group, whose
  // ranks route the other parts of the sequences (_apply_aux_loss:
  // reduce_from_tensor_model_parallel_region on tp_cp_group). seq_aux_loss: the map viewed
  // [seq, batch x experts], so one count per sequence and expert, int64 as bool.sum gives them
  // (aux_loss's counts are kept fp32 [experts], as the inventory first wrote them).
  const bool per_sequence = model_.moe.sequence_aux_loss;
  const std::int64_t counts = per_sequence ? shapes_.batch * experts : experts;
  const DType count_dtype = per_sequence ? DType::kInt64 : DType::kFloat32;
  TensorRef tokens_per_expert = builder_.tensor({counts}, count_dtype);
  builder_.compute("aten::sum", {loss_map}, {tokens_per_expert}, KernelCategory::kOther, elements);
  if (ep_.router_size > 1) {
    const TensorRef summed = builder_.tensor({counts}, count_dtype);
    builder_.communicate(
        {CollectiveKind::kAllReduce, ep_.router_name, ep_.router_size, -1, kTensorParallelStream},
        tokens_per_expert, summed);
    tokens_per_expert = summed;
  }
  TensorRef loss = builder_.tensor({1}, DType::kFloat32);
  if (moe_switches_.router_fusion) {
    builder_.compute("te::fused_moe_aux_loss", {scores, tokens_per_expert}, {loss},
                     KernelCategory::kOther, 2 * elements);
  } else {
    // switch_load_balancing_loss_func: the scores summed per expert (per sequence and expert),
    // their dot product with the counts, scaled.
    const TensorRef probability_sums = builder_.tensor({counts}, DType::kFloat32);
    builder_.compute("aten::sum", {scores}, {probability_sums}, KernelCategory::kOther, elements);
    const TensorRef products = elementwise("aten::mul", {probability_sums, tokens_per_expert},
                                           {counts}, 1, DType::kFloat32);
    builder_.compute("aten::sum", {products}, {loss}, KernelCategory::kOther,
                     static_cast<double>(counts));
    loss = elementwise("aten::mul", {loss}, {1}, 1, DType::kFloat32);  // the coefficient
  }
  if (per_sequence)  // _apply_seq_aux_loss: the sum over the sequences divided by the batch
    loss = elementwise("aten::div", {loss}, {1}, 1, DType::kFloat32);
  // save_to_aux_losses_tracker: the loss over its coefficient added into the layer's slot of
  // the tracker; MoEAuxLossAutoScaler.apply attaches it to the probabilities (no kernel).
  const TensorRef logged = elementwise("aten::div", {loss}, {1}, 1, DType::kFloat32);
  elementwise("aten::add_", {logged}, {1}, 1, DType::kFloat32);
  return scores;
}

// Autograd through x / (x.sum(-1, keepdim) + eps) (DivBackward0: grad / other for x; for the
// denominator -grad * ((x / other) / other): div, div, neg, mul, then summed back to [rows, 1];
// the sum's backward an expand), and the two gradients of x added.
TensorRef LayerEmitter::sum_normalized_backward(const TensorRef& grad,
                                                std::vector<std::int64_t> shape, DType dtype) {
  const std::vector<std::int64_t> column{shape.front(), 1};
  const TensorRef grad_direct = elementwise("aten::div", {grad}, shape, 1, dtype);
  const TensorRef ratio = elementwise("aten::div", {grad}, shape, 1, dtype);
  const TensorRef ratio_squared = elementwise("aten::div", {ratio}, shape, 1, dtype);
  const TensorRef negated = elementwise("aten::neg", {grad}, shape, 1, dtype);
  const TensorRef grad_other = elementwise("aten::mul", {negated, ratio_squared}, shape, 1, dtype);
  const TensorRef grad_denominator = builder_.tensor(column, dtype);
  builder_.compute("aten::sum", {grad_other}, {grad_denominator}, KernelCategory::kOther,
                   static_cast<double>(grad_other.numel));
  return elementwise("aten::add", {grad_direct, grad_denominator}, shape, 1, dtype);
}

TensorRef LayerEmitter::load_balancing_loss_backward(const TensorRef& saved_scores,
                                                     std::int64_t tokens) {
  const std::int64_t experts = shapes_.experts;
  const std::vector<std::int64_t> dense{tokens, experts};
  const bool per_sequence = model_.moe.sequence_aux_loss;
  const std::int64_t counts = per_sequence ? shapes_.batch * experts : experts;
  // MoEAuxLossAutoScaler.backward: ones_like(aux_loss) * main_loss_backward_scale.
  const TensorRef ones = builder_.tensor({1}, DType::kFloat32);
  builder_.compute("aten::ones_like", {}, {ones}, KernelCategory::kMemory, 0);
  TensorRef grad_loss = elementwise("aten::mul", {ones}, {1}, 1, DType::kFloat32);
  if (moe_switches_.router_fusion) {
    if (per_sequence)  // the division by the batch, outside TE's loss
      grad_loss = elementwise("aten::div", {grad_loss}, {1}, 1, DType::kFloat32);
    const TensorRef grad_scores = builder_.tensor(dense, DType::kFloat32);
    builder_.compute("te::fused_moe_aux_loss_backward", {grad_loss}, {grad_scores},
                     KernelCategory::kOther, static_cast<double>(tokens * experts));
    const TensorRef grad_logits = builder_.tensor(dense, router_logits_dtype());
    builder_.compute("te::fused_compute_score_for_moe_aux_loss_backward",
                     {grad_scores, saved_scores}, {grad_logits}, KernelCategory::kOther,
                     3 * static_cast<double>(tokens * experts));
    return grad_logits;
  }
  // Autograd through the unfused loss: seq_aux_loss's division, the coefficient's and the
  // counts' products (the sums' backwards are expands, no kernel), then the score function's
  // backward on [tokens, experts].
  if (per_sequence)
    grad_loss = elementwise("aten::div", {grad_loss}, {1}, 1, DType::kFloat32);
  const TensorRef grad_scaled = elementwise("aten::mul", {grad_loss}, {1}, 1, DType::kFloat32);
  const TensorRef grad_sums =
      elementwise("aten::mul", {grad_scaled, builder_.tensor({counts}, DType::kFloat32)}, {counts},
                  1, DType::kFloat32);
  if (!model_.moe.sigmoid_scores)
    return elementwise("aten::_softmax_backward_data", {grad_sums, saved_scores}, dense, 3);
  // sigmoid: the normalization's backward, the sigmoid's (on its fp32 output), and the
  // .float()'s for non-fp32 logits.
  const TensorRef grad_sigmoid =
      sum_normalized_backward(RankTraceBuilder::view(grad_sums, {counts}), dense, DType::kFloat32);
  const TensorRef grad_logits_fp32 = elementwise(
      "aten::sigmoid_backward", {grad_sigmoid, saved_scores}, dense, 3, DType::kFloat32);
  if (router_logits_dtype() == DType::kFloat32)
    return grad_logits_fp32;
  return elementwise("aten::_to_copy", {grad_logits_fp32}, dense, 0, router_logits_dtype());
}

// The k probabilities' backward for sigmoid scores: the scaling's product, the normalization's
// division, then the gather's (with the expert bias: zeros and scatter_add_) or top-k's
// (zeros and scatter) back to [tokens, experts], the masked_fill's with groups and no bias,
// type_as's cast for non-fp32 logits, the sigmoid's and .float()'s.
TensorRef LayerEmitter::normalize_and_scale_topk_backward(const TensorRef& grad,
                                                          std::int64_t tokens) {
  const std::int64_t k = shapes_.top_k;
  TensorRef result = grad;
  if (model_.moe.topk_scaling_factor > 0)
    result = elementwise("aten::mul", {result}, {tokens, k}, 1, grad.dtype);
  if (model_.moe.sigmoid_scores && k > 1)
    result = sum_normalized_backward(result, {tokens, k}, grad.dtype);
  return result;
}

TensorRef LayerEmitter::sigmoid_topk_backward(const TensorRef& grad_top, std::int64_t tokens) {
  const std::int64_t experts = shapes_.experts;
  const std::vector<std::int64_t> dense{tokens, experts};
  const DType dtype = router_logits_dtype();
  const TensorRef zeros = builder_.tensor(dense, dtype);
  builder_.compute("aten::zeros", {}, {zeros}, KernelCategory::kMemory, 0);
  TensorRef grad_scores;
  if (model_.moe.expert_bias) {
    grad_scores = elementwise("aten::scatter_add_", {zeros, grad_top}, dense, 1, dtype);
  } else {
    grad_scores = elementwise("aten::scatter", {zeros, grad_top}, dense, 0, dtype);
    if (model_.moe.router_group_topk > 0)
      grad_scores = elementwise("aten::masked_fill", {grad_scores}, dense, 1, dtype);
  }
  if (dtype != DType::kFloat32)
    grad_scores = elementwise("aten::_to_copy", {grad_scores}, dense, 0, DType::kFloat32);
  const TensorRef grad_fp32 =
      elementwise("aten::sigmoid_backward", {grad_scores, builder_.tensor(dense, DType::kFloat32)},
                  dense, 3, DType::kFloat32);
  if (dtype == DType::kFloat32)
    return grad_fp32;
  return elementwise("aten::_to_copy", {grad_fp32}, dense, 0, dtype);
}

TensorRef LayerEmitter::router_backward(const TensorRef& grad_kept, const MoeSaved& saved,
                                        std::int64_t tokens) {
  const TensorRef grad_probabilities =
      drops_tokens() ? router_token_dropping_backward(grad_kept, tokens) : grad_kept;
  const std::int64_t experts = shapes_.experts, k = shapes_.top_k;
  const DType dtype = router_logits_dtype();
  const std::vector<std::int64_t> dense{tokens, experts};
  const TensorRef scores = saved_operand(saved.probabilities, dense);
  // The routing map as the fused backward reads it (TE keeps it in its context; not counted by
  // the memory closed form, so not a saved tensor here).
  const TensorRef routing_map = builder_.tensor(dense, DType::kBool);
  TensorRef grad_logits;
  if (moe_switches_.router_fusion) {
    grad_logits = builder_.tensor(dense, dtype);
    builder_.compute("te::fused_topk_with_score_function_backward",
                     {grad_probabilities, routing_map, scores}, {grad_logits},
                     KernelCategory::kOther, 3 * static_cast<double>(tokens * experts));
  } else {
    // scatter's backward (gather of the k chosen), then the score function's.
    const TensorRef grad_top = builder_.tensor({tokens, k}, dtype);
    builder_.compute("aten::gather", {grad_probabilities}, {grad_top}, KernelCategory::kOther, 0);
    const TensorRef grad_k = normalize_and_scale_topk_backward(grad_top, tokens);
    if (model_.moe.sigmoid_scores) {
      grad_logits = sigmoid_topk_backward(grad_k, tokens);
    } else {
      // type_as's (non-fp32 logits), the softmax's on [tokens, k], topk's (zeros, then the k
      // values scattered back), the masked_fill's with groups.
      const TensorRef top_probabilities = saved_operand(saved.top_probabilities, {tokens, k});
      const TensorRef grad_top_fp32 =
          dtype == DType::kFloat32
              ? grad_k
              : elementwise("aten::_to_copy", {grad_k}, {tokens, k}, 0, DType::kFloat32);
      const TensorRef grad_top_logits =
          elementwise("aten::_softmax_backward_data", {grad_top_fp32, top_probabilities},
                      {tokens, k}, 3, dtype);
      const TensorRef zeros = builder_.tensor(dense, dtype);
      builder_.compute("aten::zeros", {}, {zeros}, KernelCategory::kMemory, 0);
      grad_logits = elementwise("aten::scatter", {zeros, grad_top_logits}, dense, 0, dtype);
      if (model_.moe.router_group_topk > 0)
        grad_logits = elementwise("aten::masked_fill", {grad_logits}, dense, 1, dtype);
    }
  }
  if (!shapes_.moe_aux_loss)
    return grad_logits;
  // The aux loss's share of the logits' gradient, summed into the routing one by autograd.
  return elementwise("aten::add", {grad_logits, load_balancing_loss_backward(scores, tokens)},
                     dense, 1, dtype);
}

// RouterGatingLinearFunction.backward: with the input's dtype, the two GEMMs in it. With
// moe_router_dtype fp32 (Transformer Engine present): weight.to(fp32), the data-gradient GEMM
// on the fp32 logits' gradient, input.to(fp32), the weight-gradient GEMM (TE's general_gemm
// runs fp32 operands as TF32: CUBLAS_COMPUTE_32F_FAST_TF32), then both gradients cast back to
// the input's and the weight's dtype.
TensorRef LayerEmitter::router_gemm_backward(const TensorRef& grad_logits,
                                             const LayerWeights& weights,
                                             const TensorRef& router_input, std::int64_t tokens) {
  const std::int64_t h = shapes_.hidden, experts = shapes_.experts;
  if (!moe_switches_.router_fp32) {
    const TensorRef grad_input =
        mm(grad_logits, RankTraceBuilder::view(weights.router, {experts, h}), tokens, experts, h);
    mm(saved_operand(router_input, {h, tokens}), grad_logits, h, tokens,
       experts);  // grad of the router weight
    return grad_input;
  }
  const auto cast = [this](const TensorRef& x, std::vector<std::int64_t> shape, DType dtype) {
    const TensorRef out = builder_.tensor(shape, dtype);
    builder_.compute("aten::copy_", {out, RankTraceBuilder::view(x, std::move(shape))}, {out},
                     KernelCategory::kMemory, 0);
    return out;
  };
  const TensorRef grad_tf32 = builder_.alias(grad_logits, {tokens, experts}, DType::kTFloat32);
  const TensorRef weight_tf32 = cast(weights.router, {experts, h}, DType::kTFloat32);
  const TensorRef grad_input_fp32 = builder_.tensor({tokens, h}, DType::kFloat32);
  builder_.compute("aten::mm", {grad_tf32, weight_tf32}, {grad_input_fp32}, KernelCategory::kGemm,
                   2.0 * tokens * experts * h);
  const TensorRef input_tf32 =
      cast(saved_operand(router_input, {h, tokens}), {h, tokens}, DType::kTFloat32);
  const TensorRef grad_weight_fp32 = builder_.tensor({h, experts}, DType::kFloat32);
  builder_.compute("aten::mm", {input_tf32, grad_tf32}, {grad_weight_fp32}, KernelCategory::kGemm,
                   2.0 * tokens * experts * h);
  const TensorRef grad_input = cast(grad_input_fp32, {tokens, h}, shapes_.dtype);
  cast(grad_weight_fp32, {h, experts}, shapes_.dtype);
  return grad_input;
}

}  // namespace perfsim::generators::llm

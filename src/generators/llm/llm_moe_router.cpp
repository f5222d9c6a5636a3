// The MoE router after its GEMM, as Megatron-Core 0.14-0.16 runs it (megatron/core/transformer/
// moe/router.py TopKRouter.forward / routing / _apply_aux_loss, moe_utils.py RandomSTE,
// topk_routing_with_score_function, compute_routing_scores_for_aux_loss,
// switch_load_balancing_loss_func, save_to_aux_losses_tracker, MoEAuxLossAutoScaler) and, with
// moe_router_fusion, Transformer Engine's fused router (transformer_engine/pytorch/router.py).
// One op per Python-level call that launches a kernel (README "The MoE layer's op inventory");
// the softmax score function, scores after top-k (moe_router_pre_softmax False, the default).
#include "generators/llm/llm_layer_emitter.hpp"

namespace perfsim::generators::llm {
namespace {

// Informational flops per element (the kernel models price these kernels by their bytes).
constexpr double kSoftmaxFlops = 5;
constexpr double kTopKFlops = 2;  // a compare and a select per candidate

}  // namespace

TensorRef LayerEmitter::router_forward(const TensorRef& logits_in, std::int64_t tokens,
                                       MoeSaved& saved) {
  const std::int64_t experts = shapes_.experts, k = shapes_.top_k;
  const double candidates = static_cast<double>(tokens * experts);
  TensorRef logits = logits_in;
  if (moe_switches_.force_load_balancing) {
    // RandomSTE.forward: logits.clone().normal_(generator); its backward passes the gradient
    // through in Python (no kernel, not generated).
    const TensorRef copy = builder_.tensor({tokens, experts});
    builder_.compute("aten::clone", {logits}, {copy}, KernelCategory::kMemory, 0);
    logits = builder_.tensor({tokens, experts});
    builder_.compute("aten::normal_", {copy}, {logits}, KernelCategory::kOther, candidates);
  }
  TensorRef routing_probabilities;
  if (moe_switches_.router_fusion) {
    // TE FusedTopkScoreFunction: one kernel writes the dense probabilities, the routing map and
    // the fp32 scores its backward reads.
    routing_probabilities = builder_.tensor({tokens, experts});
    saved.routing_map = builder_.tensor({tokens, experts}, DType::kBool);
    saved.probabilities = builder_.tensor({tokens, experts});
    builder_.compute("te::fused_topk_with_score_function", {logits},
                     {routing_probabilities, saved.routing_map, saved.probabilities},
                     KernelCategory::kOther, (kSoftmaxFlops + kTopKFlops) * candidates);
    saved.top_probabilities = builder_.tensor({tokens, k});
  } else {
    // topk_routing_with_score_function: top-k of the logits, softmax of the k (fp32, cast back
    // by type_as), then the dense probabilities and the map scattered from the indices.
    const TensorRef top_logits = builder_.tensor({tokens, k});
    const TensorRef top_indices = builder_.tensor({tokens, k}, DType::kInt64);
    builder_.compute("aten::topk", {logits}, {top_logits, top_indices}, KernelCategory::kOther,
                     kTopKFlops * candidates);
    const TensorRef top_fp32 =
        elementwise("aten::softmax", {top_logits}, {tokens, k}, kSoftmaxFlops, DType::kFloat32);
    saved.top_probabilities = elementwise("aten::_to_copy", {top_fp32}, {tokens, k}, 0);
    const TensorRef zeros = builder_.tensor({tokens, experts});
    builder_.compute("aten::zeros_like", {}, {zeros}, KernelCategory::kMemory, 0);
    routing_probabilities = elementwise(
        "aten::scatter", {zeros, top_indices, saved.top_probabilities}, {tokens, experts}, 0);
    const TensorRef map_zeros = builder_.tensor({tokens, experts});
    builder_.compute("aten::zeros_like", {}, {map_zeros}, KernelCategory::kMemory, 0);
    const TensorRef map_int =
        elementwise("aten::_to_copy", {map_zeros}, {tokens, experts}, 0, DType::kInt32);
    const TensorRef map_scattered =
        elementwise("aten::scatter", {map_int, top_indices}, {tokens, experts}, 0, DType::kInt32);
    saved.routing_map =
        elementwise("aten::_to_copy", {map_scattered}, {tokens, experts}, 0, DType::kBool);
  }
  // What backward reads on [tokens, experts]: the fused router's scores, or (unfused) the aux
  // loss's softmax of every logit; without the loss, the dense probabilities.
  if (shapes_.moe_aux_loss) {
    const TensorRef scores = load_balancing_loss_forward(logits, tokens);
    if (!moe_switches_.router_fusion)
      saved.probabilities = scores;
  } else if (!moe_switches_.router_fusion) {
    saved.probabilities = routing_probabilities;
  }
  return routing_probabilities;
}

TensorRef LayerEmitter::load_balancing_loss_forward(const TensorRef& logits, std::int64_t tokens) {
  const std::int64_t experts = shapes_.experts, k = shapes_.top_k;
  const double elements = static_cast<double>(tokens * experts);
  // compute_routing_scores_for_aux_loss: the softmax of every logit (fp32) and its top-k map.
  TensorRef scores, loss_map;
  if (moe_switches_.router_fusion) {
    scores = builder_.tensor({tokens, experts}, DType::kFloat32);
    loss_map = builder_.tensor({tokens, experts}, DType::kBool);
    builder_.compute("te::fused_compute_score_for_moe_aux_loss", {logits}, {scores, loss_map},
                     KernelCategory::kOther, (kSoftmaxFlops + kTopKFlops) * elements);
  } else {
    // fp32 in Megatron-Core (softmax(..., dtype=float32)); kept in the activation dtype here so
    // the saved scores are the bytes the memory closed form counts (llm_memory.cpp).
    scores = elementwise("aten::softmax", {logits}, {tokens, experts}, kSoftmaxFlops);
    const TensorRef top_scores = builder_.tensor({tokens, k}, DType::kFloat32);
    const TensorRef top_indices = builder_.tensor({tokens, k}, DType::kInt64);
    builder_.compute("aten::topk", {scores}, {top_scores, top_indices}, KernelCategory::kOther,
                     kTopKFlops * elements);
    const TensorRef zeros = builder_.tensor({tokens, experts});
    builder_.compute("aten::zeros_like", {}, {zeros}, KernelCategory::kMemory, 0);
    const TensorRef map_int =
        elementwise("aten::_to_copy", {zeros}, {tokens, experts}, 0, DType::kInt32);
    const TensorRef scattered =
        elementwise("aten::scatter", {map_int, top_indices}, {tokens, experts}, 0, DType::kInt32);
    loss_map = elementwise("aten::_to_copy", {scattered}, {tokens, experts}, 0, DType::kBool);
  }
  // Tokens per expert: a sum over the loss's routing map, then over the TP x CP group, whose
  // ranks route the other parts of the sequences (_apply_aux_loss:
  // reduce_from_tensor_model_parallel_region on tp_cp_group).
  TensorRef tokens_per_expert = builder_.tensor({experts}, DType::kFloat32);
  builder_.compute("aten::sum", {loss_map}, {tokens_per_expert}, KernelCategory::kOther, elements);
  if (ep_.router_size > 1) {
    const TensorRef summed = builder_.tensor({experts}, DType::kFloat32);
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
    // switch_load_balancing_loss_func: the scores summed per expert, their dot product with the
    // counts, scaled.
    const TensorRef probability_sums = builder_.tensor({experts}, DType::kFloat32);
    builder_.compute("aten::sum", {scores}, {probability_sums}, KernelCategory::kOther, elements);
    const TensorRef products = elementwise("aten::mul", {probability_sums, tokens_per_expert},
                                           {experts}, 1, DType::kFloat32);
    builder_.compute("aten::sum", {products}, {loss}, KernelCategory::kOther,
                     static_cast<double>(experts));
    loss = elementwise("aten::mul", {loss}, {1}, 1, DType::kFloat32);  // the coefficient
  }
  // save_to_aux_losses_tracker: the loss over its coefficient added into the layer's slot of
  // the tracker; MoEAuxLossAutoScaler.apply attaches it to the probabilities (no kernel).
  const TensorRef logged = elementwise("aten::div", {loss}, {1}, 1, DType::kFloat32);
  elementwise("aten::add_", {logged}, {1}, 1, DType::kFloat32);
  return scores;
}

TensorRef LayerEmitter::load_balancing_loss_backward(const TensorRef& saved_scores,
                                                     std::int64_t tokens) {
  const std::int64_t experts = shapes_.experts;
  // MoEAuxLossAutoScaler.backward: ones_like(aux_loss) * main_loss_backward_scale.
  const TensorRef ones = builder_.tensor({1}, DType::kFloat32);
  builder_.compute("aten::ones_like", {}, {ones}, KernelCategory::kMemory, 0);
  const TensorRef grad_loss = elementwise("aten::mul", {ones}, {1}, 1, DType::kFloat32);
  if (moe_switches_.router_fusion) {
    const TensorRef grad_scores = builder_.tensor({tokens, experts}, DType::kFloat32);
    builder_.compute("te::fused_moe_aux_loss_backward", {grad_loss}, {grad_scores},
                     KernelCategory::kOther, static_cast<double>(tokens * experts));
    const TensorRef grad_logits = builder_.tensor({tokens, experts});
    builder_.compute("te::fused_compute_score_for_moe_aux_loss_backward",
                     {grad_scores, saved_scores}, {grad_logits}, KernelCategory::kOther,
                     3 * static_cast<double>(tokens * experts));
    return grad_logits;
  }
  // Autograd through the unfused loss: the coefficient's and the counts' products (the sums'
  // backwards are expands, no kernel), then the softmax's backward on [tokens, experts].
  const TensorRef grad_scaled = elementwise("aten::mul", {grad_loss}, {1}, 1, DType::kFloat32);
  const TensorRef grad_sums =
      elementwise("aten::mul", {grad_scaled, builder_.tensor({experts}, DType::kFloat32)},
                  {experts}, 1, DType::kFloat32);
  return elementwise("aten::_softmax_backward_data", {grad_sums, saved_scores}, {tokens, experts},
                     3);
}

TensorRef LayerEmitter::router_backward(const TensorRef& grad_probabilities, const MoeSaved& saved,
                                        std::int64_t tokens) {
  const std::int64_t experts = shapes_.experts, k = shapes_.top_k;
  const TensorRef scores = saved_operand(saved.probabilities, {tokens, experts});
  // The routing map as the fused backward reads it (TE keeps it in its context; not counted by
  // the memory closed form, so not a saved tensor here).
  const TensorRef routing_map = builder_.tensor({tokens, experts}, DType::kBool);
  TensorRef grad_logits;
  if (moe_switches_.router_fusion) {
    grad_logits = builder_.tensor({tokens, experts});
    builder_.compute("te::fused_topk_with_score_function_backward",
                     {grad_probabilities, routing_map, scores}, {grad_logits},
                     KernelCategory::kOther, 3 * static_cast<double>(tokens * experts));
  } else {
    // scatter's backward (gather of the k chosen), type_as's, the softmax's on [tokens, k],
    // topk's (zeros, then the k values scattered back).
    const TensorRef top_probabilities = saved_operand(saved.top_probabilities, {tokens, k});
    const TensorRef grad_top = builder_.tensor({tokens, k});
    builder_.compute("aten::gather", {grad_probabilities}, {grad_top}, KernelCategory::kOther, 0);
    const TensorRef grad_top_fp32 =
        elementwise("aten::_to_copy", {grad_top}, {tokens, k}, 0, DType::kFloat32);
    const TensorRef grad_top_logits = elementwise(
        "aten::_softmax_backward_data", {grad_top_fp32, top_probabilities}, {tokens, k}, 3);
    const TensorRef zeros = builder_.tensor({tokens, experts});
    builder_.compute("aten::zeros", {}, {zeros}, KernelCategory::kMemory, 0);
    grad_logits = elementwise("aten::scatter", {zeros, grad_top_logits}, {tokens, experts}, 0);
  }
  if (!shapes_.moe_aux_loss)
    return grad_logits;
  // The aux loss's share of the logits' gradient, summed into the routing one by autograd.
  return elementwise("aten::add", {grad_logits, load_balancing_loss_backward(scores, tokens)},
                     {tokens, experts}, 1);
}

}  // namespace perfsim::generators::llm

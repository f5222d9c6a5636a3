// Megatron-Core's flex token dispatcher (MoEFlexTokenDispatcher with _DeepepManager or
// _HybridEPManager, megatron/core/transformer/moe/token_dispatcher.py and fused_a2a.py): the
// tokens go to the experts' ranks in one fused dispatch, each token once per distinct
// destination node and GPU with its top-k indices and probabilities (no separate
// probabilities all-to-all), and are permuted into expert order on the receiving side; the
// experts' rows are unpermuted there (a token's rows for one GPU summed) and combined back.
// DeepEP's normal dispatch makes the host wait for the received-token count before it can
// size its outputs (deepseek-ai/DeepEP docs/legacy.md: "implicit CPU wait"); HybridEP has no
// host synchronization (Hybrid-EP_Implementation.md). Dispatch's backward is a combine-shaped
// transfer and combine's a dispatch-shaped one, with the same copies (kHierarchicalAllToAll).
#include "generators/llm/llm_layer_emitter.hpp"

namespace perfsim::generators::llm {

TensorRef LayerEmitter::flex_exchange(const TensorRef& input, const TensorRef& output) {
  builder_.communicate(
      {CollectiveKind::kHierarchicalAllToAll, ep_.name, ep_.size, -1, kExpertParallelStream}, input,
      output);
  // Priced by the copies each level carries (perfsim/comm.hpp), not by the tensors' sizes.
  const Bytes row_bytes = shapes_.hidden * input.element_bytes;
  CommInfo& comm = *builder_.trace().ops.back().comm;
  comm.bytes_in = shapes_.flex_node_copies * row_bytes;
  comm.bytes_out = shapes_.flex_gpu_copies * row_bytes;
  return output;
}

TensorRef LayerEmitter::flex_dispatch(const TensorRef& normed, const TensorRef& routing_map,
                                      std::int64_t tokens) {
  const std::int64_t h = shapes_.hidden, k = shapes_.top_k, local = shapes_.experts_local;
  const std::int64_t arrived_tokens = shapes_.flex_gpu_copies;
  // The layout: which ranks and nodes each token goes to (DeepEP get_dispatch_layout, HybridEP
  // its metadata preprocessing), one kernel over the routing map.
  const TensorRef layout = builder_.tensor({tokens, shapes_.ep}, DType::kBool);
  builder_.compute(
      moe_switches_.hybridep ? "hybrid_ep::metadata_preprocessing" : "deep_ep::get_dispatch_layout",
      {routing_map}, {layout}, KernelCategory::kOther, 0);
  if (!moe_switches_.hybridep)
    dispatcher_wait();  // DeepEP: the host reads the received-token count
  const TensorRef arrived =
      flex_exchange(RankTraceBuilder::view(normed, {tokens, h}), activation({arrived_tokens, h}));
  // The received top-k indices and probabilities to a routing map and dense probabilities of
  // the local experts (Megatron's _indices_to_multihot), then the permute to expert order.
  const TensorRef indices = builder_.tensor({arrived_tokens, k}, DType::kInt64);
  const TensorRef local_map = builder_.tensor({arrived_tokens, local}, DType::kBool);
  const TensorRef local_probabilities = builder_.tensor({arrived_tokens, local}, DType::kFloat32);
  builder_.compute("aten::scatter", {indices}, {local_map, local_probabilities},
                   KernelCategory::kOther, 0);
  return permute_tokens(arrived, local_probabilities, local_map, arrived_tokens,
                        shapes_.received_tokens, local)
      .rows;
}

TensorRef LayerEmitter::flex_combine(const TensorRef& expert_output, std::int64_t tokens,
                                     TensorRef& kept) {
  const std::int64_t h = shapes_.hidden, received = shapes_.received_tokens;
  kept = RankTraceBuilder::view(expert_output, {received, h});
  const TensorRef local_map =
      builder_.tensor({shapes_.flex_gpu_copies, shapes_.experts_local}, DType::kBool);
  const TensorRef unpermuted = unpermute_tokens(kept, local_map, shapes_.flex_gpu_copies, received);
  return flex_exchange(unpermuted, activation({tokens, h}));
}

TensorRef LayerEmitter::flex_combine_backward(const TensorRef& grad_tokens, const TensorRef& kept,
                                              std::int64_t tokens) {
  const std::int64_t h = shapes_.hidden, arrived_tokens = shapes_.flex_gpu_copies;
  const TensorRef grad_arrived = flex_exchange(RankTraceBuilder::view(grad_tokens, {tokens, h}),
                                               activation({arrived_tokens, h}));
  // The permute's map, kept by its autograd context.
  const TensorRef local_map =
      builder_.tensor({arrived_tokens, shapes_.experts_local}, DType::kBool);
  return unpermute_backward(grad_arrived, saved_operand(kept, {shapes_.received_tokens, h}),
                            local_map, arrived_tokens, shapes_.received_tokens);
}

LayerEmitter::Permuted LayerEmitter::flex_dispatch_backward(const TensorRef& grad_rows,
                                                            std::int64_t tokens) {
  const std::int64_t h = shapes_.hidden, arrived_tokens = shapes_.flex_gpu_copies;
  const std::int64_t local = shapes_.experts_local;
  const TensorRef local_map = builder_.tensor({arrived_tokens, local}, DType::kBool);
  const Permuted grad_arrived =
      permute_backward(grad_rows, builder_.tensor({shapes_.received_tokens}, DType::kFloat32),
                       local_map, arrived_tokens, shapes_.received_tokens, local);
  // The combine-shaped transfer brings the tokens' and their top-k probabilities' gradients
  // back; the latter scattered to the dense [tokens, experts] the router's backward reads.
  Permuted grad{flex_exchange(grad_arrived.rows, activation({tokens, h})),
                builder_.tensor({tokens, shapes_.experts})};
  const TensorRef grad_top = builder_.tensor({tokens, shapes_.top_k}, DType::kFloat32);
  builder_.compute("aten::scatter", {grad_top}, {grad.probabilities}, KernelCategory::kOther, 0);
  return grad;
}

}  // namespace perfsim::generators::llm

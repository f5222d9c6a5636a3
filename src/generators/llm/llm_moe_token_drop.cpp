// Token dropping with a capacity factor, as Megatron-Core 0.14-0.16 runs it (megatron/core/
// transformer/moe/moe_utils.py apply_router_token_dropping and permute's drop_and_pad path;
// token_dispatcher.py MoEAlltoAllTokenDispatcher.preprocess). With moe_expert_capacity_factor
// the router keeps, per expert, the `capacity` tokens of highest probability (drop policy
// "probs", Megatron's default), capacity = ceil(tokens x top_k / experts x factor). With
// moe_pad_expert_input_to_capacity every expert then takes exactly `capacity` rows (the
// capacity mask is the routing map), so the dispatcher knows every split in advance: no counts
// are copied to the host and the host never waits (llm_moe_host_path.cpp). Without padding the
// counts vary, the dispatcher copies them and waits as in the dropless case.
#include <algorithm>
#include <cmath>

#include "generators/llm/llm_layer_emitter.hpp"

namespace perfsim::generators::llm {

TensorRef LayerEmitter::router_token_dropping(const TensorRef& probabilities, std::int64_t tokens,
                                              MoeSaved& saved) {
  const std::int64_t experts = shapes_.experts;
  const std::vector<std::int64_t> dense{tokens, experts};
  const auto capacity = padded_expert_rows(tokens, model_.moe) / experts;
  TensorRef mask;
  if (capacity > tokens) {
    // Room for every token: torch.ones_like(probs).bool().
    mask = builder_.tensor(dense, DType::kBool);
    builder_.compute("aten::ones_like", {}, {mask}, KernelCategory::kMemory, 0);
  } else {
    // torch.topk over the tokens of each expert (dim 0, k = capacity), then the indices
    // scattered into zeros and cast to bool.
    const TensorRef values = builder_.tensor({capacity, experts}, probabilities.dtype);
    const TensorRef indices = builder_.tensor({capacity, experts}, DType::kInt64);
    builder_.compute("aten::topk", {probabilities}, {values, indices}, KernelCategory::kOther,
                     2.0 * static_cast<double>(tokens * experts));
    const TensorRef zeros = builder_.tensor(dense, probabilities.dtype);
    builder_.compute("aten::zeros_like", {}, {zeros}, KernelCategory::kMemory, 0);
    const TensorRef scattered =
        elementwise("aten::scatter", {zeros, indices}, dense, 0, probabilities.dtype);
    mask = elementwise("aten::_to_copy", {scattered}, dense, 0, DType::kBool);
  }
  // Padded: the capacity mask is the map; else the routed tokens that fit
  // (logical_and). The probabilities of the dropped are zeroed either way.
  saved.routing_map =
      moe_switches_.pad_to_capacity
          ? mask
          : elementwise("aten::logical_and", {saved.routing_map, mask}, dense, 1, DType::kBool);
  return elementwise("aten::mul", {probabilities, saved.routing_map}, dense, 1,
                     probabilities.dtype);
}

TensorRef LayerEmitter::router_token_dropping_backward(const TensorRef& grad, std::int64_t tokens) {
  // The mul's backward: the gradient times the map (autograd's saved bool map, which the memory
  // closed form does not count, as the fused router's map).
  const std::vector<std::int64_t> dense{tokens, shapes_.experts};
  const TensorRef map = builder_.tensor(dense, DType::kBool);
  return elementwise("aten::mul", {grad, map}, dense, 1, grad.dtype);
}

LayerEmitter::Permuted LayerEmitter::padded_permute(const TensorRef& token_rows,
                                                    const TensorRef& probabilities,
                                                    const TensorRef& routing_map,
                                                    std::int64_t token_count, std::int64_t rows,
                                                    std::int64_t experts) {
  const std::int64_t h = shapes_.hidden;
  const std::int64_t capacity = rows / experts;
  Permuted out{activation({rows, h}), builder_.tensor({rows}, DType::kFloat32)};
  // routing_map.to(int8).T.contiguous(); argsort(dim=-1, descending, stable)[:, :capacity]
  // .contiguous(): each expert's token indices, the routed ones first; index_select copies
  // the rows. The probabilities: probs.T.contiguous(), the flat indices (arange x tokens +
  // indices), index_select.
  const TensorRef map_int8 =
      elementwise("aten::_to_copy", {routing_map}, {token_count, experts}, 0, DType::kInt8);
  const TensorRef map_t = builder_.tensor({experts, token_count}, DType::kInt8);
  builder_.compute("aten::contiguous", {map_int8}, {map_t}, KernelCategory::kMemory, 0);
  const TensorRef order = builder_.tensor({experts, token_count}, DType::kInt64);
  builder_.compute("aten::argsort", {map_t}, {order}, KernelCategory::kOther,
                   static_cast<double>(experts * token_count) *
                       std::log2(static_cast<double>(std::max<std::int64_t>(token_count, 2))));
  const TensorRef sorted_indices = builder_.tensor({experts, capacity}, DType::kInt64);
  builder_.compute("aten::contiguous", {order}, {sorted_indices}, KernelCategory::kMemory, 0);
  builder_.compute("aten::index_select",
                   {token_rows, RankTraceBuilder::view(sorted_indices, {rows})}, {out.rows},
                   KernelCategory::kOther, 0);
  const TensorRef probabilities_t = builder_.tensor({experts, token_count});
  builder_.compute("aten::contiguous", {probabilities}, {probabilities_t}, KernelCategory::kMemory,
                   0);
  const TensorRef expert_offsets = builder_.tensor({experts, 1}, DType::kInt64);
  builder_.compute("aten::arange", {}, {expert_offsets}, KernelCategory::kMemory, 0);
  const TensorRef flat_indices = elementwise(
      "aten::add",
      {elementwise("aten::mul", {expert_offsets}, {experts, 1}, 1, DType::kInt64), sorted_indices},
      {experts, capacity}, 1, DType::kInt64);
  builder_.compute("aten::index_select",
                   {RankTraceBuilder::view(probabilities_t, {experts * token_count}),
                    RankTraceBuilder::view(flat_indices, {rows})},
                   {out.probabilities}, KernelCategory::kOther, 0);
  return out;
}

}  // namespace perfsim::generators::llm

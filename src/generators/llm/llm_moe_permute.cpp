// The alltoall dispatcher's data movement as Megatron-Core 0.14-0.16 runs it (megatron/core/
// transformer/moe/moe_utils.py permute, unpermute, sort_chunks_by_idxs; token_dispatcher.py):
// with moe_permute_fusion Transformer Engine's Triton kernels (transformer_engine/pytorch/
// permutation.py, triton/permutation.py: make_row_id_map's three passes, permute_with_mask_map,
// unpermute_with_mask_map, make_chunk_sort_map, sort_chunks_by_map), else PyTorch ops whose
// masked_select reads its output size on the host (a synchronization). The routing
// probabilities are permuted with the tokens and travel to the experts (applied in their
// activation), so unpermute takes none. One op per Python-level call (README "The MoE layer's
// op inventory").
#include "generators/llm/llm_layer_emitter.hpp"

namespace perfsim::generators::llm {
namespace {

// make_row_id_map's passes (TE 2.x): per-expert block counts, their prefix sums, the row ids.
constexpr int kRowIdMapPasses = 3;

// masked_select sizes its output from a count it copies to the host: the op blocks the host
// until the compute stream has run it.
void synchronizes_host(RankTraceBuilder& builder) {
  builder.trace().ops.back().runtime_calls.push_back({"cudaStreamSynchronize", 0.0, 0.0, -1});
}

}  // namespace

LayerEmitter::Permuted LayerEmitter::permute_tokens(const TensorRef& tokens,
                                                    const TensorRef& probabilities,
                                                    const TensorRef& routing_map,
                                                    std::int64_t token_count, std::int64_t rows,
                                                    std::int64_t map_experts) {
  const std::int64_t h = shapes_.hidden;
  const std::int64_t experts = map_experts >= 0 ? map_experts : shapes_.experts;
  const std::int64_t dispatched = rows >= 0 ? rows : shapes_.dispatched_tokens;
  const TensorRef token_rows = RankTraceBuilder::view(tokens, {token_count, h});
  Permuted out{activation({dispatched, h}), builder_.tensor({dispatched}, DType::kFloat32)};
  if (moe_switches_.permute_fusion) {
    // The row-id map [tokens, 2 experts + 1] int32 from the routing map, then one kernel that
    // copies every token to its experts' rows with its probabilities.
    const TensorRef row_id_map = builder_.tensor({token_count, 2 * experts + 1}, DType::kInt32);
    for (int pass = 1; pass <= kRowIdMapPasses; ++pass)
      builder_.compute("te::make_row_id_map", {pass == 1 ? routing_map : row_id_map}, {row_id_map},
                       KernelCategory::kOther, 0);
    builder_.compute("te::moe_permute", {token_rows, row_id_map, probabilities},
                     {out.rows, out.probabilities}, KernelCategory::kOther, 0);
    return out;
  }
  if (moe_switches_.pad_to_capacity)
    return padded_permute(token_rows, probabilities, routing_map, token_count, dispatched, experts);
  // routing_map.T.contiguous(); arange(tokens) expanded; masked_select gives each expert's
  // token indices (host sync); index_select copies the rows. The probabilities: the same
  // transpose and masked_select (host sync).
  const TensorRef map_t = builder_.tensor({experts, token_count}, DType::kBool);
  builder_.compute("aten::contiguous", {routing_map}, {map_t}, KernelCategory::kMemory, 0);
  const TensorRef token_indices = builder_.tensor({token_count}, DType::kInt64);
  builder_.compute("aten::arange", {}, {token_indices}, KernelCategory::kMemory, 0);
  const TensorRef sorted_indices = builder_.tensor({dispatched}, DType::kInt64);
  builder_.compute("aten::masked_select",
                   {RankTraceBuilder::view(token_indices, {1, token_count}), map_t},
                   {sorted_indices}, KernelCategory::kOther, 0);
  synchronizes_host(builder_);
  builder_.compute("aten::index_select", {token_rows, sorted_indices}, {out.rows},
                   KernelCategory::kOther, 0);
  const TensorRef probabilities_t = builder_.tensor({experts, token_count});
  builder_.compute("aten::contiguous", {probabilities}, {probabilities_t}, KernelCategory::kMemory,
                   0);
  builder_.compute("aten::masked_select", {probabilities_t, map_t}, {out.probabilities},
                   KernelCategory::kOther, 0);
  synchronizes_host(builder_);
  return out;
}

TensorRef LayerEmitter::unpermute_tokens(const TensorRef& rows, const TensorRef& routing_map,
                                         std::int64_t token_count, std::int64_t row_count) {
  const std::int64_t h = shapes_.hidden;
  const std::int64_t dispatched = row_count >= 0 ? row_count : shapes_.dispatched_tokens;
  TensorRef out = activation({token_count, h});
  if (moe_switches_.permute_fusion) {
    // unpermute_with_mask_map: each token's k rows summed (the row-id map is the permute's).
    builder_.compute("te::moe_unpermute", {rows, routing_map}, {out}, KernelCategory::kOther,
                     static_cast<double>(dispatched * h));
    return out;
  }
  // zeros, then scatter_add_ of the rows at their token indices.
  builder_.compute("aten::zeros", {}, {out}, KernelCategory::kMemory, 0);
  TensorRef summed = activation({token_count, h});
  builder_.compute("aten::scatter_add_", {out, rows}, {summed}, KernelCategory::kOther,
                   static_cast<double>(dispatched * h));
  return summed;
}

TensorRef LayerEmitter::unpermute_backward(const TensorRef& grad_tokens,
                                           const TensorRef& combined_rows,
                                           const TensorRef& routing_map, std::int64_t token_count,
                                           std::int64_t row_count) {
  const std::int64_t h = shapes_.hidden;
  const std::int64_t dispatched = row_count >= 0 ? row_count : shapes_.dispatched_tokens;
  TensorRef grad_rows = activation({dispatched, h});
  // Fused: permute_with_mask_map copies each token's gradient to its k rows; unfused:
  // scatter_add_'s backward, a gather.
  builder_.compute(
      moe_switches_.permute_fusion ? "te::moe_unpermute_backward" : "aten::gather",
      {RankTraceBuilder::view(grad_tokens, {token_count, h}), combined_rows, routing_map},
      {grad_rows}, KernelCategory::kOther, 0);
  return grad_rows;
}

LayerEmitter::Permuted LayerEmitter::permute_backward(const TensorRef& grad_rows,
                                                      const TensorRef& grad_probabilities,
                                                      const TensorRef& routing_map,
                                                      std::int64_t token_count, std::int64_t rows,
                                                      std::int64_t map_experts) {
  const std::int64_t h = shapes_.hidden;
  const std::int64_t experts = map_experts >= 0 ? map_experts : shapes_.experts;
  const std::int64_t dispatched = rows >= 0 ? rows : shapes_.dispatched_tokens;
  Permuted grad{activation({token_count, h}), builder_.tensor({token_count, experts})};
  if (moe_switches_.permute_fusion) {
    // unpermute_with_mask_map: each token's k row gradients summed, the probabilities'
    // gradients scattered back to [tokens, experts], one kernel.
    builder_.compute("te::moe_unpermute", {grad_rows, grad_probabilities, routing_map},
                     {grad.rows, grad.probabilities}, KernelCategory::kOther,
                     static_cast<double>(dispatched * h));
    return grad;
  }
  // index_select's backward (zeros, index_add_), masked_select's (zeros_like, masked_scatter)
  // and the transpose's contiguous copy back to [tokens, experts].
  const TensorRef zeros = activation({token_count, h});
  builder_.compute("aten::zeros", {}, {zeros}, KernelCategory::kMemory, 0);
  builder_.compute("aten::index_add_", {zeros, grad_rows}, {grad.rows}, KernelCategory::kOther,
                   static_cast<double>(dispatched * h));
  const TensorRef probability_zeros = builder_.tensor({experts, token_count});
  builder_.compute("aten::zeros_like", {}, {probability_zeros}, KernelCategory::kMemory, 0);
  const TensorRef scattered = builder_.tensor({experts, token_count});
  builder_.compute("aten::masked_scatter", {probability_zeros, grad_probabilities, routing_map},
                   {scattered}, KernelCategory::kOther, 0);
  builder_.compute("aten::contiguous", {scattered}, {grad.probabilities}, KernelCategory::kMemory,
                   0);
  return grad;
}

TensorRef LayerEmitter::probabilities_all_to_all(const TensorRef& probabilities,
                                                 std::int64_t out_rows) {
  TensorRef out = builder_.tensor({out_rows}, DType::kFloat32);
  if (ep_.size == 1)
    return RankTraceBuilder::view(probabilities, {out_rows});
  builder_.communicate({CollectiveKind::kAllToAllv, ep_.name, ep_.size, -1, kExpertParallelStream},
                       probabilities, out);
  return out;
}

LayerEmitter::Permuted LayerEmitter::sort_chunks(const TensorRef& rows,
                                                 const TensorRef& probabilities,
                                                 std::int64_t row_count, std::int64_t width,
                                                 bool backward) {
  if (shapes_.experts_local == 1)
    return {rows, probabilities};
  const TensorRef in = RankTraceBuilder::view(rows, {row_count, width});
  Permuted out{activation({row_count, width}), {}};
  if (probabilities.tensor_id >= 0)
    out.probabilities = builder_.tensor({row_count}, DType::kFloat32);
  if (moe_switches_.permute_fusion) {
    // moe_sort_chunks_by_index(_with_probs): forward builds the chunk map (make_chunk_sort_map)
    // and sorts the rows and probabilities in one kernel; backward reuses the map.
    std::vector<TensorRef> inputs{in}, outputs{out.rows};
    if (out.probabilities.tensor_id >= 0) {
      inputs.push_back(probabilities);
      outputs.push_back(out.probabilities);
    }
    if (!backward) {
      const TensorRef chunk_map = builder_.tensor({row_count}, DType::kInt32);
      builder_.compute("te::make_chunk_sort_map", {}, {chunk_map}, KernelCategory::kOther, 0);
      inputs.push_back(chunk_map);
    }
    builder_.compute("te::moe_sort_chunks_by_index", std::move(inputs), std::move(outputs),
                     KernelCategory::kOther, 0);
    return out;
  }
  // torch.split (views) and torch.cat of the chunks in the new order, for the rows and for the
  // probabilities; backward: split's backward, a cat of the gradients, for each.
  builder_.compute("aten::cat", {in}, {out.rows}, KernelCategory::kMemory, 0);
  if (out.probabilities.tensor_id >= 0)
    builder_.compute("aten::cat", {probabilities}, {out.probabilities}, KernelCategory::kMemory, 0);
  return out;
}

}  // namespace perfsim::generators::llm

// Multi-token prediction (LayerEmitter::mtp_forward / mtp_backward), as Megatron-Core's
// MultiTokenPredictionLayer runs it (megatron/core/transformer/multi_token_prediction.py;
// DeepSeek-V3 Sec. 2.2): the shared embedding of the input tokens shifted once more, enorm on
// it and hnorm on the previous depth's hidden state, their concatenation [s, b, 2h] into eh_proj
// (column-parallel: the input gathered over TP with SP, the output all-gathered over the last
// dimension and split back to the SP tokens), one transformer layer, and the shared output
// head with its final norm and the vocabulary-parallel loss.
#include "generators/llm/llm_layer_emitter.hpp"

namespace perfsim::generators::llm {
namespace {

constexpr double kNormFlops = 8;
constexpr double kNormBackwardFlops = 12;

}  // namespace

MtpWeights LayerEmitter::make_mtp_weights(bool moe) {
  MtpWeights weights;
  weights.layer = make_weights(moe);
  weights.eh_proj = linear_weight({2 * shapes_.hidden, shapes_.hidden / shapes_.tp});
  return weights;
}

void LayerEmitter::cast_mtp_weights_to_fp8(const MtpWeights& weights) {
  if (!shapes_.fp8_linear)
    return;
  cast_weights_to_fp8(weights.layer);
  ready_fp8_weight(weights.eh_proj, weights.eh_proj.shape.at(0), weights.eh_proj.shape.at(1),
                   weights.eh_proj_fp8);
}

std::int64_t LayerEmitter::place_mtp_fp8_copies(MtpWeights& weights, const TensorRef& buffer,
                                                std::int64_t offset) {
  if (!shapes_.fp8_linear)
    return offset;
  offset = place_fp8_copies(weights.layer, buffer, offset);
  return place_fp8_copy(weights.eh_proj, weights.eh_proj_fp8, weights.eh_proj.shape.at(0),
                        weights.eh_proj.shape.at(1), buffer, offset);
}

MtpSaved LayerEmitter::mtp_forward(const TensorRef& hidden, const TensorRef& embedding_weight,
                                   const TensorRef& head_weight, const MtpWeights& weights) {
  const std::int64_t h = shapes_.hidden, tokens = shapes_.tokens();
  const std::int64_t local_rows = shapes_.seq_local * shapes_.batch;
  const std::vector<std::int64_t> local_shape{shapes_.seq_local, shapes_.batch, h};
  MtpSaved saved;
  saved.hidden = hidden;
  saved.embedded = embedding_forward(embedding_weight);
  const TensorRef embedded_normed =
      elementwise("aten::native_layer_norm", {saved.embedded}, local_shape, kNormFlops);
  const TensorRef hidden_normed =
      elementwise("aten::native_layer_norm", {hidden}, local_shape, kNormFlops);
  saved.concatenated = activation({local_rows, 2 * h});
  builder_.compute("aten::cat", {embedded_normed, hidden_normed}, {saved.concatenated},
                   KernelCategory::kMemory, 0);
  // eh_proj: column-parallel over its output; the output all-gathered over the last dimension,
  // then this rank's SP tokens copied out (scatter_to_sequence_parallel_region).
  const std::int64_t out_local = h / shapes_.tp;
  // FP8: TE saves the cast's transpose unless the backward gathers the bf16 rows again
  // (MtpSaved::concatenated_fp8).
  const TensorRef projected =
      linear_forward(sequence_gather(saved.concatenated, 2 * h), weights.eh_proj,
                     weights.eh_proj_fp8, tokens, 2 * h, out_local, kAmaxKernelTpReduced,
                     backward_gathers_input() ? nullptr : &saved.concatenated_fp8);
  TensorRef layer_input;
  if (tp_.size == 1) {
    layer_input = RankTraceBuilder::view(projected, local_shape);
  } else {
    const TensorRef gathered = activation({tokens, h});
    builder_.communicate(
        {CollectiveKind::kAllGather, tp_.name, tp_.size, -1, kTensorParallelStream}, projected,
        gathered);
    layer_input = activation(local_shape);
    builder_.compute("aten::copy_",
                     {layer_input, RankTraceBuilder::view(gathered, {local_rows, h})},
                     {layer_input}, KernelCategory::kMemory, 0);
  }
  saved.layer = forward(layer_input, weights.layer);
  saved.output = saved.layer.output;
  saved.head = head_forward(saved.output, head_weight);
  return saved;
}

TensorRef LayerEmitter::mtp_backward(const TensorRef& grad_output,
                                     const TensorRef& embedding_weight,
                                     const TensorRef& head_weight, const MtpWeights& weights,
                                     const MtpSaved& saved) {
  const std::int64_t h = shapes_.hidden, tokens = shapes_.tokens();
  const std::vector<std::int64_t> local_shape{shapes_.seq_local, shapes_.batch, h};
  TensorRef grad = head_backward(head_weight, saved.head);
  if (grad_output.tensor_id >= 0)
    grad = sum_gradients(grad, grad_output);
  const TensorRef grad_input = backward(grad, weights.layer, saved.layer);
  // eh_proj's output gradient: this rank's SP rows gathered (the split's backward), its own
  // columns kept (the last-dimension gather's backward).
  const std::int64_t out_local = h / shapes_.tp;
  // FP8: the gradient cast to E5M2; the input, gathered again in bf16 with SP, cast again.
  const TensorRef grad_projected =
      backward_operand(RankTraceBuilder::view(sequence_gather(grad_input, h), {tokens, out_local}),
                       tokens, out_local);
  const TensorRef grad_concatenated = sequence_reduce(
      data_gradient(grad_projected, weights.eh_proj, weights.eh_proj_fp8, tokens, out_local, 2 * h),
      2 * h);
  weight_gradient(saved_wgrad_input(saved.concatenated_fp8, saved.concatenated, 2 * h),
                  grad_projected, 2 * h, tokens, out_local, backward_gathers_input());
  // The cat's backward is two views; the norms' backward.
  auto norm_backward = [&](const TensorRef& norm_input) {
    return elementwise("aten::native_layer_norm_backward",
                       {RankTraceBuilder::view(grad_concatenated, local_shape),
                        saved_operand(norm_input, local_shape)},
                       local_shape, kNormBackwardFlops);
  };
  embedding_backward(norm_backward(saved.embedded), embedding_weight);
  return norm_backward(saved.hidden);
}

}  // namespace perfsim::generators::llm

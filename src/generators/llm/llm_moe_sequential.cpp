// Megatron-Core's SequentialMLP: the local experts with moe_grouped_gemm off (Megatron-LM's own
// flag default; every published recipe perfsim has read turns it on and gets TEGroupedMLP,
// llm_moe_layer.cpp). experts.py: the dispatcher's rows are split by tokens_per_expert (views),
// each expert is an MLP module of its own (TEColumnParallelLinear FC1, the activation,
// TERowParallelLinear FC2; as experts their linears do no TP communication, the dispatcher
// gathered the rows over ETP) called one after another, and the outputs are concatenated.
// With FP8 each expert's rows are first padded to a multiple of 16 (_pad_tensor_for_quantization:
// a zero tensor and a cat) and the output sliced back. What this costs against the grouped
// layers: every projection is a Transformer Engine Linear call of its own (host time per call,
// and with FP8 a cast and its scale per expert and tensor), one GEMM kernel per expert, and the
// concatenations (forward: the outputs; backward: the input gradients, the split's backward).
#include "generators/llm/llm_layer_emitter.hpp"

namespace perfsim::generators::llm {

namespace {

// One expert's rows of a [experts_local x per_expert, cols] tensor, as the split hands them.
TensorRef expert_rows(const TensorRef& rows, std::int64_t per_expert, std::int64_t cols) {
  return RankTraceBuilder::view(rows, {per_expert, cols});
}

// One local expert's MLP: its rows (per_expert; padded: what its FP8 linears run on), widths
// and weights, the same for every expert of the layer.
struct ExpertMlp {
  std::int64_t experts, per_expert, padded, h, ffn, fc1_width;
  TensorRef fc1_weight, fc2_weight;
};

ExpertMlp expert_mlp(const LocalShapes& shapes, std::int64_t per_expert,
                     const LayerWeights& weights) {
  const std::int64_t h = shapes.hidden, ffn = shapes.expert_ffn_local;
  return {.experts = shapes.experts_local,
          .per_expert = per_expert,
          .padded = shapes.fp8_linear ? fp8_aligned_expert_rows(per_expert) : per_expert,
          .h = h,
          .ffn = ffn,
          .fc1_width = shapes.expert_fc1_width,
          .fc1_weight = RankTraceBuilder::view(weights.expert_fc1, {h, shapes.expert_fc1_width}),
          .fc2_weight = RankTraceBuilder::view(weights.expert_fc2, {ffn, h})};
}

}  // namespace

TensorRef LayerEmitter::sequential_experts_forward(const TensorRef& expert_input,
                                                   const LayerWeights& weights, MoeSaved& saved) {
  const auto [experts, per_expert, padded, h, ffn, fc1_width, fc1_weight, fc2_weight] =
      expert_mlp(shapes_, tokens_per_expert(), weights);
  saved.sequential.assign(static_cast<std::size_t>(experts), MlpSaved{});
  std::vector<TensorRef> outputs;
  for (std::int64_t expert = 0; expert < experts; ++expert) {
    MlpSaved& mine = saved.sequential[static_cast<std::size_t>(expert)];
    TensorRef input = expert_rows(expert_input, per_expert, h);
    if (padded != per_expert) {
      const TensorRef pad = activation({padded - per_expert, h});
      builder_.compute("aten::zeros", {}, {pad}, KernelCategory::kMemory, 0);
      const TensorRef padded_input = activation({padded, h});
      builder_.compute("aten::cat", {input, pad}, {padded_input}, KernelCategory::kMemory, 0);
      input = padded_input;
    }
    // TE Linear: with FP8 the input's cast (its amax and scale first under current scaling),
    // whose transpose the layer saves; in bf16 the layer keeps the split's view of the rows.
    mine.fc1 = linear_forward(input, fc1_weight, weights.expert_fc1_fp8, padded, h, fc1_width,
                              kAmaxKernel, &mine.fc1_input_fp8);
    mine.act = ffn_activation(mine.fc1, padded, ffn);
    mine.output = linear_forward(mine.act, fc2_weight, weights.expert_fc2_fp8, padded, ffn, h,
                                 kAmaxKernel, &mine.fc2_input_fp8);
    outputs.push_back(RankTraceBuilder::view(mine.output, {per_expert, h}));
  }
  saved.expert_input = expert_input;
  if (experts == 1)  // no cat: the output itself, or output[:n] of the padded rows (a view)
    return outputs.front();
  // torch.cat of the experts' outputs.
  const TensorRef out = activation({experts * per_expert, h});
  builder_.compute("aten::cat", outputs, {out}, KernelCategory::kMemory, 0);
  return out;
}

TensorRef LayerEmitter::sequential_experts_backward(const TensorRef& grad_expert_output,
                                                    const LayerWeights& weights,
                                                    const MoeSaved& saved) {
  const auto [experts, per_expert, padded, h, ffn, fc1_width, fc1_weight, fc2_weight] =
      expert_mlp(shapes_, tokens_per_expert(), weights);
  std::vector<TensorRef> grad_inputs(static_cast<std::size_t>(experts));
  // Autograd reaches the experts in the reverse order of their forward (the last one's
  // output was concatenated last).
  for (std::int64_t expert = experts - 1; expert >= 0; --expert) {
    const MlpSaved& mine = saved.sequential.at(static_cast<std::size_t>(expert));
    TensorRef grad = expert_rows(grad_expert_output, per_expert, h);
    if (padded != per_expert) {
      // output[:n]'s backward: the gradient written into a zeroed tensor of the padded rows.
      const TensorRef grad_padded = activation({padded, h});
      builder_.compute("aten::cat", {grad}, {grad_padded}, KernelCategory::kMemory, 0);
      grad = grad_padded;
    }
    // TE Linear's backward: the output gradient cast once for both GEMMs, the data gradient,
    // the weight gradient from the saved input (FP8 transpose, or the kept bf16 rows).
    const TensorRef grad_fc2_out = backward_operand(grad, padded, h);
    const TensorRef grad_act =
        data_gradient(grad_fc2_out, fc2_weight, weights.expert_fc2_fp8, padded, h, ffn);
    const std::vector<std::int64_t> ffn_shape{padded, ffn};
    weight_gradient(saved_wgrad_operand(mine.fc2_input_fp8, {ffn, padded}, mine.act, ffn_shape),
                    grad_fc2_out, ffn, padded, h, false);
    const TensorRef grad_fc1 = ffn_activation_backward(grad_act, mine.fc1, padded, ffn);
    const TensorRef grad_fc1_out = backward_operand(grad_fc1, padded, fc1_width);
    grad_inputs[static_cast<std::size_t>(expert)] =
        data_gradient(grad_fc1_out, fc1_weight, weights.expert_fc1_fp8, padded, fc1_width, h);
    weight_gradient(
        saved_wgrad_operand(mine.fc1_input_fp8, {h, padded},
                            expert_rows(saved.expert_input, per_expert, h), {per_expert, h}),
        grad_fc1_out, h, padded, fc1_width, false);
  }
  // The pad's cat's backward: the first per_expert rows of each (views); the split's: the
  // experts' input gradients concatenated (one expert: no split, no cat).
  for (TensorRef& grad : grad_inputs)
    grad = RankTraceBuilder::view(grad, {per_expert, h});
  if (experts == 1)
    return grad_inputs.front();
  const TensorRef grad_input = activation({experts * per_expert, h});
  builder_.compute("aten::cat", grad_inputs, {grad_input}, KernelCategory::kMemory, 0);
  return grad_input;
}

}  // namespace perfsim::generators::llm

#include "generators/llm/llm_layer_emitter.hpp"

#include "generators/llm/llm_delayed_wgrad.hpp"
#include "generators/llm/megatron_fused_softmax.hpp"

namespace perfsim::generators::llm {
namespace {

// Flops per element the element-wise ops count (informational: the kernel models price
// element-wise ops by their bytes).
constexpr double kNormFlops = 8;
constexpr double kActivationFlops = 8;

// The layer's linear-layer weights (Transformer Engine modules: FP8 under the FP8 recipe) with
// their FP8 copies, in the order the forward reads them. A MoE layer without shared experts
// has empty fc1 / fc2; MLA without query compression no q_down.
template <typename Weights, typename Visit>
void for_each_linear_weight(Weights& weights, Visit visit) {
  if (weights.mla) {
    if (weights.q_down.tensor_id >= 0)
      visit(weights.q_down, weights.q_down_fp8);
    visit(weights.q_up, weights.q_up_fp8);
    visit(weights.kv_down, weights.kv_down_fp8);
    visit(weights.kv_up, weights.kv_up_fp8);
  } else {
    visit(weights.qkv, weights.qkv_fp8);
  }
  visit(weights.proj, weights.proj_fp8);
  visit(weights.fc1, weights.fc1_fp8);
  visit(weights.fc2, weights.fc2_fp8);
}

}  // namespace

LayerEmitter::LayerEmitter(const LocalShapes& shapes, const TransformerConfig& model,
                           Recompute recompute, TensorParallelOverlap overlap,
                           TensorParallelGroup tp, ContextParallelRing cp, ExpertParallelGroup ep,
                           RankTraceBuilder& builder)
    : shapes_(shapes),
      model_(model),
      recompute_(recompute),
      overlap_(overlap),
      tp_(std::move(tp)),
      cp_(cp),
      ep_(std::move(ep)),
      builder_(builder) {}

LayerWeights LayerEmitter::make_weights(bool moe) {
  const std::int64_t h = shapes_.hidden;
  LayerWeights weights;
  if (shapes_.mla) {
    weights.mla = true;
    if (shapes_.q_lora_rank > 0)
      weights.q_down = linear_weight({h, shapes_.q_lora_rank});
    weights.q_up = linear_weight({shapes_.q_up_input(), shapes_.q_up_width()});
    weights.kv_down = linear_weight({h, shapes_.kv_down_width()});
    weights.kv_up = linear_weight({shapes_.kv_lora_rank, shapes_.kv_up_width()});
  } else {
    weights.qkv = linear_weight({h, shapes_.qkv_width});
  }
  weights.proj = linear_weight({shapes_.context_width(), h});
  if (!moe) {
    weights.fc1 = linear_weight({h, shapes_.fc1_width});
    weights.fc2 = linear_weight({shapes_.ffn_local, h});
    return weights;
  }
  weights.fc1 = linear_weight({h, shapes_.shared_fc1_width});
  weights.fc2 = linear_weight({shapes_.shared_ffn_local, h});
  weights.moe = true;
  weights.router = builder_.tensor({h, shapes_.experts});
  weights.expert_fc1 = linear_weight({shapes_.experts_local, h, shapes_.expert_fc1_width});
  weights.expert_fc2 = linear_weight({shapes_.experts_local, shapes_.expert_ffn_local, h});
  return weights;
}

LayerWeights LayerEmitter::weights_in(const TensorRef& flat) const {
  const std::int64_t h = shapes_.hidden;
  LayerWeights weights;
  weights.qkv = RankTraceBuilder::view(flat, {h, shapes_.qkv_width});
  weights.proj = RankTraceBuilder::view(flat, {shapes_.context_width(), h});
  weights.fc1 = RankTraceBuilder::view(flat, {h, shapes_.fc1_width});
  weights.fc2 = RankTraceBuilder::view(flat, {shapes_.ffn_local, h});
  return weights;
}

TensorRef LayerEmitter::mm(const TensorRef& a, const TensorRef& b, std::int64_t m, std::int64_t k,
                           std::int64_t n, DType out_dtype) {
  TensorRef out =
      out_dtype == DType::kUnknown ? activation({m, n}) : builder_.tensor({m, n}, out_dtype);
  builder_.compute("aten::mm",
                   {RankTraceBuilder::view(a, {m, k}), RankTraceBuilder::view(b, {k, n})}, {out},
                   KernelCategory::kGemm, 2.0 * m * n * k);
  return out;
}

TensorRef LayerEmitter::bmm(const TensorRef& a, const TensorRef& b, std::int64_t batch,
                            std::int64_t m, std::int64_t k, std::int64_t n) {
  TensorRef out = activation({batch, m, n});
  builder_.compute(
      "aten::bmm",
      {RankTraceBuilder::view(a, {batch, m, k}), RankTraceBuilder::view(b, {batch, k, n})}, {out},
      KernelCategory::kGemm, 2.0 * batch * m * n * k);
  return out;
}

TensorRef LayerEmitter::elementwise(const std::string& op, std::vector<TensorRef> inputs,
                                    std::vector<std::int64_t> out_shape, double flops_per_element,
                                    DType out_dtype) {
  TensorRef out = builder_.tensor(std::move(out_shape),
                                  out_dtype == DType::kUnknown ? shapes_.dtype : out_dtype);
  builder_.compute(op, std::move(inputs), {out}, KernelCategory::kOther,
                   flops_per_element * static_cast<double>(out.numel));
  return out;
}

TensorRef LayerEmitter::cast_transpose(const TensorRef& x, std::int64_t rows, std::int64_t cols,
                                       const Fp8Copy& into, Fp8Scaling scaling,
                                       TensorRef* transposed) {
  current_scale(x, rows, cols, scaling);
  TensorRef fp8 = into.set ? builder_.alias(into.copy, {rows, cols}, DType::kFloat8)
                           : builder_.tensor({rows, cols}, DType::kFloat8);
  TensorRef fp8_transposed = into.set
                                 ? builder_.alias(into.transposed, {cols, rows}, DType::kFloat8)
                                 : builder_.tensor({cols, rows}, DType::kFloat8);
  // Flops: amax compare and scale multiply per element (the roofline prices the bytes).
  builder_.compute("te::cast_transpose", {RankTraceBuilder::view(x, {rows, cols})},
                   {fp8, fp8_transposed}, KernelCategory::kOther,
                   2.0 * static_cast<double>(rows * cols));
  if (transposed)
    *transposed = fp8_transposed;
  return fp8;
}

void LayerEmitter::cast_weights_to_fp8(const LayerWeights& weights) {
  if (!shapes_.fp8_linear)
    return;
  for_each_linear_weight(weights, [&](const TensorRef& weight, const Fp8Copy& copy) {
    ready_fp8_weight(weight, weight.shape.at(0), weight.shape.at(1), copy);
  });
  if (!weights.moe)
    return;
  // The experts' [experts_local, in, out] weights, one cast kernel each (Transformer Engine's
  // grouped linear keeps an FP8 copy of every expert's weight).
  const std::pair<const TensorRef*, const Fp8Copy*> experts[] = {
      {&weights.expert_fc1, &weights.expert_fc1_fp8},
      {&weights.expert_fc2, &weights.expert_fc2_fp8}};
  for (const auto& [weight, copy] : experts) {
    const std::int64_t in = weight->shape.at(1), out = weight->shape.at(2);
    if (moe_switches_.grouped_gemm && !shapes_.fp8_params) {
      expert_weight_current_scale(*weight, in, out);
      cast_transpose(*weight, weight->shape.at(0) * in, out, *copy);
      continue;
    }
    // SequentialMLP: each expert's Linear casts its own weight into its slice of the copies.
    // FP8 primary weights: every expert's weight is a Float8Tensor parameter of its own, each
    // transposed after its gather (post_all_gather_processing), grouped or not.
    for (std::int64_t expert = 0; expert < shapes_.experts_local; ++expert) {
      const std::int64_t offset = expert * in * out;
      const Fp8Copy slice{
          .set = true,
          .copy = builder_.alias(copy->copy, {in, out}, DType::kFloat8, offset),
          .transposed = builder_.alias(copy->transposed, {out, in}, DType::kFloat8, offset)};
      ready_fp8_weight(RankTraceBuilder::view(*weight, {in, out}), in, out, slice);
    }
  }
}

void LayerEmitter::ready_fp8_weight(const TensorRef& weight, std::int64_t rows, std::int64_t cols,
                                    const Fp8Copy& copy) {
  // A MoE layer without shared experts has no such module (its fc1 / fc2 are empty): no kernel.
  if (weight.numel == 0)
    return;
  if (!shapes_.fp8_params) {
    cast_transpose(weight, rows, cols, copy, kAmaxKernel);
    return;
  }
  // The weight is already E4M3 with its scale (quantized by the optimizer step); Hopper's FP8
  // GEMMs take TN operands only, so Transformer Engine writes its transpose (one read, one
  // write of a byte per element) for the data gradient.
  const TensorRef transposed = copy.set
                                   ? builder_.alias(copy.transposed, {cols, rows}, DType::kFloat8)
                                   : builder_.tensor({cols, rows}, DType::kFloat8);
  builder_.compute(std::string(kFp8WeightTransposeOpName),
                   {RankTraceBuilder::view(weight, {rows, cols})}, {transposed},
                   KernelCategory::kMemory, 0);
}

std::int64_t LayerEmitter::fp8_copy_elements(const LayerWeights& weights) const {
  if (!shapes_.fp8_linear)
    return 0;
  std::int64_t elements = 0;
  for_each_linear_weight(
      weights, [&](const TensorRef& weight, const Fp8Copy&) { elements += weight.numel; });
  if (weights.moe)
    elements += weights.expert_fc1.numel + weights.expert_fc2.numel;
  // FP8 primary weights: the weight is its own FP8 copy; only the transpose is extra.
  return shapes_.fp8_params ? elements : 2 * elements;
}

std::int64_t LayerEmitter::fp8_gemms(const LayerWeights& weights) const {
  if (!shapes_.fp8_linear)
    return 0;
  std::int64_t gemms = 0;
  for_each_linear_weight(
      weights, [&](const TensorRef& weight, const Fp8Copy&) { gemms += weight.numel > 0 ? 1 : 0; });
  return gemms + (weights.moe ? 2 * shapes_.experts_local : 0);
}

std::int64_t LayerEmitter::place_fp8_copy(const TensorRef& weight, Fp8Copy& copy, std::int64_t rows,
                                          std::int64_t cols, const TensorRef& buffer,
                                          std::int64_t offset) {
  copy.set = true;
  if (shapes_.fp8_params) {
    copy.copy = builder_.alias(weight, {rows, cols}, DType::kFloat8);
  } else {
    copy.copy = builder_.alias(buffer, {rows, cols}, DType::kFloat8, offset);
    offset += weight.numel;
  }
  copy.transposed = builder_.alias(buffer, {cols, rows}, DType::kFloat8, offset);
  return offset + weight.numel;
}

std::int64_t LayerEmitter::place_fp8_copies(LayerWeights& weights, const TensorRef& buffer,
                                            std::int64_t offset) {
  if (!shapes_.fp8_linear)
    return offset;
  for_each_linear_weight(weights, [&](const TensorRef& weight, Fp8Copy& copy) {
    offset = place_fp8_copy(weight, copy, weight.shape.at(0), weight.shape.at(1), buffer, offset);
  });
  if (weights.moe) {
    const std::pair<const TensorRef*, Fp8Copy*> experts[] = {
        {&weights.expert_fc1, &weights.expert_fc1_fp8},
        {&weights.expert_fc2, &weights.expert_fc2_fp8}};
    for (const auto& [weight, copy] : experts)
      offset = place_fp8_copy(*weight, *copy, weight->shape.at(0) * weight->shape.at(1),
                              weight->shape.at(2), buffer, offset);
  }
  return offset;
}

TensorRef LayerEmitter::linear_forward(const TensorRef& x, const TensorRef& weight,
                                       const Fp8Copy& fp8, std::int64_t m, std::int64_t k,
                                       std::int64_t n, Fp8Scaling scaling, TensorRef* saved_input) {
  if (!shapes_.fp8_linear)
    return mm(x, weight, m, k, n);
  // The weight's FP8 copy was made at the first micro-batch (cast_weights_to_fp8); an input
  // all-gathered in FP8 is used as it is.
  const TensorRef x_fp8 =
      x.dtype == DType::kFloat8 ? x : cast_transpose(x, m, k, {}, scaling, saved_input);
  return mm(x_fp8, fp8_weight_operand(fp8, false, {k, n}), m, k, n);
}

TensorRef LayerEmitter::backward_operand(const TensorRef& grad, std::int64_t rows,
                                         std::int64_t cols, bool tp_reduced,
                                         TensorRef* transposed) {
  return shapes_.fp8_linear
             ? cast_transpose(grad, rows, cols, {}, tp_reduced ? kAmaxKernelTpReduced : kAmaxKernel,
                              transposed)
             : grad;
}

TensorRef LayerEmitter::data_gradient(const TensorRef& grad, const TensorRef& weight,
                                      const Fp8Copy& fp8, std::int64_t tokens,
                                      std::int64_t out_width, std::int64_t in_width) {
  const TensorRef weight_t = shapes_.fp8_linear
                                 ? fp8_weight_operand(fp8, true, {out_width, in_width})
                                 : RankTraceBuilder::view(weight, {out_width, in_width});
  return mm(grad, weight_t, tokens, out_width, in_width);
}

void LayerEmitter::weight_gradient(const TensorRef& input, const TensorRef& grad,
                                   std::int64_t in_width, std::int64_t tokens,
                                   std::int64_t out_width, bool cast_input) {
  const DelayedWgradScope delayed(builder_, delay_wgrad_);
  TensorRef input_t = input;
  if (shapes_.fp8_linear) {
    // `input` is the FP8 transpose the forward's cast made and the layer saved (MlpSaved), or
    // the FP8 rows it saved, gathered again, which still need their transpose (priced as a
    // cast-transpose of them). Where no FP8 input was saved (the forward gathered it in bf16)
    // the transpose is read from the kept bf16 input's storage, or cast again after its
    // gather.
    input_t = cast_input ? cast_transpose(input, tokens, in_width)
                         : builder_.alias(input, {in_width, tokens}, DType::kFloat8);
  }
  mm(input_t, grad, in_width, tokens, out_width);
}

TensorRef LayerEmitter::dropout(const TensorRef& x) {
  if (!model_.dropout)
    return x;
  return elementwise("aten::native_dropout", {x}, x.shape, 2);
}

TensorRef LayerEmitter::dropout_backward(const TensorRef& grad) {
  if (!model_.dropout)
    return grad;
  TensorRef mask = builder_.tensor(grad.shape, DType::kBool);
  return elementwise("aten::native_dropout_backward", {grad, mask}, grad.shape, 1);
}

TensorRef LayerEmitter::tp_gather(const TensorRef& local) {
  if (tp_.size == 1 || !shapes_.sequence_parallel)
    return local;
  TensorRef full = hidden_full();
  builder_.communicate({CollectiveKind::kAllGather, tp_.name, tp_.size, -1, kTensorParallelStream},
                       local, full);
  return full;
}

TensorRef LayerEmitter::gather_linear_input(const TensorRef& local, Fp8Scaling scaling,
                                            TensorRef* saved_local) {
  if (!shapes_.fp8_linear || !shapes_.fp8_all_gather || !shapes_.sequence_parallel || tp_.size == 1)
    return tp_gather(local);
  const std::int64_t h = shapes_.hidden;
  const std::vector<std::int64_t> local_shape{shapes_.seq_local, shapes_.batch, h};
  // The backward's re-gather (kNone) sends the FP8 rows the forward's cast made and Transformer
  // Engine saved for it (LayerNormLinear / Linear keep the row-wise FP8 input when the backward
  // must gather it; `local` is then those saved rows, MlpSaved): no second cast.
  const TensorRef local_fp8 =
      scaling.amax == AmaxSource::kNone
          ? builder_.alias(local, local_shape, DType::kFloat8)
          : RankTraceBuilder::view(
                cast_transpose(local, shapes_.seq_local * shapes_.batch, h, {}, scaling),
                local_shape);
  if (saved_local && scaling.amax != AmaxSource::kNone)
    *saved_local = local_fp8;
  TensorRef full = builder_.tensor({shapes_.seq, shapes_.batch, h}, DType::kFloat8);
  builder_.communicate({CollectiveKind::kAllGather, tp_.name, tp_.size, -1, kTensorParallelStream},
                       local_fp8, full);
  return full;
}

TensorRef LayerEmitter::tp_reduce(const TensorRef& full) {
  if (tp_.size == 1)
    return full;
  const TensorRef shaped =
      RankTraceBuilder::view(full, {shapes_.seq, shapes_.batch, shapes_.hidden});
  if (!shapes_.sequence_parallel) {
    builder_.communicate(
        {CollectiveKind::kAllReduce, tp_.name, tp_.size, -1, kTensorParallelStream}, shaped,
        shaped);
    return shaped;
  }
  TensorRef local = hidden_local();
  builder_.communicate(
      {CollectiveKind::kReduceScatter, tp_.name, tp_.size, -1, kTensorParallelStream}, shaped,
      local);
  return local;
}

TensorRef LayerEmitter::exchange_chunk(const TensorRef& chunk) {
  builder_.communicate({CollectiveKind::kSend, "", 2, cp_.next_rank, kContextSendStream}, chunk,
                       chunk);
  TensorRef received = builder_.tensor(chunk.shape, chunk.dtype);
  builder_.communicate({CollectiveKind::kRecv, "", 2, cp_.previous_rank, kContextRecvStream},
                       received, received);
  return received;
}

void LayerEmitter::flash_attention(std::string op_name, std::vector<TensorRef> inputs,
                                   TensorRef output, bool causal, double flops) {
  builder_.compute(std::move(op_name), std::move(inputs), {std::move(output)},
                   KernelCategory::kGemm, flops);
  builder_.trace().ops.back().attributes.push_back({"is_causal", std::int64_t{causal ? 1 : 0}});
  // Sliding window: the keys each query attends to (the kernel computes the band).
  if (causal && windowed_layer())
    builder_.trace().ops.back().attributes.push_back(
        {"window_size", std::int64_t{model_.window_size}});
}

TensorRef LayerEmitter::qk_norm_forward(const TensorRef& qkv, std::int64_t heads,
                                        TensorRef& rsigma) {
  const std::int64_t b = shapes_.batch, s = shapes_.seq, d = shapes_.head_dim;
  const std::vector<std::int64_t> shape{b, heads, s, d};
  TensorRef normed = activation(shape);
  rsigma = builder_.tensor({b * heads * s}, DType::kFloat32);
  builder_.compute("aten::native_layer_norm", {RankTraceBuilder::view(qkv, shape)},
                   {normed, rsigma}, KernelCategory::kOther,
                   kNormFlops * static_cast<double>(normed.numel));
  return normed;
}

void LayerEmitter::qk_norm_backward(const TensorRef& grad_qkv, const TensorRef& saved_qkv,
                                    const TensorRef& rsigma, std::int64_t heads,
                                    std::int64_t offset_elements) {
  const std::int64_t b = shapes_.batch, s = shapes_.seq, d = shapes_.head_dim;
  const std::vector<std::int64_t> shape{b, heads, s, d};
  const TensorRef grad = builder_.alias(grad_qkv, shape, grad_qkv.dtype, offset_elements);
  const TensorRef grad_input = builder_.alias(grad_qkv, shape, grad_qkv.dtype, offset_elements);
  builder_.compute("aten::native_layer_norm_backward",
                   {grad, saved_operand(saved_qkv, shape), saved_operand(rsigma, rsigma.shape)},
                   {grad_input}, KernelCategory::kOther, 12.0 * static_cast<double>(grad.numel));
}

TensorRef LayerEmitter::ring_attention_forward(const TensorRef& qkv, const TensorRef& q,
                                               const TensorRef& own_k) {
  const std::int64_t b = shapes_.batch, s = shapes_.seq, d = shapes_.head_dim;
  const std::int64_t heads = shapes_.heads_local, kv_heads = shapes_.kv_heads_local;
  const TensorRef queries = RankTraceBuilder::view(q, {b, heads, s, d});
  // K and V of the local chunk travel together (read from the QKV output).
  TensorRef kv = saved_operand(qkv, {2, b, kv_heads, s, d});
  TensorRef context = activation({b, heads, s, d});
  const double half_work = 2.0 * b * heads * s * s * d;
  for (std::int64_t step = 0; step < cp_.size; ++step) {
    const bool exchanging = step + 1 < cp_.size;
    const TensorRef next = exchanging ? exchange_chunk(kv) : kv;
    const bool own_chunk = step == 0;
    // The local chunk's keys as the attention reads them (rotated with rope).
    const TensorRef k =
        RankTraceBuilder::view(own_chunk ? own_k : kv, {b, kv_heads, own_chunk ? s : s / 2, d});
    // Beside the next chunk's send and receive (NCCL p2p).
    ContentionScope beside(builder_, 0, exchanging ? cp_hbm_GBps(CollectiveKind::kSend) : 0);
    flash_attention("aten::_scaled_dot_product_flash_attention", {queries, k, k}, context,
                    own_chunk, half_work);
    kv = next;
  }
  return context;
}

TensorRef LayerEmitter::ring_attention_backward(const TensorRef& grad_context,
                                                const TensorRef& saved_qkv,
                                                const TensorRef& saved_q, const TensorRef& saved_k,
                                                const TensorRef& output) {
  const std::int64_t b = shapes_.batch, s = shapes_.seq, d = shapes_.head_dim;
  const std::int64_t heads = shapes_.heads_local, kv_heads = shapes_.kv_heads_local;
  const TensorRef q = saved_operand(saved_q, {b, heads, s, d});
  const TensorRef own_k = saved_operand(saved_k, {b, kv_heads, s, d});
  const TensorRef own_v = saved_operand(saved_qkv, {b, kv_heads, s, d});
  // K, V and their gradients travel together.
  TensorRef kv_and_grad = activation({4, b, kv_heads, s, d});
  TensorRef grad_qkv = activation({shapes_.tokens(), shapes_.qkv_width});
  const double half_work = 5.0 * b * heads * s * s * d;
  for (std::int64_t step = 0; step < cp_.size; ++step) {
    const bool exchanging = step + 1 < cp_.size;
    const TensorRef next = exchanging ? exchange_chunk(kv_and_grad) : kv_and_grad;
    const bool own_chunk = step == 0;
    // The local chunk's K and V as the forward saved them, a received chunk from the ring.
    const TensorRef kv = RankTraceBuilder::view(kv_and_grad, {b, kv_heads, s / 2, d});
    ContentionScope beside(builder_, 0, exchanging ? cp_hbm_GBps(CollectiveKind::kSend) : 0);
    flash_attention(
        "aten::_scaled_dot_product_flash_attention_backward",
        {RankTraceBuilder::view(grad_context, {b, heads, s, d}), q, own_chunk ? own_k : kv,
         own_chunk ? own_v : kv, saved_operand(output, {b, heads, s, d})},
        grad_qkv, own_chunk, half_work);
    kv_and_grad = next;
  }
  return grad_qkv;
}

LayerEmitter::AttentionSaved LayerEmitter::attention_core_forward(const TensorRef& qkv,
                                                                  const TensorRef& rotated_q,
                                                                  const TensorRef& rotated_k) {
  const std::int64_t b = shapes_.batch, s = shapes_.seq, d = shapes_.head_dim;
  const std::int64_t heads = shapes_.heads_local;
  const TensorRef& q = rotated_q.tensor_id >= 0 ? rotated_q : qkv;
  const TensorRef& k = rotated_k.tensor_id >= 0 ? rotated_k : qkv;
  if (cp_.size > 1)
    return {ring_attention_forward(qkv, q, k), {}, {}};
  if (model_.attention == AttentionKernel::kFlash) {
    // Decoder-only: causal, the masked half skipped.
    TensorRef context = activation({b, heads, s, d});
    flash_attention("aten::_scaled_dot_product_flash_attention",
                    {RankTraceBuilder::view(q, {b, heads, s, d}),
                     RankTraceBuilder::view(k, {b, shapes_.kv_heads_local, s, d}),
                     RankTraceBuilder::view(qkv, {b, shapes_.kv_heads_local, s, d})},
                    context, true, 2.0 * b * heads * s * s * d);
    return {context, {}, {}};
  }
  // Unfused (Megatron 2022): scores, fused scale-mask-softmax, dropout, context.
  const std::int64_t bh = b * heads;
  TensorRef scores = bmm(q, k, bh, s, d, s);
  const ScaleMaskSoftmax softmax = scale_mask_softmax(scores, bh, s);
  TensorRef dropped =
      model_.dropout ? elementwise("aten::native_dropout", {softmax.probabilities}, {bh, s, s}, 2)
                     : softmax.probabilities;
  return {bmm(dropped, qkv, bh, s, s, d), softmax.saved, dropped};
}

TensorRef LayerEmitter::cast(const TensorRef& x, DType to) {
  TensorRef out = builder_.tensor(x.shape, to);
  builder_.compute("aten::copy_", {out, x}, {out}, KernelCategory::kMemory, 0);
  return out;
}

LayerEmitter::ScaleMaskSoftmax LayerEmitter::scale_mask_softmax(const TensorRef& scores,
                                                                std::int64_t bh, std::int64_t s) {
  const std::vector<std::int64_t> shape{bh, s, s};
  if (megatron_fused_causal_softmax_available(bh, s)) {
    TensorRef probabilities = elementwise("aten::_softmax", {scores}, shape, 5);
    return {probabilities, probabilities};
  }
  const TensorRef scores32 = cast(RankTraceBuilder::view(scores, shape), DType::kFloat32);
  const TensorRef scaled = elementwise("aten::mul", {scores32}, shape, 1, DType::kFloat32);
  const TensorRef causal_mask = builder_.tensor({s, s}, DType::kBool);
  // In place on `scaled` (attention_mask_func's masked_fill_).
  builder_.compute("aten::masked_fill_", {scaled, causal_mask}, {scaled}, KernelCategory::kOther,
                   static_cast<double>(scaled.numel));
  const TensorRef probabilities32 =
      elementwise("aten::_softmax", {scaled}, shape, 5, DType::kFloat32);
  return {cast(probabilities32, shapes_.dtype), probabilities32};
}

TensorRef LayerEmitter::scale_mask_softmax_backward(const TensorRef& grad_probabilities,
                                                    const TensorRef& saved, std::int64_t bh,
                                                    std::int64_t s) {
  const std::vector<std::int64_t> shape{bh, s, s};
  if (megatron_fused_causal_softmax_available(bh, s))
    return elementwise("aten::_softmax_backward_data", {grad_probabilities, saved}, shape, 3);
  const TensorRef grad32 = cast(grad_probabilities, DType::kFloat32);
  const TensorRef grad_scaled =
      elementwise("aten::_softmax_backward_data", {grad32, saved}, shape, 3, DType::kFloat32);
  // MaskedFillBackward0 (masked_fill out of place: PyTorch clones, then fills; priced as one
  // pass) and MulBackward0 (the scale).
  const TensorRef causal_mask = builder_.tensor({s, s}, DType::kBool);
  const TensorRef grad_masked =
      elementwise("aten::masked_fill_", {grad_scaled, causal_mask}, shape, 1, DType::kFloat32);
  const TensorRef grad_scores = elementwise("aten::mul", {grad_masked}, shape, 1, DType::kFloat32);
  return cast(grad_scores, shapes_.dtype);
}

TensorRef LayerEmitter::attention_core_backward(const TensorRef& grad_context,
                                                const ForwardSaved& saved) {
  const std::int64_t b = shapes_.batch, s = shapes_.seq, d = shapes_.head_dim;
  const std::int64_t heads = shapes_.heads_local;
  // Q and K as the attention read them: rotated (rope) or views of the QKV output.
  const TensorRef& saved_q = saved.rotated_q.tensor_id >= 0 ? saved.rotated_q : saved.qkv;
  const TensorRef& saved_k = saved.rotated_k.tensor_id >= 0 ? saved.rotated_k : saved.qkv;
  // The fused backward reads the forward's output O besides Q, K and V (flash attention's
  // backward recomputes the scores from them and the saved log-sum-exp, and needs O for
  // rowsum(dO * O)); the kernel model prices it from Q, K and V (op_kernel_registry.cpp).
  if (cp_.size > 1)
    return ring_attention_backward(grad_context, saved.qkv, saved_q, saved_k, saved.context);
  if (model_.attention == AttentionKernel::kFlash) {
    TensorRef grad_qkv = activation({shapes_.tokens(), shapes_.qkv_width});
    const TensorRef q = saved_operand(saved_q, {b, heads, s, d});
    const TensorRef k = saved_operand(saved_k, {b, shapes_.kv_heads_local, s, d});
    const TensorRef v = saved_operand(saved.qkv, {b, shapes_.kv_heads_local, s, d});
    flash_attention("aten::_scaled_dot_product_flash_attention_backward",
                    {RankTraceBuilder::view(grad_context, {b, heads, s, d}), q, k, v,
                     saved_operand(saved.context, {b, heads, s, d})},
                    grad_qkv, true, 5.0 * b * heads * s * s * d);
    return grad_qkv;
  }
  AttentionSaved attention{saved.context, saved.probabilities, saved.dropped};
  if (recomputes(&RecomputeModules::core_attn)) {
    // Korthikanti et al. Sec. 5: recompute only the attention core (QK^T, softmax, dropout,
    // attention over V) from the stored Q, K, V.
    builder_.set_phase("recompute");
    const std::vector<std::int64_t> qkv_shape{shapes_.tokens(), shapes_.qkv_width};
    attention = attention_core_forward(
        saved_operand(saved.qkv, qkv_shape),
        saved.rotated_q.tensor_id >= 0 ? saved_operand(saved.rotated_q, saved.rotated_q.shape)
                                       : TensorRef{},
        saved.rotated_k.tensor_id >= 0 ? saved_operand(saved.rotated_k, saved.rotated_k.shape)
                                       : TensorRef{});
    builder_.set_phase("backward");
  }
  const std::int64_t bh = b * heads;
  const TensorRef values = saved_operand(saved.qkv, {bh, s, d});
  TensorRef grad_probabilities = bmm(grad_context, values, bh, s, d, s);
  bmm(saved_operand(attention.dropped, {bh, s, s}), grad_context, bh, s, s, d);  // grad V
  const TensorRef probabilities = saved_operand(attention.probabilities, {bh, s, s});
  TensorRef grad_dropped = grad_probabilities;
  if (model_.dropout) {
    TensorRef mask = builder_.tensor({bh, s, s}, DType::kBool);
    grad_dropped =
        elementwise("aten::native_dropout_backward", {grad_probabilities, mask}, {bh, s, s}, 1);
  }
  TensorRef grad_scores = scale_mask_softmax_backward(grad_dropped, probabilities, bh, s);
  bmm(grad_scores, saved_operand(saved_k, {bh, s, d}), bh, s, s, d);  // grad Q = dS K
  bmm(grad_scores, saved_operand(saved_q, {bh, s, d}), bh, s, s, d);  // grad K = dS^T Q
  return activation({shapes_.tokens(), shapes_.qkv_width});
}

ForwardSaved LayerEmitter::run_forward(const TensorRef& x, const LayerWeights& weights) {
  const std::int64_t tokens = shapes_.tokens(), h = shapes_.hidden;
  ForwardSaved saved;
  saved.x = x;
  saved.ln1 = elementwise("aten::native_layer_norm", {x}, x.shape, kNormFlops);
  if (weights.mla) {
    saved.context = mla_attention_forward(saved.ln1, weights, saved.mla);
  } else {
    // FP8: the QKV input saved in FP8 (MlpSaved), the FP8 local rows when the backward gathers
    // them again, else the cast's transpose.
    saved.qkv =
        userbuffers()
            ? ring_exchange_forward(saved.ln1, weights.qkv, weights.qkv_fp8, shapes_.qkv_width,
                                    &saved.qkv_input_fp8)
            : linear_forward(
                  gather_linear_input(saved.ln1, kAmaxNormTpReduced, &saved.qkv_input_fp8),
                  weights.qkv, weights.qkv_fp8, tokens, h, shapes_.qkv_width, kAmaxNormTpReduced,
                  backward_gathers_input() ? nullptr : &saved.qkv_input_fp8);
    // Q and K on their way to the attention: normed (QK layer norm), then rotated (rope).
    TensorRef q = saved.qkv, k = saved.qkv;
    if (model_.qk_layernorm) {
      q = qk_norm_forward(saved.qkv, shapes_.heads_local, saved.q_norm_rsigma);
      k = qk_norm_forward(saved.qkv, shapes_.kv_heads_local, saved.k_norm_rsigma);
      saved.rotated_q = q;
      saved.rotated_k = k;
    }
    if (model_.rope()) {
      saved.rotated_q = rope_forward(q, shapes_.heads_local, shapes_.head_dim);
      saved.rotated_k = rope_forward(k, shapes_.kv_heads_local, shapes_.head_dim);
    }
    const AttentionSaved attention =
        attention_core_forward(saved.qkv, saved.rotated_q, saved.rotated_k);
    saved.context = attention.context;
    saved.probabilities = attention.probabilities;
    saved.dropped = attention.dropped;
  }
  const std::int64_t context_width = shapes_.context_width();
  // FP8: the projection saves the cast's transpose of the context; the fused attention keeps
  // the bf16 context too (its backward reads O).
  TensorRef attention_out = dropout(
      userbuffers()
          ? pipelined_reduce_scatter_forward(saved.context, weights.proj, weights.proj_fp8,
                                             context_width, &saved.proj_input_fp8)
          : tp_reduce(linear_forward(saved.context, weights.proj, weights.proj_fp8, tokens,
                                     context_width, h, kAmaxKernel, &saved.proj_input_fp8)));
  saved.x1 = elementwise("aten::add", {x, attention_out}, x.shape, 1);
  saved.ln2 = elementwise("aten::native_layer_norm", {saved.x1}, x.shape, kNormFlops);
  TensorRef mlp_out;
  if (weights.moe) {
    mlp_out = dropout(moe_forward(saved.ln2, weights, saved.moe));
  } else {
    mlp_out = dropout(dense_mlp_forward(saved.ln2, weights, saved.mlp));
  }
  saved.output = elementwise("aten::add", {saved.x1, mlp_out}, x.shape, 1);
  return saved;
}

TensorRef LayerEmitter::dense_mlp_forward(const TensorRef& normed, const LayerWeights& weights,
                                          MlpSaved& saved) {
  const bool ub = userbuffers();
  const TensorRef fc1_input =
      ub ? normed : gather_linear_input(normed, kAmaxNormTpReduced, &saved.fc1_input_fp8);
  mlp_forward(fc1_input, weights, shapes_.ffn_local, shapes_.fc1_width, kAmaxNormTpReduced, ub,
              saved);
  return ub ? saved.output : tp_reduce(saved.output);
}

void LayerEmitter::mlp_forward(const TensorRef& normed_full, const LayerWeights& weights,
                               std::int64_t ffn_local, std::int64_t fc1_width,
                               Fp8Scaling fc1_scaling, bool userbuffers, MlpSaved& saved) {
  mlp_fc1_forward(normed_full, weights, ffn_local, fc1_width, fc1_scaling, userbuffers, saved);
  mlp_fc2_forward(weights, ffn_local, userbuffers, saved);
}

void LayerEmitter::mlp_fc1_forward(const TensorRef& normed_full, const LayerWeights& weights,
                                   std::int64_t ffn_local, std::int64_t fc1_width,
                                   Fp8Scaling fc1_scaling, bool userbuffers, MlpSaved& saved) {
  const std::int64_t tokens = shapes_.tokens(), h = shapes_.hidden;
  // FP8: the input FC1 saves (MlpSaved); a gathered one's FP8 local rows are set by the caller,
  // which gathered them (backward_gathers_input(): FC1 saves nothing itself then).
  saved.fc1 =
      userbuffers
          ? ring_exchange_forward(normed_full, weights.fc1, weights.fc1_fp8, fc1_width,
                                  &saved.fc1_input_fp8)
          : linear_forward(normed_full, weights.fc1, weights.fc1_fp8, tokens, h, fc1_width,
                           fc1_scaling, backward_gathers_input() ? nullptr : &saved.fc1_input_fp8);
  saved.act = ffn_activation(saved.fc1, tokens, ffn_local);
}

void LayerEmitter::mlp_fc2_forward(const LayerWeights& weights, std::int64_t ffn_local,
                                   bool userbuffers, MlpSaved& saved) {
  const std::int64_t tokens = shapes_.tokens(), h = shapes_.hidden;
  saved.output = userbuffers
                     ? pipelined_reduce_scatter_forward(saved.act, weights.fc2, weights.fc2_fp8,
                                                        ffn_local, &saved.fc2_input_fp8)
                     : linear_forward(saved.act, weights.fc2, weights.fc2_fp8, tokens, ffn_local, h,
                                      kAmaxKernel, &saved.fc2_input_fp8);
}

TensorRef LayerEmitter::mlp_backward(const TensorRef& grad_mlp, const LayerWeights& weights,
                                     const MlpSaved& saved, std::int64_t ffn_local,
                                     bool userbuffers) {
  const std::int64_t tokens = shapes_.tokens(), h = shapes_.hidden;
  TensorRef grad_full = grad_mlp;
  TensorRef grad_act =
      userbuffers ? ring_exchange_data_gradient(grad_mlp, weights.fc2, weights.fc2_fp8, ffn_local,
                                                grad_full)
                  : data_gradient(grad_mlp, weights.fc2, weights.fc2_fp8, tokens, h, ffn_local);
  const std::vector<std::int64_t> ffn_shape{tokens, ffn_local};
  // FP8: FC2's saved input is the FP8 transpose of the activation's output, whose bf16 copy
  // the activation's backward does not read (it reads its input, FC1's output).
  const TensorRef act =
      saved_wgrad_operand(saved.fc2_input_fp8, {ffn_local, tokens}, saved.act, ffn_shape);
  weight_gradient(act, grad_full, ffn_local, tokens, h, false);  // grad W2 = act^T dY
  return ffn_activation_backward(grad_act, saved.fc1, tokens, ffn_local);
}

TensorRef LayerEmitter::ffn_activation(const TensorRef& fc1, std::int64_t rows, std::int64_t ffn) {
  if (shapes_.gated_ffn)
    return swiglu_forward(fc1, rows, ffn);
  return elementwise("aten::gelu", {fc1}, {rows, ffn}, kActivationFlops);
}

TensorRef LayerEmitter::ffn_activation_backward(const TensorRef& grad_act,
                                                const TensorRef& saved_fc1, std::int64_t rows,
                                                std::int64_t ffn) {
  if (shapes_.gated_ffn)
    return swiglu_backward(grad_act, saved_fc1, rows, ffn);
  // The GeLU's gradient needs its input, FC1's output.
  const std::vector<std::int64_t> ffn_shape{rows, ffn};
  return elementwise("aten::gelu_backward", {grad_act, saved_operand(saved_fc1, ffn_shape)},
                     ffn_shape, 12);
}

TensorRef LayerEmitter::swiglu_forward(const TensorRef& fc1, std::int64_t rows, std::int64_t ffn) {
  const std::vector<std::int64_t> ffn_shape{rows, ffn};
  const TensorRef gate = RankTraceBuilder::view(fc1, ffn_shape);
  const TensorRef up = RankTraceBuilder::view(fc1, ffn_shape);
  if (model_.bias_swiglu_fusion)  // silu(gate) x up in one pass: sigmoid, two multiplies
    return elementwise("megatron::bias_swiglu", {gate, up}, ffn_shape, 6);
  // The unfused path as x * sigmoid(x) * up: the kernel registry's sigmoid and mul rules.
  const TensorRef sigmoid = elementwise("aten::sigmoid", {gate}, ffn_shape, 4);
  const TensorRef silu = elementwise("aten::mul", {gate, sigmoid}, ffn_shape, 1);
  return elementwise("aten::mul", {silu, up}, ffn_shape, 1);
}

TensorRef LayerEmitter::swiglu_backward(const TensorRef& grad_act, const TensorRef& saved_fc1,
                                        std::int64_t rows, std::int64_t ffn) {
  const std::vector<std::int64_t> ffn_shape{rows, ffn};
  if (model_.bias_swiglu_fusion) {
    // Megatron's swiglu_back: reads the gradient and both halves of the saved input, writes
    // the gradients of gate and up side by side (the cat fused in).
    return elementwise("megatron::bias_swiglu_backward",
                       {grad_act, saved_operand(saved_fc1, {rows, 2 * ffn})}, {rows, 2 * ffn}, 5);
  }
  const TensorRef up = saved_operand(saved_fc1, ffn_shape);
  elementwise("aten::mul", {grad_act, up}, ffn_shape, 1);  // grad of the up projection
  const TensorRef grad_silu = elementwise("aten::mul", {grad_act, up}, ffn_shape, 1);
  elementwise("aten::sigmoid_backward", {grad_silu, up}, ffn_shape, 3);
  return builder_.tensor({rows, 2 * ffn});
}

TensorRef LayerEmitter::rope_forward(const TensorRef& qkv, std::int64_t heads, std::int64_t d) {
  const std::int64_t b = shapes_.batch, s = shapes_.seq;
  const std::vector<std::int64_t> shape{b, heads, s, d};
  const TensorRef t = RankTraceBuilder::view(qkv, shape);
  if (model_.rope_fusion) {
    // Reads t and the fp32 frequencies, writes the rotated copy: two multiplies and an add.
    const TensorRef frequencies = builder_.tensor({s, 1, 1, d}, DType::kFloat32);
    return elementwise("te::fused_rope", {t, frequencies}, shape, 3);
  }
  const std::vector<std::int64_t> half{b, heads, s, d / 2};
  const TensorRef cos = builder_.tensor({s, 1, 1, d});  // cached, cast to t's dtype
  const TensorRef sin = builder_.tensor({s, 1, 1, d});
  const TensorRef negated = elementwise("aten::neg", {RankTraceBuilder::view(t, half)}, half, 1);
  const TensorRef rotated_half = activation(shape);
  builder_.compute("aten::cat", {negated, RankTraceBuilder::view(t, half)}, {rotated_half},
                   KernelCategory::kMemory, 0);
  const TensorRef by_cos = elementwise("aten::mul", {t, cos}, shape, 1);
  const TensorRef by_sin = elementwise("aten::mul", {rotated_half, sin}, shape, 1);
  const TensorRef sum = elementwise("aten::add", {by_cos, by_sin}, shape, 1);
  // torch.cat((t, t_pass)) with the whole head rotated: a copy.
  const TensorRef rotated = activation(shape);
  builder_.compute("aten::cat", {sum}, {rotated}, KernelCategory::kMemory, 0);
  return rotated;
}

void LayerEmitter::rope_backward(const TensorRef& grad_qkv, std::int64_t heads, std::int64_t d,
                                 std::int64_t offset_elements) {
  const std::int64_t b = shapes_.batch, s = shapes_.seq;
  const std::vector<std::int64_t> shape{b, heads, s, d};
  const TensorRef grad = builder_.alias(grad_qkv, shape, grad_qkv.dtype, offset_elements);
  // The result lands where the gradient was (the attention's QKV gradient buffer): the
  // gradient of the unrotated q or k, as the QKV split's backward reads it.
  const TensorRef grad_input = builder_.alias(grad_qkv, shape, grad_qkv.dtype, offset_elements);
  if (model_.rope_fusion) {
    const TensorRef frequencies = builder_.tensor({s, 1, 1, d}, DType::kFloat32);
    builder_.compute("te::fused_rope_backward", {grad, frequencies}, {grad_input},
                     KernelCategory::kOther, 3.0 * static_cast<double>(grad.numel));
    return;
  }
  const std::vector<std::int64_t> half{b, heads, s, d / 2};
  const TensorRef cos = builder_.tensor({s, 1, 1, d});
  const TensorRef sin = builder_.tensor({s, 1, 1, d});
  const TensorRef grad_by_cos = elementwise("aten::mul", {grad, cos}, shape, 1);
  const TensorRef grad_rotated = elementwise("aten::mul", {grad, sin}, shape, 1);
  // rotate_half's backward: the cat's slices are views, the neg a pass over one half, the
  // chunk's backward a cat of the halves.
  const TensorRef grad_negated =
      elementwise("aten::neg", {RankTraceBuilder::view(grad_rotated, half)}, half, 1);
  const TensorRef grad_halves = activation(shape);
  builder_.compute("aten::cat", {grad_negated, RankTraceBuilder::view(grad_rotated, half)},
                   {grad_halves}, KernelCategory::kMemory, 0);
  builder_.compute("aten::add", {grad_by_cos, grad_halves}, {grad_input}, KernelCategory::kOther,
                   static_cast<double>(grad.numel));
}

ForwardSaved LayerEmitter::forward(const TensorRef& x, const LayerWeights& weights) {
  if (recompute_ == Recompute::kFull) {
    // Only the layer input is checkpointed: the rest is made again in the backward.
    ForwardSaved kept;
    kept.x = x;
    kept.output = run_forward(x, weights).output;
    return kept;
  }
  return run_forward(x, weights);
}

TensorRef LayerEmitter::norm_input_backward(const TensorRef& grad_output, const TensorRef& weight,
                                            const Fp8Copy& fp8, std::int64_t width,
                                            const TensorRef& norm_input, const TensorRef& normed,
                                            const TensorRef& saved_input_fp8) {
  const std::int64_t tokens = shapes_.tokens(), h = shapes_.hidden;
  const std::vector<std::int64_t> local_shape{shapes_.seq_local, shapes_.batch, h};
  auto norm_backward = [&](const TensorRef& grad_normed) {
    return elementwise(
        "aten::native_layer_norm_backward",
        {RankTraceBuilder::view(grad_normed, local_shape), saved_operand(norm_input, local_shape)},
        local_shape, 12);
  };
  const TensorRef grad = backward_operand(grad_output, tokens, width);
  const bool gathers = backward_gathers_input();
  // The weight gradient's input: the layer's saved FP8 input (its local rows gathered again,
  // or the cast's transpose), else the norm's kept bf16 output (gathered again with SP). The
  // norm's own backward reads its input, not its output.
  auto wgrad_input = [&]() {
    if (saved_input_fp8.tensor_id < 0)
      return gather_linear_input(saved_operand(normed, local_shape));
    return gathers ? gather_linear_input(saved_operand(saved_input_fp8, local_shape))
                   : saved_operand(saved_input_fp8, saved_input_fp8.shape);
  };
  if ((overlap_.backward || userbuffers()) && tp_.size > 1) {
    // Megatron: the SP all-gather of the input runs under the data-gradient GEMM, the
    // reduction of the data gradient under the weight-gradient GEMM; each GEMM shares the
    // GPU with the NCCL kernel beside it. Userbuffers (TE "bulk" qkv/fc1_dgrad and _wgrad) do
    // the same with a userbuffer kernel of kUserbufferBulkCommSms SMs.
    const int comm_sms = userbuffers() ? kUserbufferBulkCommSms : overlap_.comm_sms;
    const kernels::CommDataPath path =
        userbuffers() ? kernels::CommDataPath::kPeerDirect : kernels::CommDataPath::kNcclStaged;
    const CollectiveKind reduction =
        gathers ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce;
    TensorRef input_full = wgrad_input();
    TensorRef grad_input_partial;
    {
      ContentionScope beside(builder_, gathers ? comm_sms : 0,
                             gathers ? tp_hbm_GBps(CollectiveKind::kAllGather, path) : 0);
      grad_input_partial = data_gradient(grad, weight, fp8, tokens, width, h);
    }
    TensorRef grad_input = tp_reduce(grad_input_partial);
    {
      ContentionScope beside(builder_, comm_sms, tp_hbm_GBps(reduction, path));
      weight_gradient(input_full, grad, h, tokens, width, gathers);
    }
    return norm_backward(grad_input);
  }
  // Each collective ends before the next GEMM starts.
  TensorRef grad_input = tp_reduce(data_gradient(grad, weight, fp8, tokens, width, h));
  TensorRef grad_norm_input = norm_backward(grad_input);
  weight_gradient(wgrad_input(), grad, h, tokens, width, gathers);
  return grad_norm_input;
}

TensorRef LayerEmitter::backward(const TensorRef& grad_output, const LayerWeights& weights,
                                 const ForwardSaved& kept) {
  const std::int64_t tokens = shapes_.tokens(), h = shapes_.hidden;
  const std::int64_t context_width = shapes_.context_width();
  const std::vector<std::int64_t> local_shape{shapes_.seq_local, shapes_.batch, h};
  ForwardSaved saved = kept;
  if (recompute_ == Recompute::kFull) {
    // The layer input was checkpointed; its forward runs again, collectives included.
    builder_.set_phase("recompute");
    saved = run_forward(saved_operand(kept.x, local_shape), weights);
    builder_.set_phase("backward");
  }
  // MLP block.
  TensorRef grad_x1_norm;
  if (weights.moe) {
    const TensorRef grad_moe_output = dropout_backward(grad_output);
    if (recomputes(&RecomputeModules::layernorm)) {
      // The pre-MLP norm (a TENorm of its own in a MoE layer) again from the kept x1, as the
      // MoE block's output gradient arrives (CheckpointWithoutOutput's gradient hook).
      builder_.set_phase("recompute");
      saved.ln2 = elementwise("aten::native_layer_norm", {saved_operand(kept.x1, local_shape)},
                              local_shape, kNormFlops);
      builder_.set_phase("backward");
    }
    if (recomputes(&RecomputeModules::moe)) {
      // The block was a normal checkpoint on its input (the pre-MLP norm's output): router,
      // dispatch, experts and combine run again, all-to-alls and host wait included.
      builder_.set_phase("recompute");
      saved.moe = MoeSaved{};
      moe_forward(saved.ln2, weights, saved.moe);
      builder_.set_phase("backward");
    }
    grad_x1_norm = moe_backward(grad_moe_output, weights, saved);
  } else {
    const bool ub = userbuffers();
    if (recomputes(&RecomputeModules::mlp)) {
      // The MLP was a normal checkpoint: its forward kept only its input (x1, which the norm's
      // backward reads anyway). The whole forward runs again as its output's gradient arrives:
      // the norm (fused into FC1 in Transformer Engine's layer), the SP all-gather, both GEMMs
      // with their FP8 casts and FC2's reduction, whose output nothing reads.
      builder_.set_phase("recompute");
      saved.ln2 = elementwise("aten::native_layer_norm", {saved_operand(kept.x1, local_shape)},
                              local_shape, kNormFlops);
      saved.mlp = MlpSaved{};
      dense_mlp_forward(saved.ln2, weights, saved.mlp);
      builder_.set_phase("backward");
    }
    TensorRef grad_mlp =
        ub ? dropout_backward(grad_output)
           : backward_operand(tp_gather(dropout_backward(grad_output)), tokens, h, true);
    TensorRef grad_fc1 = mlp_backward(grad_mlp, weights, saved.mlp, shapes_.ffn_local, ub);
    grad_x1_norm = norm_input_backward(grad_fc1, weights.fc1, weights.fc1_fp8, shapes_.fc1_width,
                                       saved.x1, saved.ln2, saved.mlp.fc1_input_fp8);
  }
  TensorRef grad_x1 = elementwise("aten::add", {grad_output, grad_x1_norm}, local_shape, 1);
  // Attention block.
  const TensorRef grad_attention_output = dropout_backward(grad_x1);
  if (weights.mla && recomputes(&RecomputeModules::layernorm)) {
    // MLA's input norm (a TENorm of its own) again from the kept x, as the gradient of
    // linear_proj's output arrives.
    builder_.set_phase("recompute");
    saved.ln1 = elementwise("aten::native_layer_norm", {saved_operand(kept.x, local_shape)},
                            local_shape, kNormFlops);
    builder_.set_phase("backward");
  }
  TensorRef grad_attention, grad_context;
  if (userbuffers()) {
    grad_context = ring_exchange_data_gradient(grad_attention_output, weights.proj,
                                               weights.proj_fp8, context_width, grad_attention);
  } else {
    grad_attention = backward_operand(tp_gather(grad_attention_output), tokens, h, true);
    grad_context =
        data_gradient(grad_attention, weights.proj, weights.proj_fp8, tokens, h, context_width);
  }
  const TensorRef context = saved_wgrad_operand(saved.proj_input_fp8, {context_width, tokens},
                                                saved.context, {tokens, context_width});
  weight_gradient(context, grad_attention, context_width, tokens, h, false);  // grad Wo
  if (weights.mla) {
    const TensorRef grad_x_norm = mla_attention_backward(grad_context, weights, saved);
    return elementwise("aten::add", {grad_x1, grad_x_norm}, local_shape, 1);
  }
  TensorRef grad_qkv = attention_core_backward(grad_context, saved);
  if (model_.rope()) {
    rope_backward(grad_qkv, shapes_.heads_local, shapes_.head_dim, 0);
    rope_backward(grad_qkv, shapes_.kv_heads_local, shapes_.head_dim, tokens * context_width);
  }
  if (model_.qk_layernorm) {
    qk_norm_backward(grad_qkv, saved.qkv, saved.q_norm_rsigma, shapes_.heads_local, 0);
    qk_norm_backward(grad_qkv, saved.qkv, saved.k_norm_rsigma, shapes_.kv_heads_local,
                     tokens * context_width);
  }
  TensorRef grad_x_norm =
      norm_input_backward(grad_qkv, weights.qkv, weights.qkv_fp8, shapes_.qkv_width, saved.x,
                          saved.ln1, saved.qkv_input_fp8);
  return elementwise("aten::add", {grad_x1, grad_x_norm}, local_shape, 1);
}

TensorRef LayerEmitter::embedding_forward(const TensorRef& embedding_weight) {
  const TensorRef token_ids = builder_.tensor({shapes_.seq, shapes_.batch}, DType::kInt64);
  TensorRef embedded = hidden_full();
  builder_.compute("aten::embedding", {embedding_weight, token_ids}, {embedded},
                   KernelCategory::kEmbeddingLookup, 0);
  return RankTraceBuilder::view(tp_reduce(embedded),
                                {shapes_.seq_local, shapes_.batch, shapes_.hidden});
}

void LayerEmitter::embedding_backward(const TensorRef& grad_output,
                                      const TensorRef& embedding_weight) {
  TensorRef grad_full = tp_gather(grad_output);
  const TensorRef token_ids = builder_.tensor({shapes_.seq, shapes_.batch}, DType::kInt64);
  builder_.compute(
      "aten::embedding_dense_backward",
      {RankTraceBuilder::view(grad_full, {shapes_.seq, shapes_.batch, shapes_.hidden}), token_ids},
      {builder_.tensor(embedding_weight.shape)}, KernelCategory::kEmbeddingLookup, 0);
}

// Megatron's vocabulary-parallel cross entropy, pass by pass over the [tokens, V/TP] logits:
// the cast to fp32, the row max, subtracting it, exp, the row sum and the division that leaves
// the softmax for the backward, with one TP all-reduce each for the max, the target logit and
// the sum. Backward: scale the saved softmax by the loss gradient and cast back. Each pass is
// memory-bound; at a vocabulary of 50k-250k they cost as much as several transformer layers.
// The fused variant (model.cross_entropy_fusion) has the same backward.
HeadSaved LayerEmitter::head_forward(const TensorRef& x, const TensorRef& head_weight) {
  const std::int64_t tokens = shapes_.tokens(), h = shapes_.hidden, v = shapes_.vocab_local;
  HeadSaved saved;
  saved.x = x;
  TensorRef normed = elementwise("aten::native_layer_norm", {x}, x.shape, kNormFlops);
  saved.normed = normed;
  TensorRef logits = mm(tp_gather(normed), head_weight, tokens, h, v);
  // The loss: its own phase, so the report can show it as a line of its own.
  builder_.set_phase("loss");
  auto all_reduce_over_tp = [&](const TensorRef& per_token) {
    if (tp_.size > 1)
      builder_.communicate(
          {CollectiveKind::kAllReduce, tp_.name, tp_.size, -1, kTensorParallelStream}, per_token,
          per_token);
  };
  const double elements = static_cast<double>(tokens) * static_cast<double>(v);
  if (model_.cross_entropy_fusion == CrossEntropyFusion::kTe) {
    // Transformer Engine's parallel_cross_entropy: an online-softmax pass gives each token's max
    // and exp-sum (and its target logit where this rank holds it); the three per-token numbers
    // are all-gathered over TP; a second pass writes the loss and, in place of the logits, the
    // bf16 gradient softmax - onehot, which the backward only scales.
    const TensorRef stats = builder_.tensor({3 * tokens}, DType::kFloat32);
    builder_.compute("te::cross_entropy_online_softmax", {logits}, {stats}, KernelCategory::kOther,
                     3 * elements);
    TensorRef all_stats = stats;
    if (tp_.size > 1) {
      all_stats = builder_.tensor({3 * tokens * tp_.size}, DType::kFloat32);
      builder_.communicate(
          {CollectiveKind::kAllGather, tp_.name, tp_.size, -1, kTensorParallelStream}, stats,
          all_stats);
    }
    saved.softmax = builder_.tensor({tokens, v});
    const TensorRef loss = builder_.tensor({tokens}, DType::kFloat32);
    builder_.compute("te::cross_entropy_loss_grad", {logits, all_stats}, {saved.softmax, loss},
                     KernelCategory::kOther, 3 * elements);
    builder_.set_phase("forward");
    return saved;
  }
  if (model_.cross_entropy_fusion == CrossEntropyFusion::kNative) {
    // Megatron-Core's fused_vocab_parallel_cross_entropy (native): calculate_logits_max casts
    // to fp32 and takes the row max in one fused kernel; calculate_predicted_logits subtracts
    // the max, gathers the target logit, exponentiates and sums the row in one pass; the target
    // logits and the sums travel in one all-reduce (torch.cat); calculate_cross_entropy_loss
    // divides by the sum, leaving the softmax for the backward.
    const TensorRef logits32 = builder_.tensor({tokens, v}, DType::kFloat32);
    const TensorRef row_max = builder_.tensor({tokens}, DType::kFloat32);
    builder_.compute("megatron::fused_ce_logits_max", {logits}, {logits32, row_max},
                     KernelCategory::kOther, elements);
    all_reduce_over_tp(row_max);
    const TensorRef exps = builder_.tensor({tokens, v}, DType::kFloat32);
    const TensorRef target_and_sum = builder_.tensor({2 * tokens}, DType::kFloat32);
    builder_.compute("megatron::fused_ce_predicted_logits", {logits32, row_max},
                     {exps, target_and_sum}, KernelCategory::kOther, 3 * elements);
    all_reduce_over_tp(target_and_sum);
    saved.softmax = builder_.tensor({tokens, v}, DType::kFloat32);
    builder_.compute("megatron::fused_ce_loss", {exps, target_and_sum}, {saved.softmax},
                     KernelCategory::kOther, elements);
    builder_.set_phase("forward");
    return saved;
  }
  const TensorRef logits32 = builder_.tensor({tokens, v}, DType::kFloat32);
  builder_.compute("aten::copy_", {logits32, logits}, {logits32}, KernelCategory::kMemory, 0);
  auto per_token_reduction = [&](const char* op, const TensorRef& input) {
    const TensorRef per_token = builder_.tensor({tokens}, DType::kFloat32);
    builder_.compute(op, {input}, {per_token}, KernelCategory::kOther, elements);
    all_reduce_over_tp(per_token);
    return per_token;
  };
  const TensorRef row_max = per_token_reduction("aten::amax", logits32);
  const TensorRef shifted =
      elementwise("aten::sub_", {logits32, row_max}, {tokens, v}, 1, DType::kFloat32);
  per_token_reduction("aten::sum", shifted);  // the target logit: a masked gather, summed
  const TensorRef exps = elementwise("aten::exp_", {shifted}, {tokens, v}, 1, DType::kFloat32);
  const TensorRef row_sum = per_token_reduction("aten::sum", exps);
  saved.softmax = elementwise("aten::div_", {exps, row_sum}, {tokens, v}, 1, DType::kFloat32);
  builder_.set_phase("forward");
  return saved;
}

TensorRef LayerEmitter::head_backward(const TensorRef& head_weight, const HeadSaved& saved) {
  const std::int64_t tokens = shapes_.tokens(), v = shapes_.vocab_local;
  const TensorRef loss_grad = builder_.tensor({tokens}, DType::kFloat32);
  TensorRef grad_logits;
  if (model_.cross_entropy_fusion == CrossEntropyFusion::kTe) {
    // The forward left the bf16 gradient; TE's element_mul kernel scales it in place.
    grad_logits = builder_.tensor({tokens, v});
    builder_.compute("te::cross_entropy_grad_scale",
                     {saved_operand(saved.softmax, {tokens, v}), loss_grad}, {grad_logits},
                     KernelCategory::kOther, static_cast<double>(tokens) * static_cast<double>(v));
  } else {
    const TensorRef softmax = saved_operand(saved.softmax, {tokens, v}, DType::kFloat32);
    const TensorRef grad32 =
        elementwise("aten::mul_", {softmax, loss_grad}, {tokens, v}, 1, DType::kFloat32);
    grad_logits = builder_.tensor({tokens, v});
    builder_.compute("aten::copy_", {grad_logits, grad32}, {grad_logits}, KernelCategory::kMemory,
                     0);
  }
  // Megatron's output layer is not a Transformer Engine module: its GEMMs stay bf16.
  // Nor does it use userbuffers, nor delay its weight gradient (delay_wgrad_compute).
  const bool fp8_linear = shapes_.fp8_linear;
  const bool userbuffers = overlap_.userbuffers;
  const bool delay_wgrad = delay_wgrad_;
  shapes_.fp8_linear = false;
  overlap_.userbuffers = false;
  delay_wgrad_ = false;
  TensorRef grad_input =
      norm_input_backward(grad_logits, head_weight, Fp8Copy{}, v, saved.x, saved.normed);
  shapes_.fp8_linear = fp8_linear;
  overlap_.userbuffers = userbuffers;
  delay_wgrad_ = delay_wgrad;
  return grad_input;
}

}  // namespace perfsim::generators::llm

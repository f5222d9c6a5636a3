// FP8 current scaling (issue 15; Megatron-Core --fp8-recipe tensorwise, Megatron-Bridge FP8-CS):
// what Transformer Engine's Float8CurrentScaling recipe does besides the cast that delayed
// scaling also does, read from its code (TransformerEngine transformer_engine/pytorch/csrc/
// quantizer.cpp, Float8CurrentScalingQuantizer::quantize_impl; csrc/extensions/normalization.cpp;
// csrc/extensions/cast.cpp, split_quantize and multi_tensor_quantize_impl; module/linear.py,
// layernorm_linear.py and grouped_linear.py, _customize_quantizers_float8_current_scaling):
// - every quantization of a GEMM operand first finds the tensor's own amax: nvte_compute_amax,
//   one kernel reading the tensor (delayed scaling takes the scale from the amax history and
//   updates the amax inside the cast kernel);
// - after a layer norm fused into the linear layer (LayerNormLinear: QKV and a dense layer's
//   FC1) the norm kernel writes its output in bf16 and its amax beside it (FUSED_NORM_AMAX_FP8),
//   so no amax kernel runs; the cast follows (quantize_with_amax);
// - with sequence parallelism the input quantizer of a column-parallel layer and the output-
//   gradient quantizer of a row-parallel one MAX-reduce the amax over the TP group before the
//   scale (with_amax_reduction; c10d all-reduce of one float on the TP communicator, then the
//   compute stream waits for it), so every TP rank casts its share of the gathered tensor with
//   one scale;
// - nvte_compute_scale_from_amax, one small kernel, then the cast (priced as before);
// - GroupedLinear (the experts) quantizes each local expert's rows with its own quantizer
//   (tex.split_quantize); only delayed scaling has the fused multi-tensor cast, so current
//   scaling runs amax, scale and cast per expert from one C++ loop; each expert weight gets its
//   own amax and scale at its per-iteration cast.
// Host: the kernels besides the cast are launched from C++ inside the Python call the cast op
// stands for, named kFp8AmaxOpName / kFp8ScaleOpName / kFp8ExpertCastLaunchOpName (host
// overheads charge them the measured launch floor, scenario/llm_calibration.hpp). The amax
// all-reduce is a collective like any other. Memory: two fp32 scalars per cast.
// Megatron-Core's Fp8Padding of the experts' rows (to multiples of 16) is not emitted: TE
// returns early when every expert's rows are aligned, as the balanced rows here are.
// Blockwise scaling (Float8BlockQuantizer) has no fused multi-tensor cast either: its grouped
// operands take the per-expert cast launches below, without amax or scale kernels.
#include "generators/llm/llm_layer_emitter.hpp"

namespace perfsim::generators::llm {

void LayerEmitter::current_scale(const TensorRef& x, std::int64_t rows, std::int64_t cols,
                                 Fp8Scaling scaling) {
  if (!shapes_.fp8_current_scaling || scaling.amax == AmaxSource::kNone || rows * cols == 0)
    return;
  TensorRef amax;
  if (scaling.amax == AmaxSource::kKernel) {
    amax = builder_.tensor({1}, DType::kFloat32);
    builder_.compute(std::string(kFp8AmaxOpName), {RankTraceBuilder::view(x, {rows, cols})}, {amax},
                     KernelCategory::kOther, static_cast<double>(rows * cols));
  } else {
    // The norm wrote the amax with x: it is ready when x is (a one-float view of x's id).
    amax = RankTraceBuilder::view(x, {1});
    amax.dtype = DType::kFloat32;
    amax.element_bytes = element_bytes(DType::kFloat32);
    amax.offset_elements = x.offset_elements * x.element_bytes / amax.element_bytes;
  }
  if (scaling.tp_all_reduce && shapes_.sequence_parallel && tp_.size > 1)
    builder_.communicate(
        {CollectiveKind::kAllReduce, tp_.name, tp_.size, -1, kTensorParallelStream}, amax, amax);
  const TensorRef scale = builder_.tensor({1}, DType::kFloat32);
  builder_.compute(std::string(kFp8ScaleOpName), {amax}, {scale}, KernelCategory::kOther, 1.0);
}

void LayerEmitter::expert_weight_current_scale(const TensorRef& weight, std::int64_t rows,
                                               std::int64_t cols) {
  for (std::int64_t expert = 0; expert < shapes_.experts_local; ++expert)
    current_scale(RankTraceBuilder::view(weight, {rows, cols}), rows, cols, kAmaxKernel);
}

TensorRef LayerEmitter::grouped_operand(const TensorRef& x, std::int64_t per_expert,
                                        std::int64_t cols, TensorRef* transposed) {
  const std::int64_t experts = shapes_.experts_local, rows = experts * per_expert;
  // Blockwise scaling quantizes per expert from the same C++ loop, without amax or scale
  // kernels (each block's scale is found inside its cast kernel).
  if (!shapes_.fp8_current_scaling && !shapes_.fp8_blockwise)
    return backward_operand(x, rows, cols, false, transposed);
  for (std::int64_t expert = 0; expert < experts; ++expert)
    current_scale(RankTraceBuilder::view(x, {per_expert, cols}), per_expert, cols, kAmaxKernel);
  // The experts' casts: their GPU work (the same bytes) as one op, the Python call's; the
  // other experts' cast launches from TE's loop as host-only ops.
  const TensorRef out = cast_transpose(x, rows, cols, {}, {}, transposed);
  if (per_expert > 0)
    for (std::int64_t expert = 1; expert < experts; ++expert)
      builder_.host_call(std::string(kFp8ExpertCastLaunchOpName));
  return out;
}

}  // namespace perfsim::generators::llm

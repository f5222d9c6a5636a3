#include "kernels/cnn_op_rules.hpp"

#include <string>

#include "kernels/tensor_facts.hpp"

namespace perfsim::kernels {
namespace {

OpExpansion modeled(std::vector<KernelSpec> kernels) {
  return {ExpansionStatus::kModeled, std::move(kernels), ""};
}
OpExpansion missing(std::string note, KernelCategory category) {
  return {ExpansionStatus::kMissingShapes, {}, std::move(note), category};
}

// A tensor argument (scalars and lists are recorded with empty shapes and no dtype).
const TensorRef* tensor_at(const std::vector<TensorRef>& tensors, std::size_t index) {
  if (index >= tensors.size())
    return nullptr;
  const TensorRef& tensor = tensors[index];
  if (tensor.shape.empty() && tensor.dtype == DType::kUnknown && tensor.numel == 0)
    return nullptr;
  return &tensor;
}
bool has_elements(const std::vector<TensorRef>& tensors, std::size_t index) {
  const TensorRef* tensor = tensor_at(tensors, index);
  return tensor != nullptr && tensor_elements(*tensor) > 0;
}

std::string kernel_name(std::string_view prefix, const Op& op) {
  return std::string(prefix) + ":" + std::string(canonical_op_name(op.name));
}

KernelSpec conv_kernel(const Op& op, const ConvShape& shape, ConvPass pass, DType dtype) {
  return {kernel_name("cudnn_conv_" + std::string(conv_pass_name(pass)), op), KernelCategory::kGemm,
          ConvWork{shape, pass, dtype}};
}

constexpr const char* kConvShapesNote =
    "needs input [N, C, H, W], weight [K, C/g, R, S] and output [N, K, P, Q] (Kineto records no "
    "output; 3-D and transposed convolutions are not modeled)";

// aten::convolution, _convolution, cudnn_convolution, conv1d, conv2d: (input, weight, ...) ->
// output.
OpExpansion convolution_forward_rule(const Op& op) {
  const TensorRef* input = tensor_at(op.inputs, 0);
  const TensorRef* weight = tensor_at(op.inputs, 1);
  const TensorRef* output = tensor_at(op.outputs, 0);
  ConvShape shape;
  if (!input || !weight || !output || !conv_shape_from_tensors(*input, *weight, *output, shape))
    return missing(kConvShapesNote, KernelCategory::kGemm);
  if (!is_floating(tensor_dtype(*input)))
    return missing("integer or untyped convolution: no peak to time it by", KernelCategory::kGemm);
  return modeled({conv_kernel(op, shape, ConvPass::kForward, tensor_dtype(*input))});
}

// aten::convolution_backward(grad_output [N, K, P, Q], input, weight, ...) -> (grad_input,
// grad_weight, grad_bias): a dgrad kernel when grad_input is produced, a wgrad kernel when
// grad_weight is, a reduction of grad_output when grad_bias is. Without recorded outputs
// (Kineto) both gradients are assumed (the first layer of a network has no grad_input: one
// kernel too many there).
OpExpansion convolution_backward_rule(const Op& op) {
  const TensorRef* grad_output = tensor_at(op.inputs, 0);
  const TensorRef* input = tensor_at(op.inputs, 1);
  const TensorRef* weight = tensor_at(op.inputs, 2);
  ConvShape shape;
  if (!grad_output || !input || !weight ||
      !conv_shape_from_tensors(*input, *weight, *grad_output, shape))
    return missing("needs grad_output [N, K, P, Q], input [N, C, H, W] and weight [K, C/g, R, S]",
                   KernelCategory::kGemm);
  const DType dtype = tensor_dtype(*grad_output);
  if (!is_floating(dtype))
    return missing("integer or untyped convolution: no peak to time it by", KernelCategory::kGemm);
  const bool outputs_known = !op.outputs.empty();
  std::vector<KernelSpec> kernels;
  if (!outputs_known || has_elements(op.outputs, 0))
    kernels.push_back(conv_kernel(op, shape, ConvPass::kBackwardData, dtype));
  if (!outputs_known || has_elements(op.outputs, 1))
    kernels.push_back(conv_kernel(op, shape, ConvPass::kBackwardFilter, dtype));
  if (outputs_known && has_elements(op.outputs, 2)) {
    kernels.push_back(
        {kernel_name("reduce_bias_grad", op), KernelCategory::kOther,
         ElementwiseWork{static_cast<double>(tensor_elements(*grad_output)),
                         tensor_bytes(*grad_output), tensor_bytes(op.outputs[2]), dtype}});
  }
  if (kernels.empty())
    return {ExpansionStatus::kNoKernel, {}, ""};
  return modeled(std::move(kernels));
}

KernelSpec streaming_kernel(const Op& op, std::string_view prefix, double bytes_read,
                            double bytes_written, DType dtype) {
  return {kernel_name(prefix, op), KernelCategory::kOther,
          MemoryBoundWork{bytes_read, bytes_written, dtype}};
}

double output_bytes(const Op& op) {
  double bytes = 0;
  for (const TensorRef& tensor : op.outputs)
    bytes += tensor_bytes(tensor);
  return bytes;
}

// aten::batch_norm, _batch_norm_impl_index, cudnn_batch_norm, native_batch_norm (input,
// weight, bias, running_mean, running_var, training, ...). Training reads x twice (the
// per-channel statistics, then the normalization) and writes y; inference (save_mean
// recorded empty) reads x once. Kineto records no outputs: training is assumed.
OpExpansion batch_norm_forward_rule(const Op& op) {
  const TensorRef* input = tensor_at(op.inputs, 0);
  if (!input || input->shape.size() < 2)
    return missing("needs input [N, C, ...]", KernelCategory::kOther);
  const double x_bytes = tensor_bytes(*input);
  const bool inference = op.outputs.size() >= 2 && tensor_at(op.outputs, 1) != nullptr &&
                         tensor_elements(op.outputs[1]) == 0;
  return modeled({streaming_kernel(op, "batch_norm_forward", inference ? x_bytes : 2 * x_bytes,
                                   x_bytes, tensor_dtype(*input))});
}

// aten::_native_batch_norm_legit_no_training: inference by name, whatever the trace records.
OpExpansion batch_norm_inference_rule(const Op& op) {
  const TensorRef* input = tensor_at(op.inputs, 0);
  if (!input || input->shape.size() < 2)
    return missing("needs input [N, C, ...]", KernelCategory::kOther);
  const double x_bytes = tensor_bytes(*input);
  return modeled(
      {streaming_kernel(op, "batch_norm_forward", x_bytes, x_bytes, tensor_dtype(*input))});
}

// aten::cudnn_batch_norm_backward(input, grad_output, ...) and native_batch_norm_backward(
// grad_output, input, ...): the reduction pass reads x and dy for the per-channel sums of dy
// and dy (x - mean), the second pass reads them again and writes dx.
OpExpansion batch_norm_backward_rule(const Op& op) {
  const TensorRef* first = tensor_at(op.inputs, 0);
  const TensorRef* second = tensor_at(op.inputs, 1);
  if (!first || !second || first->shape.size() < 2)
    return missing("needs input and grad_output [N, C, ...]", KernelCategory::kOther);
  const double x_bytes = tensor_bytes(*first);
  return modeled(
      {streaming_kernel(op, "batch_norm_backward", 4 * x_bytes, x_bytes, tensor_dtype(*first))});
}

// Pooling forward (max_pool2d_with_indices, max_pool2d, adaptive/avg_pool2d): read the input,
// write the outputs (max pooling with indices also writes int64 indices).
OpExpansion pooling_forward_rule(const Op& op) {
  const TensorRef* input = tensor_at(op.inputs, 0);
  const double written = output_bytes(op);
  if (!input || written == 0)
    return missing("needs input and output shapes (Kineto records no output)",
                   KernelCategory::kOther);
  return modeled({streaming_kernel(op, "pooling_forward", tensor_bytes(*input), written,
                                   tensor_dtype(*input))});
}

// Pooling backward (grad_output, self, ..., [indices]): read grad_output (and the indices),
// write grad_input, the size of self. Max pooling's backward zeroes grad_input through a child
// op (aten::zero_) and then scatters into it with its own kernel: both run.
OpExpansion pooling_backward_rule(const Op& op) {
  const TensorRef* grad_output = tensor_at(op.inputs, 0);
  const TensorRef* self = tensor_at(op.inputs, 1);
  if (!grad_output || !self)
    return missing("needs grad_output and the pooled input", KernelCategory::kOther);
  double read = tensor_bytes(*grad_output);
  for (std::size_t i = 2; i < op.inputs.size(); ++i)
    if (const TensorRef* indices = tensor_at(op.inputs, i);
        indices && !is_floating(tensor_dtype(*indices)))
      read += tensor_bytes(*indices);
  OpExpansion expansion = modeled({streaming_kernel(
      op, "pooling_backward", read, tensor_bytes(*self), tensor_dtype(*grad_output))});
  expansion.own_kernels_besides_children = true;
  return expansion;
}

OpExpansion autograd_node(const Op&) {
  return missing("autograd node: its kernels come from child ops, which the trace lacks",
                 KernelCategory::kOther);
}

}  // namespace

bool conv_shape_from_tensors(const TensorRef& input, const TensorRef& weight,
                             const TensorRef& output, ConvShape& shape) {
  const auto& x = input.shape;
  const auto& w = weight.shape;
  const auto& y = output.shape;
  const std::size_t rank = x.size();
  if ((rank != 3 && rank != 4) || w.size() != rank || y.size() != rank)
    return false;
  for (const auto* dims : {&x, &w, &y})
    for (std::int64_t extent : *dims)
      if (extent <= 0)
        return false;
  const bool two_d = rank == 4;
  shape.batch = x[0];
  shape.in_channels = x[1];
  shape.in_h = two_d ? x[2] : 1;
  shape.in_w = x[rank - 1];
  shape.out_channels = w[0];
  shape.filter_h = two_d ? w[2] : 1;
  shape.filter_w = w[rank - 1];
  shape.out_h = two_d ? y[2] : 1;
  shape.out_w = y[rank - 1];
  if (y[0] != x[0] || y[1] != w[0] || x[1] % w[1] != 0)
    return false;
  shape.groups = x[1] / w[1];
  if (shape.out_channels % shape.groups != 0)
    return false;
  // A transposed convolution's output is larger than its input: not this model.
  if (shape.out_h > shape.in_h || shape.out_w > shape.in_w)
    return false;
  shape.stride_h = conv_stride_from_extents(shape.in_h, shape.filter_h, shape.out_h);
  shape.stride_w = conv_stride_from_extents(shape.in_w, shape.filter_w, shape.out_w);
  return true;
}

const std::vector<std::pair<std::string_view, CnnOpRule>>& cnn_op_rules() {
  static const std::vector<std::pair<std::string_view, CnnOpRule>> rules{
      {"aten::conv1d", convolution_forward_rule},
      {"aten::conv2d", convolution_forward_rule},
      {"aten::convolution", convolution_forward_rule},
      {"aten::_convolution", convolution_forward_rule},
      {"aten::cudnn_convolution", convolution_forward_rule},
      {"aten::_convolution_mode", convolution_forward_rule},  // padding="same" / "valid"
      {"aten::convolution_backward", convolution_backward_rule},
      {"aten::batch_norm", batch_norm_forward_rule},
      {"aten::_batch_norm_impl_index", batch_norm_forward_rule},
      {"aten::cudnn_batch_norm", batch_norm_forward_rule},
      {"aten::native_batch_norm", batch_norm_forward_rule},
      {"aten::_native_batch_norm_legit", batch_norm_forward_rule},
      {"aten::_native_batch_norm_legit_functional", batch_norm_forward_rule},
      {"aten::_native_batch_norm_legit_no_training", batch_norm_inference_rule},
      {"aten::cudnn_batch_norm_backward", batch_norm_backward_rule},
      {"aten::native_batch_norm_backward", batch_norm_backward_rule},
      {"aten::batch_norm_backward", batch_norm_backward_rule},
      {"aten::max_pool2d", pooling_forward_rule},
      {"aten::max_pool2d_with_indices", pooling_forward_rule},
      {"aten::avg_pool2d", pooling_forward_rule},
      {"aten::adaptive_avg_pool2d", pooling_forward_rule},
      {"aten::_adaptive_avg_pool2d", pooling_forward_rule},
      {"aten::adaptive_max_pool2d", pooling_forward_rule},
      {"aten::max_pool2d_with_indices_backward", pooling_backward_rule},
      {"aten::avg_pool2d_backward", pooling_backward_rule},
      {"aten::_adaptive_avg_pool2d_backward", pooling_backward_rule},
      {"aten::adaptive_max_pool2d_backward", pooling_backward_rule},
      {"ConvolutionBackward0", autograd_node},
      {"CudnnBatchNormBackward0", autograd_node},
      {"NativeBatchNormBackward0", autograd_node},
      {"MaxPool2DWithIndicesBackward0", autograd_node},
      {"AdaptiveAvgPool2DBackward0", autograd_node},
      {"AvgPool2DBackward0", autograd_node},
  };
  return rules;
}

}  // namespace perfsim::kernels

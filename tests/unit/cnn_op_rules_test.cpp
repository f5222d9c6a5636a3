// CNN trace ops -> kernels (kernels/cnn_op_rules.hpp): convolutions, batch-norm and pooling as
// execution traces (inputs and outputs) and Kineto traces (inputs only) record them, and the
// model each kernel gets through the duration source.
#include <gtest/gtest.h>

#include "devices/device_spec.hpp"
#include "kernels/cnn_op_rules.hpp"
#include "kernels/model_duration_source.hpp"

namespace perfsim::kernels {
namespace {

const std::string kDeviceFolder = std::string(PERFSIM_SOURCE_DIR) + "/configs/devices";

TensorRef tensor(std::vector<std::int64_t> shape, DType dtype = DType::kFloat32) {
  TensorRef ref;
  ref.shape = std::move(shape);
  ref.dtype = dtype;
  ref.element_bytes = element_bytes(dtype);
  ref.device = "cuda:0";
  std::int64_t numel = 1;
  for (std::int64_t extent : ref.shape)
    numel *= extent;
  ref.numel = numel;
  return ref;
}

Op op(std::int64_t id, std::string name, std::vector<TensorRef> inputs,
      std::vector<TensorRef> outputs = {}) {
  Op out;
  out.id = id;
  out.name = std::move(name);
  out.inputs = std::move(inputs);
  out.outputs = std::move(outputs);
  return out;
}

const ConvWork& conv_work(const KernelSpec& kernel) {
  return std::get<ConvWork>(kernel.work);
}

// ResNet's stem: 32 x 3 x 224 x 224, 64 filters of 7x7, stride 2, padding 3 -> 112 x 112.
TEST(CnnOpRules, ForwardConvolutionFromExecutionTraceShapes) {
  const Op conv =
      op(1, "aten::cudnn_convolution", {tensor({32, 3, 224, 224}), tensor({64, 3, 7, 7})},
         {tensor({32, 64, 112, 112})});
  const OpExpansion expansion = expand_op(conv);
  ASSERT_EQ(expansion.status, ExpansionStatus::kModeled);
  ASSERT_EQ(expansion.kernels.size(), 1u);
  EXPECT_EQ(expansion.kernels[0].category, KernelCategory::kGemm);
  const ConvWork& work = conv_work(expansion.kernels[0]);
  EXPECT_EQ(work.pass, ConvPass::kForward);
  EXPECT_EQ(work.dtype, DType::kFloat32);
  EXPECT_EQ(work.shape.batch, 32);
  EXPECT_EQ(work.shape.in_channels, 3);
  EXPECT_EQ(work.shape.out_channels, 64);
  EXPECT_EQ(work.shape.filter_h, 7);
  EXPECT_EQ(work.shape.out_h, 112);
  EXPECT_EQ(work.shape.stride_h, 2);
  EXPECT_EQ(work.shape.groups, 1);
}

TEST(CnnOpRules, ForwardConvolutionWithoutOutputIsMissingShapes) {
  // Kineto: no output shapes, and stride and padding are not tensors.
  const Op conv =
      op(1, "aten::cudnn_convolution", {tensor({8, 64, 56, 56}), tensor({64, 64, 3, 3})});
  const OpExpansion expansion = expand_op(conv);
  EXPECT_EQ(expansion.status, ExpansionStatus::kMissingShapes);
  EXPECT_EQ(expansion.category, KernelCategory::kGemm);
}

TEST(CnnOpRules, GroupsFromWeightChannels) {
  const Op depthwise = op(1, "aten::convolution", {tensor({4, 32, 10, 10}), tensor({32, 1, 3, 3})},
                          {tensor({4, 32, 10, 10})});
  const OpExpansion expansion = expand_op(depthwise);
  ASSERT_EQ(expansion.status, ExpansionStatus::kModeled);
  EXPECT_EQ(conv_work(expansion.kernels[0]).shape.groups, 32);
  // A transposed convolution (output larger than input) is not this model.
  const Op transposed =
      op(2, "aten::convolution", {tensor({4, 32, 10, 10}), tensor({32, 16, 2, 2})},
         {tensor({4, 16, 20, 20})});
  EXPECT_EQ(expand_op(transposed).status, ExpansionStatus::kMissingShapes);
}

TEST(CnnOpRules, BackwardLaunchesTheGradientsItsOutputsHold) {
  const TensorRef grad_output = tensor({32, 2048, 7, 7});
  const TensorRef input = tensor({32, 512, 7, 7});
  const TensorRef weight = tensor({2048, 512, 1, 1});
  TensorRef undefined;  // "Tensor(nullptr (uninitialized))": no bias gradient
  const Op both = op(1, "aten::convolution_backward", {grad_output, input, weight},
                     {tensor({32, 512, 7, 7}), tensor({2048, 512, 1, 1}), undefined});
  OpExpansion expansion = expand_op(both);
  ASSERT_EQ(expansion.kernels.size(), 2u);
  EXPECT_EQ(conv_work(expansion.kernels[0]).pass, ConvPass::kBackwardData);
  EXPECT_EQ(conv_work(expansion.kernels[1]).pass, ConvPass::kBackwardFilter);
  EXPECT_EQ(conv_work(expansion.kernels[1]).shape.out_channels, 2048);
  EXPECT_EQ(conv_work(expansion.kernels[1]).shape.out_h, 7);

  // The first layer: no grad_input (output_mask [false, true, false]).
  TensorRef no_input_grad = undefined;
  const Op first_layer =
      op(2, "aten::convolution_backward",
         {tensor({32, 64, 112, 112}), tensor({32, 3, 224, 224}), tensor({64, 3, 7, 7})},
         {no_input_grad, tensor({64, 3, 7, 7}), undefined});
  expansion = expand_op(first_layer);
  ASSERT_EQ(expansion.kernels.size(), 1u);
  EXPECT_EQ(conv_work(expansion.kernels[0]).pass, ConvPass::kBackwardFilter);
  EXPECT_EQ(conv_work(expansion.kernels[0]).shape.stride_h, 2);

  // With a bias gradient: a reduction of grad_output as well.
  const Op with_bias = op(3, "aten::convolution_backward", {grad_output, input, weight},
                          {tensor({32, 512, 7, 7}), tensor({2048, 512, 1, 1}), tensor({2048})});
  EXPECT_EQ(expand_op(with_bias).kernels.size(), 3u);

  // Kineto records no outputs: both gradients are assumed.
  const Op kineto = op(4, "aten::convolution_backward", {grad_output, input, weight});
  EXPECT_EQ(expand_op(kineto).kernels.size(), 2u);
}

TEST(CnnOpRules, BatchNormReadsTheInputTwiceWhenTraining) {
  const TensorRef x = tensor({32, 64, 112, 112});
  const double x_bytes = 32.0 * 64 * 112 * 112 * 4;
  const std::vector<TensorRef> params{tensor({64}), tensor({64}), tensor({64}), tensor({64})};
  std::vector<TensorRef> inputs{x};
  inputs.insert(inputs.end(), params.begin(), params.end());
  const Op training = op(1, "aten::cudnn_batch_norm", inputs,
                         {x, tensor({64}), tensor({64}), tensor({0}, DType::kUInt8)});
  const MemoryBoundWork train_work =
      std::get<MemoryBoundWork>(expand_op(training).kernels.at(0).work);
  EXPECT_DOUBLE_EQ(train_work.bytes_read, 2 * x_bytes);
  EXPECT_DOUBLE_EQ(train_work.bytes_written, x_bytes);
  const Op inference =
      op(2, "aten::cudnn_batch_norm", inputs, {x, tensor({0}), tensor({0}), tensor({0})});
  EXPECT_DOUBLE_EQ(std::get<MemoryBoundWork>(expand_op(inference).kernels.at(0).work).bytes_read,
                   x_bytes);
  const Op no_training = op(4, "aten::_native_batch_norm_legit_no_training", inputs);
  EXPECT_DOUBLE_EQ(std::get<MemoryBoundWork>(expand_op(no_training).kernels.at(0).work).bytes_read,
                   x_bytes);
  const Op backward = op(3, "aten::cudnn_batch_norm_backward", {x, x, tensor({64})}, {x});
  const MemoryBoundWork back_work =
      std::get<MemoryBoundWork>(expand_op(backward).kernels.at(0).work);
  EXPECT_DOUBLE_EQ(back_work.bytes_read, 4 * x_bytes);
  EXPECT_DOUBLE_EQ(back_work.bytes_written, x_bytes);
}

TEST(CnnOpRules, MaxPoolingBackwardRunsBesidesItsZeroFill) {
  const Op pool = op(1, "aten::max_pool2d_with_indices", {tensor({32, 64, 112, 112})},
                     {tensor({32, 64, 56, 56}), tensor({32, 64, 56, 56}, DType::kInt64)});
  const MemoryBoundWork forward = std::get<MemoryBoundWork>(expand_op(pool).kernels.at(0).work);
  EXPECT_DOUBLE_EQ(forward.bytes_read, 32.0 * 64 * 112 * 112 * 4);
  EXPECT_DOUBLE_EQ(forward.bytes_written, 32.0 * 64 * 56 * 56 * (4 + 8));
  const Op backward = op(2, "aten::max_pool2d_with_indices_backward",
                         {tensor({32, 64, 56, 56}), tensor({32, 64, 112, 112}),
                          tensor({32, 64, 56, 56}, DType::kInt64)},
                         {tensor({32, 64, 112, 112})});
  const OpExpansion expansion = expand_op(backward);
  EXPECT_TRUE(expansion.own_kernels_besides_children);
  const auto& work = std::get<MemoryBoundWork>(expansion.kernels.at(0).work);
  EXPECT_DOUBLE_EQ(work.bytes_read, 32.0 * 64 * 56 * 56 * (4 + 8));
  EXPECT_DOUBLE_EQ(work.bytes_written, 32.0 * 64 * 112 * 112 * 4);
}

// conv2d -> convolution -> _convolution -> cudnn_convolution, as in the ResNet trace: the leaf's
// kernel, timed by the fitted model on the V100 and the nominal one on the H100.
TEST(CnnOpRules, NestedConvolutionTimedOnceByTheConvModel) {
  Trace trace;
  const std::vector<TensorRef> inputs{tensor({32, 64, 56, 56}), tensor({64, 64, 3, 3})};
  const std::vector<TensorRef> outputs{tensor({32, 64, 56, 56})};
  const char* names[] = {"aten::conv2d", "aten::convolution", "aten::_convolution",
                         "aten::cudnn_convolution"};
  for (std::int64_t id = 1; id <= 4; ++id) {
    Op node = op(id, names[id - 1], inputs, outputs);
    node.parent_id = id == 1 ? kNoParent : id - 1;
    if (id < 4)
      node.child_ids = {id + 1};
    trace.ops.push_back(node);
  }
  const ModelDurationSource v100{KernelPredictor(devices::find_device(kDeviceFolder, "V100-SXM2"))};
  const OpKernelPlan plan = v100.expand_kernels(trace.ops[0], trace);
  ASSERT_EQ(plan.kernels.size(), 1u);
  EXPECT_TRUE(plan.uncovered.empty());
  EXPECT_EQ(plan.kernels[0].model, "conv-implicit-gemm(fitted)");
  EXPECT_EQ(plan.kernels[0].op_id, 4);
  EXPECT_GT(plan.kernels[0].predicted_us, 0);
  const ModelDurationSource h100{KernelPredictor(devices::find_device(kDeviceFolder, "H100-SXM"))};
  EXPECT_EQ(h100.expand_kernels(trace.ops[0], trace).kernels.at(0).model,
            "conv-implicit-gemm(nominal)");
}

}  // namespace
}  // namespace perfsim::kernels

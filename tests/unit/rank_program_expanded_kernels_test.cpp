// Kernels are priced by the op that launches them: model-expanded kernels (execution traces)
// keep the duration their model predicted from it, measured ones (Kineto) are re-predicted
// from it. The top-level op of a backward convolution is an autograd wrapper
// ("autograd::engine::evaluate_function: ConvolutionBackward0") whose own rule cannot price the
// kernels of its aten::convolution_backward child: re-pricing them by the wrapper put every
// backward convolution at the device's kernel floor.
#include <gtest/gtest.h>

#include "devices/device_spec.hpp"
#include "kernels/model_duration_source.hpp"
#include "mpi_sim/engine/rank_program.hpp"

namespace perfsim::engine {
namespace {

class NoCollectives final : public CommDurationSource {
 public:
  DurationUs collective_duration_us(const CollectiveCall&) const override { return 0; }
  std::string_view name() const override { return "none"; }
};

TensorRef tensor(std::vector<std::int64_t> shape) {
  TensorRef ref;
  ref.shape = std::move(shape);
  ref.dtype = DType::kFloat32;
  ref.element_bytes = 4;
  ref.device = "cuda:0";
  ref.numel = 1;
  for (std::int64_t extent : ref.shape)
    ref.numel *= extent;
  return ref;
}

TEST(RankProgramExpandedKernels, BackwardConvolutionUnderAnAutogradWrapperKeepsItsModelTime) {
  Trace trace;
  Op wrapper;
  wrapper.id = 1;
  wrapper.name = "autograd::engine::evaluate_function: ConvolutionBackward0";
  wrapper.child_ids = {2};
  Op node;
  node.id = 2;
  node.name = "ConvolutionBackward0";
  node.parent_id = 1;
  node.child_ids = {3};
  Op backward;
  backward.id = 3;
  backward.name = "aten::convolution_backward";
  backward.parent_id = 2;
  backward.inputs = {tensor({32, 256, 14, 14}), tensor({32, 256, 14, 14}),
                     tensor({256, 256, 3, 3})};
  backward.outputs = {tensor({32, 256, 14, 14}), tensor({256, 256, 3, 3})};
  trace.ops = {wrapper, node, backward};

  const devices::DeviceSpec v100 =
      devices::find_device(std::string(PERFSIM_SOURCE_DIR) + "/configs/devices", "V100-SXM2");
  const kernels::ModelDurationSource model{kernels::KernelPredictor(v100)};
  NoCollectives collectives;
  ProgramSources sources{&model, &collectives, {}};
  sources.expand_kernels = [&model](const Trace& in, std::size_t position) {
    std::vector<ExpandedKernel> kernels;
    for (const auto& planned : model.expand_kernels(in.ops[position], in).kernels)
      kernels.push_back({planned.kernel, planned.predicted_us});
    return kernels;
  };
  const kernels::OpKernelPlan plan = model.expand_kernels(trace.ops[0], trace);
  ASSERT_EQ(plan.kernels.size(), 2u);  // dgrad and wgrad

  const RankProgram program = build_rank_program(trace, 0, 1, sources);
  std::vector<DurationUs> simulated;
  for (const SimOp& op : program.ops)
    for (const SimKernel& kernel : op.kernels)
      simulated.push_back(kernel.duration_us);
  ASSERT_EQ(simulated.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_DOUBLE_EQ(simulated[i], plan.kernels[i].predicted_us);
    // 2 N K P Q C R S = 7.4 GFLOP each: far above the 2 us floor on any V100.
    EXPECT_GT(simulated[i], 100 * v100.min_kernel_duration_us.value);
  }
}

// Kineto: the measured kernels of a backward convolution hang under the same wrapper; the
// model prices each by the op that launched it (inputs only: both gradients assumed).
TEST(RankProgramExpandedKernels, MeasuredKernelUnderAWrapperIsPricedByItsLauncher) {
  Trace trace;
  Op wrapper;
  wrapper.id = 1;
  wrapper.name = "autograd::engine::evaluate_function: ConvolutionBackward0";
  wrapper.child_ids = {2};
  Op backward;
  backward.id = 2;
  backward.name = "aten::convolution_backward";
  backward.parent_id = 1;
  backward.inputs = {tensor({32, 256, 14, 14}), tensor({32, 256, 14, 14}),
                     tensor({256, 256, 3, 3})};
  for (const char* name : {"cudnn_conv_dgrad:aten::convolution_backward",
                           "cudnn_conv_wgrad:aten::convolution_backward"}) {
    Kernel kernel;
    kernel.name = name;
    kernel.category = KernelCategory::kGemm;
    kernel.measured_duration_us = 1000;
    backward.kernels.push_back(kernel);
  }
  trace.ops = {wrapper, backward};

  const devices::DeviceSpec v100 =
      devices::find_device(std::string(PERFSIM_SOURCE_DIR) + "/configs/devices", "V100-SXM2");
  const kernels::ModelDurationSource model{kernels::KernelPredictor(v100)};
  const Kernel& dgrad = trace.ops[1].kernels[0];
  // The wrapper's own rule cannot price it: the floor.
  EXPECT_DOUBLE_EQ(model.kernel_duration_us(trace.ops[0], dgrad),
                   v100.min_kernel_duration_us.value);
  const DurationUs by_launcher = model.kernel_duration_in_trace_us(trace, 0, dgrad);
  EXPECT_DOUBLE_EQ(by_launcher, model.kernel_duration_us(trace.ops[1], dgrad));
  EXPECT_GT(by_launcher, 100 * v100.min_kernel_duration_us.value);

  NoCollectives collectives;
  const RankProgram program =
      build_rank_program(trace, 0, 1, ProgramSources{&model, &collectives, {}});
  ASSERT_EQ(program.ops.size(), 1u);
  ASSERT_EQ(program.ops[0].kernels.size(), 2u);
  EXPECT_DOUBLE_EQ(program.ops[0].kernels[0].duration_us, by_launcher);
}

}  // namespace
}  // namespace perfsim::engine

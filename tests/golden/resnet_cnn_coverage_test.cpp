// The CNN kernel models on the ResNet-50 execution trace of the 2-GPU fixture (rank 1, three
// iterations, batch 32, fp32): which ops the kernel models cover and what they predict on the
// V100 (the trace records no timing, so there is nothing to compare against; the printed
// table is the coverage figure of the README). The assertions check what the trace itself
// says: 53 convolutions per iteration, each with a forward kernel and a filter-gradient kernel,
// and a data-gradient kernel for all but the first layer, none of them left unmodeled.
#include <gtest/gtest.h>

#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>

#include "devices/device_spec.hpp"
#include "kernels/model_duration_source.hpp"
#include "trace_io/execution_trace_loader.hpp"

namespace perfsim::kernels {
namespace {

const std::string kResnet =
    std::string(PERFSIM_SHARED_DATA_DIR) + "/traces/param-resnet-2gpu/resnet_2gpu_et.json.gz";

struct ModelTotals {
  std::size_t kernels = 0;
  double duration_us = 0;
};

TEST(ResnetCnnCoverage, EveryConvolutionBatchNormAndPoolingHasAModel) {
  ASSERT_TRUE(std::filesystem::exists(kResnet)) << "missing trace fixture " << kResnet;
  const Trace trace = load_execution_trace_file(kResnet, 1);
  const devices::DeviceSpec device = devices::load_device_file(
      (std::filesystem::path(PERFSIM_SOURCE_DIR) / "configs/devices/V100-SXM2.json").string());
  const ModelDurationSource source{KernelPredictor(device)};

  std::map<std::string, ModelTotals> by_model;
  std::map<std::string, std::size_t> by_kernel_prefix;
  std::map<std::string, std::size_t> uncovered;
  std::size_t top_level_ops = 0;
  for (std::size_t position : trace.top_level_positions()) {
    ++top_level_ops;
    const OpKernelPlan plan = source.expand_kernels(trace.ops[position], trace);
    for (const PredictedKernel& kernel : plan.kernels) {
      ModelTotals& totals = by_model[kernel.model];
      ++totals.kernels;
      totals.duration_us += kernel.predicted_us;
      by_kernel_prefix[kernel.kernel.name.substr(0, kernel.kernel.name.find(':'))]++;
    }
    for (const UncoveredOp& op : plan.uncovered)
      uncovered[op.op_name + " (" + std::string(expansion_status_name(op.status)) + ")"]++;
  }
  std::size_t modeled = 0;
  std::cout << "ResNet ET (rank 1, 3 iterations) on V100-SXM2: " << top_level_ops
            << " top-level ops\n  kernels by model:\n";
  for (const auto& [model, totals] : by_model) {
    std::cout << "    " << std::left << std::setw(32) << model << std::right << std::setw(6)
              << totals.kernels << " kernels " << std::fixed << std::setprecision(3)
              << std::setw(10) << totals.duration_us / 1000.0 << " ms\n";
    if (model != kUnmodeledModel)
      modeled += totals.kernels;
  }
  std::cout << "  ops without a model:\n";
  std::size_t uncovered_count = 0;
  for (const auto& [name, count] : uncovered) {
    std::cout << "    " << count << " x " << name << "\n";
    uncovered_count += count;
  }
  std::cout << "  " << modeled << " kernels with a model, " << uncovered_count << " ops without\n";

  constexpr std::size_t kIterations = 3;
  constexpr std::size_t kConvolutionsPerIteration = 53;  // ResNet-50
  EXPECT_EQ(by_kernel_prefix["cudnn_conv_fprop"], kIterations * kConvolutionsPerIteration);
  EXPECT_EQ(by_kernel_prefix["cudnn_conv_wgrad"], kIterations * kConvolutionsPerIteration);
  // The image input needs no gradient.
  EXPECT_EQ(by_kernel_prefix["cudnn_conv_dgrad"], kIterations * (kConvolutionsPerIteration - 1));
  EXPECT_EQ(by_kernel_prefix["batch_norm_forward"], kIterations * kConvolutionsPerIteration);
  EXPECT_EQ(by_kernel_prefix["batch_norm_backward"], kIterations * kConvolutionsPerIteration);
  EXPECT_EQ(by_kernel_prefix["pooling_forward"], kIterations);
  EXPECT_EQ(by_kernel_prefix["pooling_backward"], kIterations);
  EXPECT_EQ(by_model["conv-implicit-gemm(fitted)"].kernels,
            kIterations * (3 * kConvolutionsPerIteration - 1));
  for (const auto& [name, count] : uncovered) {
    EXPECT_EQ(name.find("onv"), std::string::npos) << name;
    EXPECT_EQ(name.find("atch"), std::string::npos) << name;
    EXPECT_EQ(name.find("ool"), std::string::npos) << name;
  }
}

}  // namespace
}  // namespace perfsim::kernels

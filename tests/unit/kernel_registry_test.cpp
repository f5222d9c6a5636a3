// The op registry and the model-based duration source on a hand-built trace: which kernels
// each op launches, which model times them, the coverage table, and predicted vs measured
// kernel time per category.
#include <gtest/gtest.h>

#include <iostream>

#include "devices/device_spec.hpp"
#include "kernels/analytical_gemm.hpp"
#include "kernels/embedding_heuristic.hpp"
#include "kernels/model_vs_measured.hpp"
#include "perfsim/error.hpp"

namespace perfsim::kernels {
namespace {

const std::string kDeviceFolder = std::string(PERFSIM_SOURCE_DIR) + "/configs/devices";

TensorRef tensor(std::vector<std::int64_t> shape, DType dtype = DType::kFloat32) {
  TensorRef ref;
  ref.shape = std::move(shape);
  ref.dtype = dtype;
  ref.element_bytes = element_bytes(dtype);
  ref.device = "cuda:0";
  return ref;
}

Kernel measured(std::string name, double duration_us) {
  Kernel kernel;
  kernel.category = classify_kernel(name);
  kernel.name = std::move(name);
  kernel.measured_duration_us = duration_us;
  return kernel;
}

Op op(std::int64_t id, std::string name, std::vector<TensorRef> inputs,
      std::int64_t parent = kNoParent) {
  Op out;
  out.id = id;
  out.name = std::move(name);
  out.inputs = std::move(inputs);
  out.parent_id = parent;
  return out;
}

// linear -> (t, addmm) | relu | custom op | view | all_reduce | embedding_bag | cat
Trace hand_built_trace() {
  Trace trace;
  Op linear = op(1, "aten::linear", {tensor({64, 512}), tensor({256, 512}), tensor({256})});
  linear.child_ids = {2, 3};
  trace.ops.push_back(linear);
  trace.ops.push_back(op(2, "aten::t", {tensor({256, 512})}, 1));
  Op addmm = op(3, "aten::addmm", {tensor({256}), tensor({64, 512}), tensor({512, 256})}, 1);
  addmm.kernels = {measured("volta_sgemm_128x32_nn", 20)};
  trace.ops.push_back(addmm);
  Op relu = op(4, "aten::relu", {tensor({64, 256})});
  relu.kernels = {measured("vectorized_elementwise_kernel<relu>", 3)};
  trace.ops.push_back(relu);
  Op custom = op(5, "my::custom_op", {tensor({10})});
  custom.kernels = {measured("custom_kernel", 5)};
  trace.ops.push_back(custom);
  trace.ops.push_back(op(6, "aten::view", {tensor({64, 256})}));
  Op all_reduce = op(7, "nccl:all_reduce", {tensor({1000})});
  all_reduce.kernels = {measured("ncclKernel_AllReduce_RING_LL_Sum_float", 50)};
  trace.ops.push_back(all_reduce);
  Op bag = op(8, "aten::embedding_bag",
              {tensor({1000, 64}), tensor({2048}, DType::kInt64), tensor({65}, DType::kInt64)});
  bag.kernels = {measured("embedding_bag_kernel", 10)};
  trace.ops.push_back(bag);
  Op cat = op(9, "aten::cat", {tensor({64, 128}), tensor({64, 128})});
  cat.kernels = {measured("CatArrayBatchedCopy", 4)};
  trace.ops.push_back(cat);
  return trace;
}

class KernelRegistry : public ::testing::Test {
 protected:
  devices::DeviceSpec v100 = devices::find_device(kDeviceFolder, "V100-SXM2");
  ModelDurationSource source{KernelPredictor(v100)};
  // addmm: m = 64, n = 256, k = 512, fp32 on CUDA cores.
  double gemm_us =
      std::max(2.0, analytical_gemm_duration_us({64, 256, 512, 1, DType::kFloat32}, v100));
  // embedding_bag: E = 1000, D = 64, B = 65 - 1 = 64, L = 2048 / 64 = 32, one table.
  double embedding_us =
      std::max(2.0, embedding_heuristic_duration_us({64, 1000, 1, 32.0, 64, false, 32}, v100));
};

TEST_F(KernelRegistry, ExpandsOpsWithoutChildrenFromTheirShapes) {
  const OpExpansion linear =
      expand_op(op(1, "aten::linear", {tensor({8, 32, 512}), tensor({1024, 512})}));
  ASSERT_EQ(linear.status, ExpansionStatus::kModeled);
  const auto& gemm = std::get<GemmWork>(linear.kernels.at(0).work);
  EXPECT_EQ(gemm.m, 256);  // 8 * 32 rows
  EXPECT_EQ(gemm.n, 1024);
  EXPECT_EQ(gemm.k, 512);
  const OpExpansion bmm =
      expand_op(op(1, "aten::bmm", {tensor({16, 27, 16}), tensor({16, 16, 27})}));
  EXPECT_EQ(std::get<GemmWork>(bmm.kernels.at(0).work).batch, 16);
  EXPECT_EQ(expand_op(op(1, "autograd::engine::evaluate_function: AddmmBackward0", {})).status,
            ExpansionStatus::kMissingShapes);
  EXPECT_EQ(expand_op(op(1, "aten::transpose", {tensor({4, 4})})).status,
            ExpansionStatus::kNoKernel);
  EXPECT_EQ(expand_op(op(1, "c10d::allreduce_", {})).status, ExpansionStatus::kCommunication);
  EXPECT_EQ(expand_op(op(1, "aten::frobnicate", {})).status, ExpansionStatus::kUnknownOp);
}

TEST_F(KernelRegistry, TeGroupedGemmRunsItsExpertsFourAtATime) {
  // Transformer Engine's multi-stream cuBLAS path: expert i on stream i % 4.
  auto batches = [](std::int64_t experts) {
    const OpExpansion grouped = expand_op(op(1, "te::grouped_gemm",
                                             {tensor({experts, 256, 2048}, DType::kBFloat16),
                                              tensor({experts, 2048, 1536}, DType::kBFloat16)}));
    EXPECT_EQ(grouped.status, ExpansionStatus::kModeled);
    std::vector<std::int64_t> out;
    for (const KernelSpec& spec : grouped.kernels) {
      const GemmWork& gemm = std::get<GemmWork>(spec.work);
      EXPECT_EQ(gemm.m, 256);
      EXPECT_EQ(gemm.n, 1536);
      EXPECT_EQ(gemm.k, 2048);
      out.push_back(gemm.batch);
    }
    return out;
  };
  EXPECT_EQ(batches(3), (std::vector<std::int64_t>{3}));
  EXPECT_EQ(batches(4), (std::vector<std::int64_t>{4}));
  EXPECT_EQ(batches(6), (std::vector<std::int64_t>{4, 2}));
  EXPECT_EQ(batches(16), (std::vector<std::int64_t>{4, 4, 4, 4}));

  // Small experts leave SMs idle that a batched GEMM over all of them would fill: on H100 (132
  // SMs) 16 experts of 256 x 1536 tiles (12 tiles of 128 x 256 each) take four rounds of one
  // wave where the batched GEMM takes two waves; large experts fill every round, so the rounds
  // cost what the batched GEMM does.
  const devices::DeviceSpec h100 = devices::find_device(kDeviceFolder, "H100-SXM");
  const ModelDurationSource on_h100{KernelPredictor(h100)};
  // The same operands as one batched GEMM (aten::bmm) and as TE's grouped GEMM, one measured
  // GEMM kernel each, priced by the same predictor.
  auto duration_us = [&](const char* name, std::int64_t m) {
    Op gemm =
        op(1, name,
           {tensor({16, m, 2048}, DType::kBFloat16), tensor({16, 2048, 1536}, DType::kBFloat16)});
    gemm.kernels = {measured("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64", 0)};
    return on_h100.kernel_duration_us(gemm, gemm.kernels.front());
  };
  auto grouped_us = [&](std::int64_t m) { return duration_us("te::grouped_gemm", m); };
  auto batched_us = [&](std::int64_t m) { return duration_us("aten::bmm", m); };
  for (std::int64_t m : {256, 2048, 8192})  // the README's figures
    std::cout << "16 experts of " << m << " rows: grouped " << grouped_us(m) << " us, batched "
              << batched_us(m) << " us\n";
  EXPECT_GT(grouped_us(256), 1.5 * batched_us(256));
  EXPECT_NEAR(grouped_us(8192), batched_us(8192), 0.05 * batched_us(8192));
}

TEST_F(KernelRegistry, FbgemmLookupRecoversTableShapesFromAnExecutionTraceOp) {
  // Two tables of E = 1000 rows, D = 64, batch 16, 4 lookups per sample and table:
  // weights 2 * 1000 * 64 = 128000 floats, D_offsets [3], indices 2 * 16 * 4 = 128,
  // offsets 2 * 16 + 1 = 33, output [16, 2 * 64].
  Op lookup = op(1, "fbgemm::split_embedding_codegen_lookup_sgd_function",
                 {tensor({128000}), tensor({3}, DType::kInt32), tensor({128}, DType::kInt64),
                  tensor({33}, DType::kInt64)});
  lookup.outputs = {tensor({16, 128})};
  const OpExpansion expansion = expand_op(lookup);
  ASSERT_EQ(expansion.status, ExpansionStatus::kModeled);
  const auto& work = std::get<EmbeddingWork>(expansion.kernels.at(0).work);
  EXPECT_EQ(work.batch_size, 16);
  EXPECT_EQ(work.tables, 2);
  EXPECT_EQ(work.dim, 64);
  EXPECT_DOUBLE_EQ(work.pooling_factor, 4.0);
  EXPECT_EQ(work.rows, 1000);
  // Without the output shape (Kineto) the op is reported, and its placeholder is counted as
  // an embedding lookup.
  lookup.outputs.clear();
  const OpExpansion without_output = expand_op(lookup);
  EXPECT_EQ(without_output.status, ExpansionStatus::kMissingShapes);
  EXPECT_EQ(without_output.category, KernelCategory::kEmbeddingLookup);
}

TEST_F(KernelRegistry, ExpandKernelsWalksChildrenAndNamesTheModel) {
  const Trace trace = hand_built_trace();
  const OpKernelPlan plan = source.expand_kernels(trace.ops[0], trace);  // aten::linear
  ASSERT_EQ(plan.kernels.size(), 1u);
  EXPECT_EQ(plan.kernels[0].kernel.category, KernelCategory::kGemm);
  EXPECT_EQ(plan.kernels[0].kernel.stream, kDefaultComputeStream);
  EXPECT_EQ(plan.kernels[0].op_id, 3);  // produced by the addmm child
  EXPECT_NEAR(plan.kernels[0].predicted_us, gemm_us, 1e-9);
  EXPECT_EQ(plan.kernels[0].model.rfind("analytical-gemm", 0), 0u);
  EXPECT_TRUE(plan.uncovered.empty());

  const OpKernelPlan unknown = source.expand_kernels(trace.ops[4], trace);  // my::custom_op
  ASSERT_EQ(unknown.uncovered.size(), 1u);
  EXPECT_EQ(unknown.uncovered[0].status, ExpansionStatus::kUnknownOp);
  ASSERT_EQ(unknown.kernels.size(), 1u);  // never silently free
  EXPECT_EQ(unknown.kernels[0].model, kUnmodeledModel);
  EXPECT_DOUBLE_EQ(unknown.kernels[0].predicted_us, 2.0);
}

TEST_F(KernelRegistry, AutogradWrapperAndFbgemmBackwardAreCountedOnce) {
  // wrapper -> CppNode<SplitLookupFunction_adagrad_Op> -> zero_ (fill kernel on [128, 48])
  Trace trace;
  Op wrapper = op(1,
                  "autograd::engine::evaluate_function: "
                  "torch::autograd::CppNode<SplitLookupFunction_adagrad_Op>",
                  {tensor({128, 48})});
  wrapper.child_ids = {2};
  Op node =
      op(2, "torch::autograd::CppNode<SplitLookupFunction_adagrad_Op>", {tensor({128, 48})}, 1);
  node.child_ids = {3};
  trace.ops = {wrapper, node, op(3, "aten::zero_", {tensor({128, 48})}, 2)};
  const OpKernelPlan plan = source.expand_kernels(trace.ops[0], trace);
  // The zero_ kernel of the child, plus one placeholder for the lookup backward the trace
  // cannot size, reported once.
  ASSERT_EQ(plan.kernels.size(), 2u);
  EXPECT_EQ(plan.kernels[0].kernel.category, KernelCategory::kMemory);
  EXPECT_EQ(plan.kernels[1].kernel.category, KernelCategory::kEmbeddingLookup);
  EXPECT_EQ(plan.kernels[1].model, kUnmodeledModel);
  ASSERT_EQ(plan.uncovered.size(), 1u);
  EXPECT_EQ(plan.uncovered[0].op_id, 2);
}

TEST_F(KernelRegistry, PredictsMeasuredKernelsFromTheirOpsShapes) {
  const Trace trace = hand_built_trace();
  const Op& addmm = trace.ops[2];
  EXPECT_NEAR(source.kernel_duration_us(addmm, addmm.kernels[0]), gemm_us, 1e-9);
  const Op& custom = trace.ops[4];
  EXPECT_EQ(source.predict_kernel(custom, custom.kernels[0]).model, kUnmodeledModel);
  const Op& all_reduce = trace.ops[6];
  EXPECT_THROW(source.kernel_duration_us(all_reduce, all_reduce.kernels[0]), RuntimeFailure);
  // Two measured GEMM kernels in one op share the op's predicted GEMM time.
  Op split = addmm;
  split.kernels.push_back(measured("splitKreduce_kernel", 2));
  EXPECT_NEAR(source.kernel_duration_us(split, split.kernels[0]), std::max(2.0, gemm_us / 2), 1e-9);
}

TEST_F(KernelRegistry, PerCategoryComparisonAndCoverage) {
  const ModelVsMeasured result = compare_with_measured(hand_built_trace(), source);
  ASSERT_EQ(result.categories.size(), 4u);
  const CategoryComparison& gemm = result.categories[0];
  EXPECT_EQ(gemm.category, KernelCategory::kGemm);
  EXPECT_DOUBLE_EQ(gemm.measured_us, 20);
  EXPECT_NEAR(gemm.predicted_us, gemm_us, 1e-9);
  const CategoryComparison& embedding = result.categories[1];
  EXPECT_DOUBLE_EQ(embedding.measured_us, 10);
  EXPECT_NEAR(embedding.predicted_us, embedding_us, 1e-9);
  const CategoryComparison& memory = result.categories[2];
  EXPECT_DOUBLE_EQ(memory.measured_us, 4);
  EXPECT_DOUBLE_EQ(memory.predicted_us, 2);  // 64 KiB concat: floor
  const CategoryComparison& other = result.categories[3];
  EXPECT_DOUBLE_EQ(other.measured_us, 8);   // relu 3 + custom 5 (all-reduce excluded)
  EXPECT_DOUBLE_EQ(other.predicted_us, 4);  // relu floor + placeholder floor
  EXPECT_EQ(other.predicted_kernels, 2u);

  const CoverageTable& coverage = result.coverage;
  EXPECT_EQ(coverage.ops_total, 6u);  // linear, relu, custom, view, embedding_bag, cat
  EXPECT_EQ(coverage.ops_covered, 5u);
  EXPECT_NEAR(coverage.predicted_us_total, gemm_us + embedding_us + 6, 1e-9);
  EXPECT_NEAR(coverage.predicted_us_covered, gemm_us + embedding_us + 4, 1e-9);
  ASSERT_EQ(coverage.uncovered.size(), 1u);
  EXPECT_EQ(coverage.uncovered[0].op_name, "my::custom_op");
  EXPECT_EQ(coverage.uncovered[0].status, "unknown-op");
  EXPECT_DOUBLE_EQ(coverage.uncovered[0].placeholder_us, 2);
  const std::string table = format_comparison(result);
  EXPECT_NE(table.find("coverage: 5 of 6 top-level ops"), std::string::npos) << table;
}

}  // namespace
}  // namespace perfsim::kernels

// The trace model's tree queries on hand-built traces.
#include <gtest/gtest.h>

#include "perfsim/trace.hpp"

namespace perfsim {
namespace {

Op make_op(std::int64_t id, std::int64_t parent, bool annotation, const std::string& name) {
  Op op;
  op.id = id;
  op.parent_id = parent;
  op.is_annotation = annotation;
  op.name = name;
  return op;
}

TEST(TraceModel, TopLevelOpsSkipAnnotationsAndNestedOps) {
  Trace trace;
  trace.ops = {make_op(1, 1, true, "[root]"),  // self-parented, as ET files write the root
               make_op(2, 1, true, "## block ##"), make_op(3, 2, false, "aten::linear"),
               make_op(4, 3, false, "aten::addmm"), make_op(5, 1, false, "aten::relu")};
  trace.ops[0].child_ids = {2, 5};
  trace.ops[1].child_ids = {3};
  trace.ops[2].child_ids = {4};
  trace.reindex();
  EXPECT_EQ(trace.top_level_positions(), (std::vector<std::size_t>{2, 4}));
}

TEST(TraceModel, ParentCycleDoesNotLoopForever) {
  Trace trace;
  trace.ops = {make_op(1, 2, true, "a"), make_op(2, 1, true, "b"), make_op(3, 1, false, "c")};
  trace.reindex();
  EXPECT_EQ(trace.top_level_positions(), (std::vector<std::size_t>{2}));
}

TEST(TraceModel, KernelsUnderFollowLaunchOrder) {
  Trace trace;
  trace.ops = {make_op(1, kNoParent, false, "outer"), make_op(2, 1, false, "inner")};
  trace.ops[0].child_ids = {2};
  Kernel late;
  late.name = "late";
  late.correlation_id = 9;
  late.measured_start_us = 5;
  Kernel early;
  early.name = "early";
  early.correlation_id = 3;
  early.measured_start_us = 1;
  trace.ops[0].kernels = {late};
  trace.ops[1].kernels = {early};
  trace.reindex();
  auto kernels = trace.kernels_under(0);
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_EQ(kernels[0]->name, "early");
  EXPECT_EQ(kernels[1]->name, "late");
}

TEST(TraceModel, KernelCategoriesOfRealKernelNames) {
  EXPECT_EQ(classify_kernel("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*)"),
            KernelCategory::kCommunication);
  EXPECT_EQ(classify_kernel("volta_sgemm_128x32_nt"), KernelCategory::kGemm);
  EXPECT_EQ(classify_kernel("void split_embedding_codegen_forward_unweighted_kernel<float>"),
            KernelCategory::kEmbeddingLookup);
  EXPECT_EQ(classify_kernel("Memcpy HtoD (Pageable -> Device)"), KernelCategory::kMemory);
  EXPECT_EQ(classify_kernel("void at::native::vectorized_elementwise_kernel<4>"),
            KernelCategory::kOther);
}

}  // namespace
}  // namespace perfsim

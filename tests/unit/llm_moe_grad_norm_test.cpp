// Gradient clipping's all-reduces with MoE as Megatron-Core makes them (optimizer/__init__.py,
// optimizer.py, clip_grads.py): with EP > 1 an expert optimizer is chained beside the dense one.
// Without the distributed optimizer its squared norm is its own, summed by one all-reduce of one
// fp32 over ETP x EP x PP; with it both optimizers' group is the whole job and ChainedOptimizer
// makes one norm of both, summed by one all-reduce over the job. The dense sum without it is
// one fp32 over the model-parallel group, TP x PP (llm_grad_norm_test has the dense cases).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "generators/llm/llm_rank_generator.hpp"
#include "support/grad_clip_reductions.hpp"
#include "support/op_phase.hpp"
#include "support/tiny_llm.hpp"

namespace perfsim::generators::llm {
namespace {

using test_support::op_phase;

using test_support::clip_all_reduces;
using test_support::Reduction;

// TP 2 x PP 2 x DP 4 with sequence parallelism (16 ranks, tp-cp-ep-dp-pp: rank = tp + 2 dp +
// 8 pp) of the 2-layer tiny MoE with its first layer dense: stage 0 holds no expert, stage 1 one
// MoE layer.
TransformerConfig model() {
  TransformerConfig moe = test_support::tiny_moe();
  moe.moe.first_dense_layers = 1;
  return moe;
}

ParallelConfig layout(int ep, int zero_stage) {
  ParallelConfig parallel{.tp = 2, .pp = 2, .dp = 4, .ep = ep, .sequence_parallel = true};
  parallel.zero_stage = zero_stage;
  return parallel;
}

// The grad-clip kernels' element counts, in trace order: norms and scalings.
struct ClipKernels {
  std::vector<std::int64_t> norms;
  std::vector<std::int64_t> scalings;
};

ClipKernels clip_kernels(const TransformerConfig& model, const ParallelConfig& parallel, int rank) {
  ClipKernels kernels;
  for (const Op& op : generate_llm_rank(model, parallel, rank).ops) {
    if (op.comm || op_phase(op) != "grad-clip")
      continue;
    (op.name == "aten::linalg_vector_norm" ? kernels.norms : kernels.scalings)
        .push_back(op.inputs.at(0).numel);
  }
  return kernels;
}

TEST(LlmGradNorm, WithoutExpertParallelismTheExpertsAreDenseParameters) {
  // EP 1: one optimizer, one norm, summed over TP x PP {0, 1, 8, 9} for rank 0.
  const ParallelConfig parallel = layout(1, 0);
  EXPECT_EQ(test_support::group_members(parallel, 0, model_parallel_group_name(parallel, 0)),
            (std::vector<int>{0, 1, 8, 9}));
  for (const int rank : {0, 11}) {
    EXPECT_EQ(clip_all_reduces(model(), parallel, rank),
              (std::vector<Reduction>{{model_parallel_group_name(parallel, rank), 4, 4}}))
        << rank;
    EXPECT_EQ(clip_kernels(model(), parallel, rank).norms.size(), 1u);
    EXPECT_EQ(clip_kernels(model(), parallel, rank).scalings.size(), 1u);
  }
}

TEST(LlmGradNorm, ExpertOptimizerSumsOverExpertTensorTimesExpertTimesPipeline) {
  // EP 2: the dense norm over TP x PP, then the experts' over ETP x EP x PP (2 x 2 x 2 = 8
  // ranks: dp 0 and 1 are one EP group), on stage 0 too although it holds no expert (Megatron
  // builds the expert optimizer on every rank; the norm's collective needs it).
  const ParallelConfig parallel = layout(2, 0);
  for (const int rank : {0, 11}) {
    EXPECT_EQ(clip_all_reduces(model(), parallel, rank),
              (std::vector<Reduction>{{model_parallel_group_name(parallel, rank), 4, 4},
                                      {expert_model_parallel_group_name(parallel, rank), 8, 4}}))
        << rank;
  }
  EXPECT_EQ(test_support::group_members(parallel, 0, expert_model_parallel_group_name(parallel, 0)),
            (std::vector<int>{0, 1, 2, 3, 8, 9, 10, 11}));
  EXPECT_EQ(
      test_support::group_members(parallel, 13, expert_model_parallel_group_name(parallel, 13)),
      (std::vector<int>{4, 5, 6, 7, 12, 13, 14, 15}));  // dp 2 and 3
  EXPECT_NE(expert_model_parallel_group_name(parallel, 0),
            expert_model_parallel_group_name(parallel, 13));
  // Two norms on both stages; stage 0's expert optimizer has no parameter to scale.
  EXPECT_EQ(clip_kernels(model(), parallel, 0).norms.size(), 2u);
  EXPECT_EQ(clip_kernels(model(), parallel, 0).norms.back(), 0);
  EXPECT_EQ(clip_kernels(model(), parallel, 0).scalings.size(), 1u);
  EXPECT_EQ(clip_kernels(model(), parallel, 11).scalings.size(), 2u);
}

TEST(LlmGradNorm, DistributedOptimizerMakesOneNormOfBoth) {
  // ZeRO 1 (--use-distributed-optimizer): one norm of the dense and expert shards summed by one
  // all-reduce over the whole job (16 ranks); each optimizer still scales its own gradients.
  for (const int ep : {1, 2}) {
    const ParallelConfig parallel = layout(ep, 1);
    EXPECT_EQ(clip_all_reduces(model(), parallel, 11),
              (std::vector<Reduction>{{distributed_optimizer_group_name(parallel, 11), 16, 4}}))
        << "ep " << ep;
    EXPECT_EQ(
        test_support::group_members(parallel, 11, distributed_optimizer_group_name(parallel, 11))
            .size(),
        16u);
    const ClipKernels kernels = clip_kernels(model(), parallel, 11);
    EXPECT_EQ(kernels.norms.size(), 1u);
    EXPECT_EQ(kernels.scalings.size(), ep == 2 ? 2u : 1u);
  }
}

TEST(LlmGradNorm, GroupsOfOneRankAreNotReduced) {
  // TP 1, PP 1, DP 2, EP 2, both layers MoE: TP x PP is one rank (no dense all-reduce);
  // ETP x EP x PP holds the EP group's ranks (a communicator of its own, as in Megatron). The
  // expert norm reads the 2 layers x 2 local experts x (64 x 128 + 128 x 64) expert gradients.
  const ParallelConfig parallel{.dp = 2, .ep = 2};
  const TransformerConfig moe = test_support::tiny_moe();
  EXPECT_EQ(clip_all_reduces(moe, parallel, 1),
            (std::vector<Reduction>{{expert_model_parallel_group_name(parallel, 1), 2, 4}}));
  EXPECT_EQ(test_support::group_members(parallel, 1, expert_model_parallel_group_name(parallel, 1)),
            test_support::group_members(parallel, 1, ep_group_name(parallel, 1)));
  EXPECT_EQ(clip_kernels(moe, parallel, 1).norms.back(), 2 * 2 * (64 * 128 + 128 * 64));
}

}  // namespace
}  // namespace perfsim::generators::llm

// The dense gradient norm as Megatron-Core computes it (optimizer.py get_grad_norm /
// clip_grad_norm, clip_grads.py get_grad_norm_fp32): one all-reduce of one fp32 over the
// optimizer's grad_stats_parallel_group, the model-parallel group (TP x PP, no CP) without the
// distributed optimizer and the whole job with it (one distributed-optimizer instance); and
// the norm kernel reads the gradients only once this rank's gradient reductions have finished
// (train_step's finish_grad_sync precedes optimizer.step()). The exact all-reduces per rank on
// tiny layouts, and the order on a simulated timeline.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "generators/llm/llm_rank_generator.hpp"
#include "scenario/llm_simulation.hpp"
#include "support/dgx_a100_scenario.hpp"
#include "support/every_rank_in_process.hpp"
#include "support/grad_clip_reductions.hpp"
#include "support/small_gpt.hpp"
#include "support/tiny_llm.hpp"

namespace perfsim::generators::llm {
namespace {

using test_support::clip_all_reduces;
using test_support::Reduction;

// TP 2 x CP 2 x PP 2 (tp-cp-ep-dp-pp: rank = tp + 2 cp + 4 pp) of the tiny GPT.
ParallelConfig tp_cp_pp(int zero_stage) {
  ParallelConfig parallel{.tp = 2, .pp = 2, .dp = 1, .cp = 2};
  parallel.zero_stage = zero_stage;
  return parallel;
}

TEST(LlmDenseGradNorm, OneAllReduceOverTensorTimesPipelineWithoutContext) {
  // Without the distributed optimizer: the model-parallel group {tp 0..1} x {pp 0..1} of the
  // rank's CP index, one fp32. Rank 0 (cp 0) and rank 6 (tp 0, cp 1, pp 1).
  const ParallelConfig parallel = tp_cp_pp(0);
  EXPECT_EQ(clip_all_reduces(test_support::tiny_gpt(), parallel, 0),
            (std::vector<Reduction>{{model_parallel_group_name(parallel, 0), 4, 4}}));
  EXPECT_EQ(clip_all_reduces(test_support::tiny_gpt(), parallel, 6),
            (std::vector<Reduction>{{model_parallel_group_name(parallel, 6), 4, 4}}));
  EXPECT_EQ(test_support::group_members(parallel, 0, model_parallel_group_name(parallel, 0)),
            (std::vector<int>{0, 1, 4, 5}));
  EXPECT_EQ(test_support::group_members(parallel, 6, model_parallel_group_name(parallel, 6)),
            (std::vector<int>{2, 3, 6, 7}));
  EXPECT_EQ(model_parallel_group_name(parallel, 0), "mp/0");
  EXPECT_EQ(model_parallel_group_name(parallel, 6), "mp/1");
  // The same sum as before over TP and PP separately, now in one collective: no TP or PP group
  // is reduced on in grad-clip.
  for (const Reduction& reduction : clip_all_reduces(test_support::tiny_gpt(), parallel, 3)) {
    EXPECT_NE(std::get<0>(reduction), tp_group_name(parallel, 3));
    EXPECT_NE(std::get<0>(reduction), pp_group_name(parallel, 3));
  }
}

TEST(LlmDenseGradNorm, DistributedOptimizerSumsOverTheWholeJob) {
  // ZeRO 1: the norm of the local shard summed over all 8 ranks (TP x CP x DP x PP), one group
  // of the job that every rank names alike.
  const ParallelConfig parallel = tp_cp_pp(1);
  for (const int rank : {0, 5, 7}) {
    EXPECT_EQ(clip_all_reduces(test_support::tiny_gpt(), parallel, rank),
              (std::vector<Reduction>{{"dopt/0", 8, 4}}))
        << rank;
    EXPECT_EQ(test_support::group_members(parallel, rank,
                                          distributed_optimizer_group_name(parallel, rank)),
              (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  }
  // Listed once among the job's groups.
  const std::vector<ProcessGroup> groups = all_process_groups(parallel);
  EXPECT_EQ(std::count_if(groups.begin(), groups.end(),
                          [](const ProcessGroup& group) { return group.name == "dopt/0"; }),
            1);
}

TEST(LlmDenseGradNorm, NoCollectiveWhereTheGroupIsOneRank) {
  // TP 1 PP 1 DP 2 without ZeRO: the model-parallel group is the rank alone (no group made).
  const ParallelConfig data_parallel{.dp = 2};
  EXPECT_TRUE(clip_all_reduces(test_support::tiny_gpt(), data_parallel, 1).empty());
  EXPECT_TRUE(
      test_support::group_members(data_parallel, 1, model_parallel_group_name(data_parallel, 1))
          .empty());
  // With ZeRO the same ranks hold halves of the gradients: summed over both.
  ParallelConfig sharded = data_parallel;
  sharded.zero_stage = 1;
  EXPECT_EQ(clip_all_reduces(test_support::tiny_gpt(), sharded, 1),
            (std::vector<Reduction>{{"dopt/0", 2, 4}}));
}

// The simulated timeline of rank 0 of a small GPT, DP 4 (ZeRO 0 all-reduces the buckets, ZeRO
// 1 reduce-scatters them) on one DGX A100: the start of the norm kernel and the end of the
// last gradient reduction on the DP or expert-DP group before it.
struct NormTiming {
  double norm_start_us = -1;
  double reductions_end_us = -1;
  int reductions = 0;
};

NormTiming norm_timing(const TransformerConfig& model, const ParallelConfig& parallel) {
  const scenario::LlmScenario scenario = test_support::dgx_a100_scenario(model, parallel, 1);
  const std::vector<RankResult> results =
      test_support::simulate_every_rank(scenario, /*record_timeline=*/true);
  const RankResult& rank0 = results.front();
  const std::string dp = dp_group_name(parallel, 0) + "#";
  const std::string edp = expert_gradient_group_name(parallel, 0) + "#";
  NormTiming timing;
  for (const TimelineSlice& slice : rank0.timeline) {
    if (slice.name.find("linalg_vector_norm") != std::string::npos && timing.norm_start_us < 0)
      timing.norm_start_us = slice.start_us;
  }
  for (const TimelineSlice& slice : rank0.timeline) {
    const bool gradient_group =
        slice.collective_key.rfind(dp, 0) == 0 || slice.collective_key.rfind(edp, 0) == 0;
    // The reductions, not the parameter all-gathers that follow the optimizer step.
    const bool reduction = slice.name.find("AllGather") == std::string::npos;
    if (!gradient_group || !reduction || slice.start_us > timing.norm_start_us)
      continue;
    ++timing.reductions;
    timing.reductions_end_us =
        std::max(timing.reductions_end_us, slice.start_us + slice.duration_us);
  }
  return timing;
}

TEST(LlmDenseGradNorm, NormKernelWaitsForTheGradientReduction) {
  for (const int zero_stage : {0, 1}) {
    for (const bool overlap : {false, true}) {
      ParallelConfig parallel{.dp = 4};
      parallel.zero_stage = zero_stage;
      parallel.overlap_grad_reduce = overlap;
      const NormTiming timing = norm_timing(test_support::small_gpt(2, 1024, 8), parallel);
      const std::string label =
          "zero " + std::to_string(zero_stage) + (overlap ? " overlapped" : " after backward");
      ASSERT_GE(timing.norm_start_us, 0) << label;
      EXPECT_GT(timing.reductions, 0) << label;
      EXPECT_GE(timing.norm_start_us, timing.reductions_end_us) << label;
    }
  }
}

TEST(LlmDenseGradNorm, NormKernelWaitsForTheExpertGradientReductionToo) {
  // EP 2 of DP 4: the experts' gradients reduced over expert-DP 2 apart from the dense ones;
  // the first norm kernel (the dense one without ZeRO) waits for both, as finish_grad_sync
  // does for every bucket group.
  for (const int zero_stage : {0, 1}) {
    ParallelConfig parallel{.dp = 4, .ep = 2};
    parallel.zero_stage = zero_stage;
    TransformerConfig model = test_support::tiny_moe();
    const NormTiming timing = norm_timing(model, parallel);
    ASSERT_GE(timing.norm_start_us, 0) << zero_stage;
    EXPECT_GT(timing.reductions, 1) << zero_stage;
    EXPECT_GE(timing.norm_start_us, timing.reductions_end_us) << zero_stage;
  }
}

TEST(LlmDenseGradNorm, NormReadsTheReducedShardWithZero) {
  // ZeRO 1: the norm kernel's first input is the rank's shard of the gradient buffer (what the
  // reduce-scatters wrote), its other inputs the reduce-scatters' outputs themselves.
  ParallelConfig parallel{.dp = 4};
  parallel.zero_stage = 1;
  const Trace trace = generate_llm_rank(test_support::tiny_gpt(), parallel, 2);
  std::vector<std::int64_t> scattered;
  std::int64_t scattered_elements = 0;
  const Op* norm = nullptr;
  for (const Op& op : trace.ops) {
    if (op.comm && op.comm->kind == CollectiveKind::kReduceScatter) {
      scattered.push_back(op.outputs.at(0).tensor_id);
      scattered_elements += op.outputs.at(0).numel;
    }
    if (op.name == "aten::linalg_vector_norm" && !norm)
      norm = &op;
  }
  ASSERT_NE(norm, nullptr);
  ASSERT_FALSE(scattered.empty());
  EXPECT_EQ(norm->inputs.at(0).numel, scattered_elements);
  std::vector<std::int64_t> read;
  for (std::size_t i = 1; i < norm->inputs.size(); ++i)
    read.push_back(norm->inputs[i].tensor_id);
  EXPECT_EQ(read, scattered);
}

}  // namespace
}  // namespace perfsim::generators::llm

// The embedding group's gradient all-reduce (Megatron-Core finalize_model_grads,
// _allreduce_word_embedding_grads): with a pipeline, a tied output layer is a second copy of
// the input embedding on the last stage, and the two copies' main gradients are all-reduced
// over the first and last stage's ranks of one TP/CP/DP index after the DP sync; multi-token
// prediction's embedding on the last stage is held twice in the same way. Exact collectives per
// rank on tiny layouts, the group's members, and the order on a simulated timeline.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "generators/llm/llm_rank_generator.hpp"
#include "scenario/llm_simulation.hpp"
#include "support/dgx_a100_scenario.hpp"
#include "support/every_rank_in_process.hpp"
#include "support/grad_clip_reductions.hpp"
#include "support/op_phase.hpp"
#include "support/tiny_llm.hpp"

namespace perfsim::generators::llm {
namespace {

// (group, group size, bytes) of every all-reduce on an embedding group ("emb/..."), with the
// phase it runs in.
struct EmbeddingReduction {
  std::string group;
  int group_size = 0;
  Bytes bytes = 0;
  std::string phase;
  bool operator==(const EmbeddingReduction&) const = default;
};

std::vector<EmbeddingReduction> embedding_reductions(const Trace& trace) {
  std::vector<EmbeddingReduction> found;
  for (const Op& op : trace.ops) {
    if (!op.comm || op.comm->process_group.rfind("emb/", 0) != 0)
      continue;
    EXPECT_EQ(op.comm->kind, CollectiveKind::kAllReduce);
    EXPECT_EQ(op.comm->bytes_out, op.comm->bytes_in);
    found.push_back({op.comm->process_group, op.comm->group_size, op.comm->bytes_in,
                     test_support::op_phase(op)});
  }
  return found;
}

// TP 2 x DP 2 x PP 3 (tp-cp-ep-dp-pp: rank = tp + 2 dp + 4 pp): a first, a middle and a last
// stage.
ParallelConfig tp2_dp2_pp3() {
  return ParallelConfig{.tp = 2, .pp = 3, .dp = 2};
}

// The tiny GPT with 9 layers, three per stage.
TransformerConfig tiny_gpt_for_three_stages(bool tied) {
  TransformerConfig model = test_support::tiny_gpt();
  model.layers = 9;
  model.tied_embeddings = tied;
  return model;
}

TEST(LlmEmbeddingGroup, TiedEmbeddingGradientAllReducedBetweenFirstAndLastStage) {
  const ParallelConfig parallel = tp2_dp2_pp3();
  const TransformerConfig model = tiny_gpt_for_three_stages(true);
  // vocab 2048 (a multiple of 128 x TP) / TP 2 x hidden 256 fp32 main gradients.
  const Bytes bytes = 2048 / 2 * 256 * 4;
  for (const int rank : {0, 3, 8, 11}) {  // stage 0: ranks 0-3, stage 2: ranks 8-11
    EXPECT_EQ(embedding_reductions(generate_llm_rank(model, parallel, rank)),
              (std::vector<EmbeddingReduction>{
                  {embedding_group_name(parallel, rank), 2, bytes, "grad-sync"}}))
        << rank;
  }
  for (const int rank : {4, 5, 6, 7})  // the middle stage holds neither end
    EXPECT_TRUE(embedding_reductions(generate_llm_rank(model, parallel, rank)).empty()) << rank;
  // Rank 3 (tp 1, dp 1, pp 0) pairs with rank 11 (tp 1, dp 1, pp 2), under one name.
  EXPECT_EQ(embedding_group_name(parallel, 3), embedding_group_name(parallel, 11));
  EXPECT_NE(embedding_group_name(parallel, 3), embedding_group_name(parallel, 2));
  EXPECT_EQ(test_support::group_members(parallel, 3, embedding_group_name(parallel, 3)),
            (std::vector<int>{3, 11}));
  EXPECT_EQ(test_support::group_members(parallel, 11, embedding_group_name(parallel, 11)),
            (std::vector<int>{3, 11}));
  EXPECT_TRUE(test_support::group_members(parallel, 7, embedding_group_name(parallel, 7)).empty());
}

TEST(LlmEmbeddingGroup, GradientBufferDtypeAndWholeTensorWithTheDistributedOptimizer) {
  // bf16 main gradients, ZeRO 1 over DP 2: still the whole v / TP x h tensor, in bf16.
  ParallelConfig parallel = tp2_dp2_pp3();
  parallel.zero_stage = 1;
  parallel.gradient_dtype = DType::kBFloat16;
  const std::vector<EmbeddingReduction> found =
      embedding_reductions(generate_llm_rank(tiny_gpt_for_three_stages(true), parallel, 9));
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found.front().bytes, Bytes{2048 / 2 * 256 * 2});
}

TEST(LlmEmbeddingGroup, NoneWithoutASecondCopy) {
  // Untied with a pipeline: each end owns its matrix. Tied without a pipeline: one tensor.
  const ParallelConfig parallel = tp2_dp2_pp3();
  for (const int rank : {0, 8})
    EXPECT_TRUE(
        embedding_reductions(generate_llm_rank(tiny_gpt_for_three_stages(false), parallel, rank))
            .empty())
        << rank;
  const ParallelConfig one_stage{.tp = 2, .dp = 2};
  EXPECT_TRUE(
      embedding_reductions(generate_llm_rank(test_support::tiny_gpt(), one_stage, 0)).empty());
  EXPECT_TRUE(
      test_support::group_members(one_stage, 0, embedding_group_name(one_stage, 0)).empty());
}

TEST(LlmEmbeddingGroup, MultiTokenPredictionEmbeddingIsASecondCopyToo) {
  // An untied model with multi-token prediction on PP 2: the last stage's modules hold their
  // own copy of the embedding, all-reduced with the first stage's (mtp_num_layers > 0).
  TransformerConfig model = test_support::tiny_mla();
  model.tied_embeddings = false;
  model.mtp_num_layers = 1;
  const ParallelConfig parallel{.tp = 1, .pp = 2, .dp = 1};
  const Bytes bytes = 1024 * 256 * 4;
  for (const int rank : {0, 1})
    EXPECT_EQ(embedding_reductions(generate_llm_rank(model, parallel, rank)),
              (std::vector<EmbeddingReduction>{
                  {embedding_group_name(parallel, rank), 2, bytes, "grad-sync"}}))
        << rank;
  model.mtp_num_layers = 0;
  EXPECT_TRUE(embedding_reductions(generate_llm_rank(model, parallel, 1)).empty());
}

TEST(LlmEmbeddingGroup, NormKernelReadsTheReducedEmbeddingGradient) {
  // The all-reduce's buffer is an input of the first norm kernel (the engine makes it wait)
  // and it comes after the DP gradient reductions in the trace.
  const ParallelConfig parallel = tp2_dp2_pp3();
  const Trace trace = generate_llm_rank(tiny_gpt_for_three_stages(true), parallel, 8);
  std::int64_t reduced = -1;
  std::size_t reduced_at = 0, last_dp_at = 0;
  const Op* norm = nullptr;
  for (std::size_t position = 0; position < trace.ops.size(); ++position) {
    const Op& op = trace.ops[position];
    if (op.comm && op.comm->process_group == embedding_group_name(parallel, 8)) {
      reduced = op.inputs.at(0).tensor_id;
      reduced_at = position;
    }
    if (op.comm && op.comm->process_group == dp_group_name(parallel, 8) && !norm)
      last_dp_at = position;
    if (op.name == "aten::linalg_vector_norm" && !norm)
      norm = &op;
  }
  ASSERT_NE(norm, nullptr);
  ASSERT_GE(reduced, 0);
  EXPECT_GT(reduced_at, last_dp_at);
  EXPECT_TRUE(std::any_of(norm->inputs.begin(), norm->inputs.end(),
                          [&](const TensorRef& input) { return input.tensor_id == reduced; }));
}

TEST(LlmEmbeddingGroup, SimulatedNormStartsAfterTheAllReduceEnds) {
  // Every rank of TP 1 x PP 2 x DP 2 in process: the all-reduce matches across the two stages
  // and the first stage's norm kernel starts once it has ended.
  const TransformerConfig model = test_support::tiny_gpt();
  const ParallelConfig parallel{.tp = 1, .pp = 2, .dp = 2};
  const scenario::LlmScenario scenario = test_support::dgx_a100_scenario(model, parallel, 1);
  const std::vector<RankResult> results =
      test_support::simulate_every_rank(scenario, /*record_timeline=*/true);
  const RankResult& rank0 = results.front();
  const std::string group = embedding_group_name(parallel, 0) + "#";
  double norm_start_us = -1, reduce_end_us = -1;
  for (const TimelineSlice& slice : rank0.timeline) {
    if (slice.name.find("linalg_vector_norm") != std::string::npos && norm_start_us < 0)
      norm_start_us = slice.start_us;
    if (slice.collective_key.rfind(group, 0) == 0)
      reduce_end_us = slice.start_us + slice.duration_us;
  }
  ASSERT_GE(reduce_end_us, 0);
  ASSERT_GE(norm_start_us, 0);
  EXPECT_GE(norm_start_us, reduce_end_us);
}

}  // namespace
}  // namespace perfsim::generators::llm

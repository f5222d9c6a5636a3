// Every rank of a layout must issue the same collectives as the other members of each of its
// groups, or a run deadlocks or pairs the wrong messages. Checked on the layouts this work made
// possible: non-default rank orders (with CP and EP, whose groups then interleave differently)
// and ZeRO 3 with experts (collectives on the expert-DP groups): all ranks generated, their
// collectives matched group by group (engine::find_collective_mismatch), and the run simulated
// to its end.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "generators/llm/llm_rank_generator.hpp"
#include "support/tiny_llm.hpp"
#include "support/unit_duration_run.hpp"

namespace perfsim::generators::llm {
namespace {

// The shared tiny MoE with flash attention.
TransformerConfig tiny_moe() {
  TransformerConfig model = test_support::tiny_moe();
  model.attention = AttentionKernel::kFlash;
  return model;
}

void expect_runs_to_completion(const TransformerConfig& model, const ParallelConfig& parallel) {
  SCOPED_TRACE("order " + rank_order_name(parallel.order) + ", ZeRO " +
               std::to_string(parallel.zero_stage));
  validate(model, parallel);
  test_support::expect_runs_to_completion(test_support::generate_every_rank(model, parallel));
}

TEST(LlmLayoutMatching, PipelineInsideTheNodeWithContextAndExperts) {
  // TP 2, CP 2, EP 2 (= CP, as Megatron needs when pp is not last), DP 2, PP 2: 16 ranks.
  ParallelConfig parallel{.tp = 2, .pp = 2, .dp = 2, .cp = 2, .ep = 2};
  parallel.sequence_parallel = true;
  parallel.order = parse_rank_order("tp-cp-ep-pp-dp", "--order");
  expect_runs_to_completion(tiny_moe(), parallel);
}

TEST(LlmLayoutMatching, DataParallelInnermost) {
  ParallelConfig parallel{.tp = 2, .pp = 2, .dp = 2, .cp = 2, .ep = 2};
  parallel.sequence_parallel = true;
  parallel.order = parse_rank_order("dp-tp-cp-ep-pp", "--order");
  expect_runs_to_completion(tiny_moe(), parallel);
}

TEST(LlmLayoutMatching, ZeroThreeWithExperts) {
  for (int ep : {2, 4}) {
    ParallelConfig parallel{.tp = 1, .pp = 2, .dp = 4, .ep = ep, .zero_stage = 3};
    expect_runs_to_completion(tiny_moe(), parallel);
  }
  ParallelConfig interleaved_order{.tp = 1, .pp = 2, .dp = 4, .ep = 2, .zero_stage = 3};
  // DP fastest: the expert-DP groups are consecutive ranks, the EP groups strided.
  interleaved_order.order = parse_rank_order("dp-tp-cp-ep-pp", "--order");
  expect_runs_to_completion(tiny_moe(), interleaved_order);
}

}  // namespace
}  // namespace perfsim::generators::llm

// ZeRO 3 with experts: a MoE layer's dense parameters (attention, norms, router, shared
// experts) are sharded over DP x CP and all-gathered there before each use, its local experts
// sharded over the expert-DP group (DP x CP / EP) and gathered there, as Megatron-Core keeps
// expert parameters in their own buffers; gradients are reduce-scattered the same way. Counted
// on a 2-layer case, and the closed form's response.
#include <gtest/gtest.h>

#include <string>

#include "generators/llm/llm_rank_generator.hpp"
#include "memory/llm_memory.hpp"
#include "support/tiny_llm.hpp"

namespace perfsim::generators::llm {
namespace {

using test_support::tiny_moe;

// Per MoE layer: QKV 64 x 192, projection 64 x 64, two norms, router 64 x 4.
constexpr std::int64_t kDenseElements = 64 * 192 + 64 * 64 + 2 * 64 + 64 * 4;
// Per local expert: 64 x 128 + 128 x 64.
constexpr std::int64_t kExpertElements = 64 * 128 + 128 * 64;

struct GroupTraffic {
  int all_gathers = 0;
  int reduce_scatters = 0;
  Bytes gathered_bytes = 0;   // all-gather outputs
  Bytes scattered_bytes = 0;  // reduce-scatter inputs
};

// The parameter collectives of the transformer layers (the embeddings' are not sharded per
// layer: their gradients reduce after the backward, phase "grad-sync").
GroupTraffic traffic(const Trace& trace, const std::string& prefix) {
  GroupTraffic out;
  for (const Op& op : trace.ops) {
    if (!op.comm || op.comm->process_group.rfind(prefix, 0) != 0)
      continue;
    if (op.comm->kind == CollectiveKind::kAllGather) {
      ++out.all_gathers;
      out.gathered_bytes += op.comm->bytes_out;
    }
    if (op.comm->kind == CollectiveKind::kReduceScatter) {
      ++out.reduce_scatters;
      out.scattered_bytes += op.comm->bytes_in;
    }
  }
  return out;
}

TEST(LlmMoeZero3, ExpertsGatherOverExpertDataParallel) {
  // DP 4, EP 2: expert-DP 2, two local experts per rank.
  const Trace trace = generate_llm_rank(tiny_moe(), {.dp = 4, .ep = 2, .zero_stage = 3}, 0);
  // Each layer gathered for the forward and again for the backward of the one micro-batch,
  // its gradients reduce-scattered once: 2 layers.
  const GroupTraffic experts = traffic(trace, "edp/");
  EXPECT_EQ(experts.all_gathers, 2 * 2);
  EXPECT_EQ(experts.gathered_bytes, 2 * 2 * (2 * kExpertElements) * 2);  // bf16
  EXPECT_EQ(experts.reduce_scatters, 2);
  EXPECT_EQ(experts.scattered_bytes, 2 * (2 * kExpertElements) * 4);  // fp32 gradients
  const GroupTraffic dense = traffic(trace, "dp/");
  const std::int64_t padded = (kDenseElements + 3) / 4 * 4;  // shards of ceil(elements / 4)
  EXPECT_EQ(dense.all_gathers, 2 * 2);
  EXPECT_EQ(dense.gathered_bytes, 2 * 2 * padded * 2);
  // And the embeddings' (input, head, final norm) in one bucket after the backward.
  EXPECT_EQ(dense.reduce_scatters, 2 + 1);
}

TEST(LlmMoeZero3, WholeExpertsPerRankNeedNoExpertCollectives) {
  // DP 4, EP 4: expert-DP 1, every rank holds its one expert whole.
  const Trace trace = generate_llm_rank(tiny_moe(), {.dp = 4, .ep = 4, .zero_stage = 3}, 0);
  for (const Op& op : trace.ops) {
    if (op.comm) {
      EXPECT_NE(op.comm->process_group.rfind("edp/", 0), 0u) << op.comm->process_group;
    }
  }
  EXPECT_EQ(traffic(trace, "dp/").all_gathers, 2 * 2);
}

TEST(LlmMoeZero3, ClosedFormShardsExpertWeightsOverExpertDataParallel) {
  // Under ZeRO 3 a rank's expert weights are all experts / EP / (DP / EP) = all experts / DP
  // whatever EP is; without ZeRO they are all experts / EP.
  memory::DeviceMemory device;
  device.capacity_bytes = Bytes{80} << 30;
  auto weights = [&](int ep, int zero) {
    const ParallelConfig parallel{.dp = 4, .ep = ep, .zero_stage = zero};
    return static_cast<double>(
        memory::estimate_llm_memory(tiny_moe(), parallel, device).stages.at(0).parameter_bytes);
  };
  EXPECT_NEAR(weights(1, 3), weights(2, 3), 2);
  EXPECT_NEAR(weights(2, 3), weights(4, 3), 2);
  // 2 layers x 4 experts: a quarter of them (bf16) with EP 4 against all with EP 1.
  EXPECT_NEAR(weights(1, 0) - weights(4, 0), 2 * 2 * kExpertElements * (4 - 1), 2);
}

}  // namespace
}  // namespace perfsim::generators::llm

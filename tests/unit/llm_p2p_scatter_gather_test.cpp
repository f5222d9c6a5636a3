// Megatron-LM's scatter/gather of the stage-boundary tensor (ParallelConfig::p2p_scatter_gather,
// Narayanan et al. 2021 Sec. 4.1): with TP > 1 and no sequence parallelism each TP rank sends
// 1/TP of the [s, b, h] activation (and of its gradient) and the receiving stage all-gathers the
// slices over its TP group. Exact bytes per rank on small layouts, the cases where it does not
// apply, and a run of the generated traces through the engine (collectives match, no deadlock).
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "generators/llm/llm_rank_generator.hpp"
#include "support/tiny_llm.hpp"
#include "support/unit_duration_run.hpp"

namespace perfsim::generators::llm {
namespace {

// What one rank communicates, by group kind ("p2p", "tp", "dp", "pp") and collective kind.
struct CommTotals {
  std::map<std::string, std::map<CollectiveKind, int>> counts;
  std::map<std::string, std::map<CollectiveKind, Bytes>> bytes_in, bytes_out;
};

CommTotals comm_totals(const Trace& trace) {
  CommTotals totals;
  for (const Op& op : trace.ops) {
    if (!op.comm)
      continue;
    const std::string& group = op.comm->process_group;
    const std::string key =
        is_point_to_point(op.comm->kind) ? "p2p" : group.substr(0, group.find('/'));
    ++totals.counts[key][op.comm->kind];
    totals.bytes_in[key][op.comm->kind] += op.comm->bytes_in;
    totals.bytes_out[key][op.comm->kind] += op.comm->bytes_out;
  }
  return totals;
}

using test_support::expect_runs_to_completion;

ParallelConfig tp2_pp2(bool scatter_gather) {
  ParallelConfig parallel{.tp = 2, .pp = 2, .dp = 1};
  parallel.p2p_scatter_gather = scatter_gather;
  return parallel;
}

TEST(LlmP2pScatterGather, EachTpRankSendsItsSliceAndTheReceiverAllGathers) {
  const TransformerConfig model = test_support::tiny_gpt();  // s 128, b 2, h 256, bf16
  const ParallelConfig parallel = tp2_pp2(true);
  const int m = micro_batches_per_iteration(model, parallel);  // 32 / 2 = 16
  ASSERT_EQ(m, 16);
  const Bytes boundary_bytes = 128 * 2 * 256 * 2;  // s b h in bf16
  const Bytes slice_bytes = boundary_bytes / 2;    // one TP rank's half
  const std::vector<Trace> traces = test_support::generate_every_rank(model, parallel);
  for (const Trace& trace : traces) {
    const CommTotals with = comm_totals(trace);
    const CommTotals without = comm_totals(generate_llm_rank(model, tp2_pp2(false), trace.rank));
    // Stage 0 sends m activations and receives m gradients; stage 1 the other way round.
    EXPECT_EQ(with.counts.at("p2p").at(CollectiveKind::kSend), m) << trace.rank;
    EXPECT_EQ(with.counts.at("p2p").at(CollectiveKind::kRecv), m) << trace.rank;
    EXPECT_EQ(with.bytes_in.at("p2p").at(CollectiveKind::kSend), m * slice_bytes) << trace.rank;
    EXPECT_EQ(with.bytes_in.at("p2p").at(CollectiveKind::kRecv), m * slice_bytes) << trace.rank;
    EXPECT_EQ(without.bytes_in.at("p2p").at(CollectiveKind::kSend), m * boundary_bytes);
    // Each received slice is all-gathered over TP: one TP all-gather per received tensor (TP
    // without SP has no other all-gather), slice in, whole tensor out.
    EXPECT_EQ(without.counts.at("tp").count(CollectiveKind::kAllGather), 0u);
    EXPECT_EQ(with.counts.at("tp").at(CollectiveKind::kAllGather), m) << trace.rank;
    EXPECT_EQ(with.bytes_in.at("tp").at(CollectiveKind::kAllGather), m * slice_bytes);
    EXPECT_EQ(with.bytes_out.at("tp").at(CollectiveKind::kAllGather), m * boundary_bytes);
    // Nothing else changes.
    EXPECT_EQ(with.bytes_in.at("tp").at(CollectiveKind::kAllReduce),
              without.bytes_in.at("tp").at(CollectiveKind::kAllReduce));
  }
  expect_runs_to_completion(traces);
}

TEST(LlmP2pScatterGather, InterleavedStagesGatherEveryReceivedTensor) {
  const TransformerConfig model = test_support::tiny_gpt();  // 8 layers
  ParallelConfig parallel{.tp = 4, .pp = 4, .dp = 1, .virtual_stages = 2};
  parallel.p2p_scatter_gather = true;
  const int m = micro_batches_per_iteration(model, parallel);  // 16
  const Bytes slice_bytes = 128 * 2 * 256 * 2 / 4;
  const std::vector<Trace> traces = test_support::generate_every_rank(model, parallel);
  for (const Trace& trace : traces) {
    const int stage = coordinates_of(parallel, trace.rank).pp;
    // Every chunk but the first virtual stage's receives activations, every chunk but the last
    // virtual stage's receives gradients: 2 chunks x m, less m on the first and the last stage.
    const int received = 2 * 2 * m - (stage == 0 ? m : 0) - (stage == 3 ? m : 0);
    const CommTotals totals = comm_totals(trace);
    EXPECT_EQ(totals.counts.at("p2p").at(CollectiveKind::kRecv), received) << trace.rank;
    EXPECT_EQ(totals.bytes_in.at("p2p").at(CollectiveKind::kRecv), received * slice_bytes);
    EXPECT_EQ(totals.bytes_in.at("p2p").at(CollectiveKind::kSend), received * slice_bytes);
    EXPECT_EQ(totals.counts.at("tp").at(CollectiveKind::kAllGather), received) << trace.rank;
    EXPECT_EQ(totals.bytes_out.at("tp").at(CollectiveKind::kAllGather), received * 4 * slice_bytes);
  }
  expect_runs_to_completion(traces);
}

TEST(LlmP2pScatterGather, NotWithSequenceParallelismOrWithoutTensorParallelism) {
  const TransformerConfig model = test_support::tiny_gpt();
  for (ParallelConfig parallel : {ParallelConfig{.tp = 2, .pp = 2, .sequence_parallel = true},
                                  ParallelConfig{.tp = 1, .pp = 2, .dp = 2}}) {
    ParallelConfig scattered = parallel;
    scattered.p2p_scatter_gather = true;
    for (int rank = 0; rank < parallel.world_size(); ++rank) {
      const CommTotals with = comm_totals(generate_llm_rank(model, scattered, rank));
      const CommTotals without = comm_totals(generate_llm_rank(model, parallel, rank));
      EXPECT_EQ(with.counts, without.counts) << rank;
      EXPECT_EQ(with.bytes_in, without.bytes_in) << rank;
    }
  }
}

}  // namespace
}  // namespace perfsim::generators::llm

// Interleaved pipelines of two stages (PP 2, virtual stages > 1, Megatron-LM with
// overlap_p2p_comm): the ring's wrap-around link is the backward link, so one rank pair carries
// activations and gradients in both directions. Checked against hand counts of each message
// stream, the engine's pairing by match tag on a hand-built pair, and the schedule's time
// against the interleaved bubble (p - 1) / (v m) of Narayanan et al. 2021, Sec. 2.2.2.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "generators/llm/llm_rank_generator.hpp"
#include "mpi_sim/engine/collective_matching.hpp"
#include "mpi_sim/engine/in_process_clock_sync.hpp"
#include "mpi_sim/engine/local_scheduler.hpp"
#include "mpi_sim/engine/measured_durations.hpp"
#include "mpi_sim/engine/rank_program.hpp"
#include "perfsim/error.hpp"
#include "support/free_collectives.hpp"
#include "support/tiny_llm.hpp"
#include "support/trace_builder.hpp"
#include "support/unit_duration_run.hpp"

namespace perfsim::generators::llm {
namespace {

// tiny_gpt's 8 layers over PP 2 x VP 2: chunks of 2 layers; DP 2: 32 / (2 x 2) = 8 micro-batches.
ParallelConfig two_stages_two_chunks() {
  return ParallelConfig{.tp = 1, .pp = 2, .dp = 2, .virtual_stages = 2};
}

TEST(TwoStageInterleaving, NeedsP2pOverlapAsMegatronDoes) {
  const TransformerConfig model = test_support::tiny_gpt();
  ParallelConfig parallel = two_stages_two_chunks();
  EXPECT_NO_THROW(validate(model, parallel));
  // Megatron-LM's arguments.py refuses batched exchanges between the same two ranks.
  parallel.overlap_p2p_comm = false;
  try {
    validate(model, parallel);
    FAIL() << "PP 2 interleaving without overlap_p2p_comm was accepted";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("overlap_p2p_comm"), std::string::npos)
        << error.what();
  }
  // One stage: nothing to interleave (Megatron-LM refuses it too).
  EXPECT_THROW(validate(model, ParallelConfig{.tp = 1, .pp = 1, .dp = 2, .virtual_stages = 2}),
               InputError);
  // Three stages: a batched exchange holds one transfer per rank pair. 12 layers over PP 3 x VP 2,
  // 24 / (2 x DP 2) = 6 micro-batches.
  TransformerConfig twelve_layers = model;
  twelve_layers.layers = 12;
  twelve_layers.global_batch = 24;
  parallel.pp = 3;
  EXPECT_NO_THROW(validate(twelve_layers, parallel));
}

// (kind, peer, match tag) -> count, over a rank's stage-boundary transfers.
using StreamKey = std::tuple<CollectiveKind, int, std::int64_t>;
std::map<StreamKey, int> transfers(const Trace& trace) {
  std::map<StreamKey, int> counts;
  for (const Op& op : trace.ops) {
    if (op.comm && is_point_to_point(op.comm->kind))
      ++counts[{op.comm->kind, op.comm->peer_rank, op.comm->match_tag}];
  }
  return counts;
}

TEST(TwoStageInterleaving, EachStreamCarriesItsHandCount) {
  const TransformerConfig model = test_support::tiny_gpt();
  const ParallelConfig parallel = two_stages_two_chunks();
  const int m = micro_batches_per_iteration(model, parallel), v = 2;
  ASSERT_EQ(m, 8);
  constexpr CollectiveKind kSend = CollectiveKind::kSend, kRecv = CollectiveKind::kRecv;
  for (int rank = 0; rank < parallel.world_size(); ++rank) {
    const RankCoordinates c = coordinates_of(parallel, rank);
    const int peer = rank_of(parallel, {c.tp, c.dp, 1 - c.pp, c.cp});
    // Stage 0 runs virtual stages 0 and 2, stage 1 runs 1 and 3. Activations (tag 0) leave
    // every virtual stage but the last and reach every one but the first; gradients (tag 1)
    // the other way round: v m on one side of each stream, (v - 1) m on the other.
    const std::map<StreamKey, int> expected =
        c.pp == 0 ? std::map<StreamKey, int>{{{kSend, peer, 0}, v * m},
                                             {{kRecv, peer, 0}, (v - 1) * m},
                                             {{kSend, peer, 1}, (v - 1) * m},
                                             {{kRecv, peer, 1}, v * m}}
                  : std::map<StreamKey, int>{{{kRecv, peer, 0}, v * m},
                                             {{kSend, peer, 0}, (v - 1) * m},
                                             {{kRecv, peer, 1}, (v - 1) * m},
                                             {{kSend, peer, 1}, v * m}};
    EXPECT_EQ(transfers(generate_llm_rank(model, parallel, rank)), expected) << "rank " << rank;
  }
}

TEST(TwoStageInterleaving, OtherLayoutsKeepTagZero) {
  // One stream per rank pair and direction already: the channels stay as they were.
  const TransformerConfig model = test_support::tiny_gpt();
  for (const ParallelConfig& parallel :
       {ParallelConfig{.tp = 1, .pp = 2, .dp = 2},
        ParallelConfig{.tp = 1, .pp = 4, .dp = 2, .virtual_stages = 2}}) {
    for (int rank = 0; rank < parallel.world_size(); ++rank) {
      for (const auto& [key, count] : transfers(generate_llm_rank(model, parallel, rank)))
        EXPECT_EQ(std::get<2>(key), 0) << "PP " << parallel.pp << " rank " << rank;
    }
  }
}

TEST(TwoStageInterleaving, ScatterGatherAndSequenceParallelTransfersMatch) {
  // Megatron-LM's scatter/gather (TP 2 without SP: each TP rank sends its half, the receiver
  // all-gathers it over TP) and sequence parallelism: every stream still pairs and the engine
  // runs every rank to its end.
  ParallelConfig scatter{.tp = 2, .pp = 2, .dp = 1, .virtual_stages = 2};
  scatter.p2p_scatter_gather = true;
  ParallelConfig sequence{.tp = 2, .pp = 2, .dp = 1, .virtual_stages = 2};
  sequence.sequence_parallel = true;
  for (const ParallelConfig& parallel : {scatter, sequence})
    test_support::expect_runs_to_completion(
        test_support::generate_every_rank(test_support::tiny_gpt(), parallel));
}

// Layer GEMMs take `layer_gemm_us`, everything else nothing: the stages are exactly balanced.
class LayerGemms final : public KernelDurationSource {
 public:
  explicit LayerGemms(DurationUs us) : us_(us) {}
  DurationUs kernel_duration_us(const Op& op, const Kernel& kernel) const override {
    const Attribute* layer = op.find_attribute("layer");
    const bool in_layer = layer != nullptr && std::get<std::int64_t>(layer->value) >= 0;
    return kernel.category == KernelCategory::kGemm && in_layer ? us_ : 0;
  }
  std::string_view name() const override { return "layer-gemms"; }

 private:
  DurationUs us_;
};

using test_support::FreeCollectives;

TEST(TwoStageInterleaving, ScheduleTimeIsTheInterleavedBubble) {
  // Unfused attention: 6 GEMMs a layer forward (QKV, QK^T, AV, projection, FC1, FC2), 12 back.
  TransformerConfig model = test_support::tiny_gpt();
  model.attention = AttentionKernel::kUnfused;
  const ParallelConfig parallel = two_stages_two_chunks();
  const int p = 2, v = 2, m = 8;
  const DurationUs gemm_us = 10;
  LayerGemms kernels(gemm_us);
  FreeCollectives collectives;
  std::vector<engine::RankProgram> programs;
  std::vector<engine::RankSignatures> signatures;
  for (int rank = 0; rank < parallel.world_size(); ++rank) {
    programs.push_back(engine::build_rank_program(generate_llm_rank(model, parallel, rank), rank,
                                                  parallel.world_size(),
                                                  {&kernels, &collectives, {}}));
    signatures.push_back(engine::rank_signatures(programs.back()));
  }
  const auto mismatch = engine::find_collective_mismatch(signatures, parallel.world_size());
  ASSERT_FALSE(mismatch.has_value()) << *mismatch;
  // Both streams of each direction are channels of their own.
  std::map<std::string, int> channel_sizes;
  for (const auto& [group, members] : signatures[0].groups)
    channel_sizes[group] = static_cast<int>(members.size());
  const int peer = rank_of(parallel, {0, 0, 1, 0});
  for (const std::string& channel :
       {point_to_point_stream_name(0, peer, 0), point_to_point_stream_name(0, peer, 1),
        point_to_point_stream_name(peer, 0, 0), point_to_point_stream_name(peer, 0, 1)})
    EXPECT_EQ(channel_sizes[channel], 2) << channel;

  HostOverheads overheads;
  overheads.launch.kernel_gap_us = 0;
  engine::InProcessClockSync sync;
  const std::vector<RankResult> results = engine::simulate_programs(programs, overheads, sync);
  double iteration_us = 0;
  for (const RankResult& result : results)
    iteration_us = std::max(iteration_us, result.iteration_us);
  // Per chunk and micro-batch: 2 layers x 6 GEMMs forward, x 12 backward. With two stages the
  // schedule's critical path is exactly v m (F + B) + (p - 1)(F + B): the bubble fraction
  // (p - 1) / (v m) (worked through step by step for m = 2, 4, 6, 8 and 16 before writing).
  const double f = 2 * 6 * gemm_us, b = 2 * 12 * gemm_us;
  const double ideal_us = v * m * (f + b);
  EXPECT_NEAR(iteration_us, ideal_us + (p - 1) * (f + b), 1e-6);
  EXPECT_NEAR((iteration_us - ideal_us) / ideal_us, (p - 1.0) / (v * m), 1e-12);
}

// The engine pairs a send with the recv of the same match tag: rank 0 sends stream 0 (4 kB),
// then stream 1 (8 kB); rank 1 receives stream 1 first. Paired by order alone the sizes would
// disagree. Measured sources, zero overheads: rank 0's sends queue behind its compute on one
// stream, [100, 105] and [105, 110]; each recv (own stream, ready at 0) ends with its send, so
// rank 1's reader waits for 110 and its 30 us op: [110, 120].
TEST(TwoStageInterleaving, EnginePairsByMatchTagNotOrderAlone) {
  auto make = [](int rank) {
    testing::TraceBuilder builder(rank, 2);
    if (rank == 0) {
      builder.op("compute", {100})
          .collective(CollectiveKind::kSend, 4096, 5, -1, "", kDefaultComputeStream)
          .collective(CollectiveKind::kSend, 8192, 5, -1, "", kDefaultComputeStream);
    } else {
      builder.collective(CollectiveKind::kRecv, 8192, 5, 42, "", 31)
          .op("other", {30})
          .collective(CollectiveKind::kRecv, 4096, 5, 43, "", 30)
          .op("reads both", {10}, kDefaultComputeStream, {42, 43});
    }
    Trace trace = builder.build();
    for (Op& op : trace.ops) {
      if (op.comm) {
        op.comm->peer_rank = 1 - rank;
        op.comm->match_tag = op.comm->bytes_in == 8192 ? 1 : 0;
      }
    }
    return trace;
  };
  engine::MeasuredKernelDurations kernels;
  engine::MeasuredCommDurations comm;
  std::vector<engine::RankProgram> programs;
  std::vector<engine::RankSignatures> signatures;
  for (int rank = 0; rank < 2; ++rank) {
    programs.push_back(engine::build_rank_program(make(rank), rank, 2, {&kernels, &comm, {}}));
    signatures.push_back(engine::rank_signatures(programs.back()));
  }
  const auto mismatch = engine::find_collective_mismatch(signatures, 2);
  ASSERT_FALSE(mismatch.has_value()) << *mismatch;
  engine::InProcessClockSync sync;
  const std::vector<RankResult> results =
      engine::simulate_programs(programs, testing::zero_overheads(), sync);
  EXPECT_DOUBLE_EQ(results[0].iteration_us, 110);
  EXPECT_DOUBLE_EQ(results[1].iteration_us, 120);
}

}  // namespace
}  // namespace perfsim::generators::llm

// `simulate --fold auto` simulates one representative per pipeline stage and clones its result
// to every rank proven to run the same program (mpi_sim/cli/folded_simulation.hpp). These
// tests run small layouts of every parallelism kind the LLM generator has both ways and
// require every rank's result to be bit for bit the full simulation's, and check that folding
// is refused where the topology places congruent groups differently.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <tuple>

#include "io/input_file.hpp"
#include "mpi_sim/cli/folded_simulation.hpp"
#include "mpi_sim/engine/in_process_clock_sync.hpp"
#include "mpi_sim/engine/local_scheduler.hpp"
#include "topology/topology.hpp"

namespace perfsim::cli {
namespace {

namespace llm = generators::llm;

const std::string kSource = PERFSIM_SOURCE_DIR;

llm::TransformerConfig small_gpt() {
  llm::TransformerConfig model;
  model.name = "small-gpt";
  model.layers = 6;
  model.hidden = 768;
  model.heads = 12;
  model.kv_heads = 12;
  model.ffn_hidden = 3072;
  model.vocab = 32768;
  model.seq_len = 1024;
  model.micro_batch = 1;
  model.global_batch = 24;
  model.attention = llm::AttentionKernel::kFlash;
  model.dropout = true;
  return model;
}

LlmScenario scenario_of(const llm::ParallelConfig& parallel, const char* node = "dgx-a100",
                        int nodes = 2) {
  const std::string device_file = kSource + "/configs/devices/A100-80GB.json";
  return LlmScenario{
      small_gpt(),
      parallel,
      topology::with_node_count(
          topology::load_topology(kSource + "/configs/topologies/" + node + ".json"), nodes),
      io::read_file_decompressed(device_file),
      device_file,
      ""};
}

std::vector<RankResult> unfolded(const LlmScenario& scenario) {
  std::vector<int> ranks;
  for (int rank = 0; rank < scenario.parallel.world_size(); ++rank)
    ranks.push_back(rank);
  const SimulationInputs inputs = load_llm_inputs(scenario, ranks);
  engine::InProcessClockSync sync;
  return engine::simulate_programs(inputs.programs, inputs.overheads, sync, true);
}

std::vector<TimelineSlice> in_time_order(std::vector<TimelineSlice> slices) {
  std::sort(slices.begin(), slices.end(), [](const TimelineSlice& a, const TimelineSlice& b) {
    return std::tie(a.lane, a.start_us, a.duration_us, a.name, a.collective_key) <
           std::tie(b.lane, b.start_us, b.duration_us, b.name, b.collective_key);
  });
  return slices;
}

void expect_identical(const RankResult& folded, const RankResult& full) {
  const std::string rank = "rank " + std::to_string(full.sim_rank);
  EXPECT_EQ(folded.sim_rank, full.sim_rank);
  // Exact comparisons: the fold must give the very same doubles.
  EXPECT_EQ(folded.iteration_us, full.iteration_us) << rank;
  EXPECT_EQ(folded.cpu_us, full.cpu_us) << rank;
  EXPECT_EQ(folded.kernel_time_us, full.kernel_time_us) << rank;
  EXPECT_EQ(folded.gpu_busy_us, full.gpu_busy_us) << rank;
  EXPECT_EQ(folded.gpu_idle_us, full.gpu_idle_us) << rank;
  EXPECT_EQ(folded.by_category_us, full.by_category_us) << rank;
  EXPECT_EQ(folded.ops, full.ops) << rank;
  EXPECT_EQ(folded.kernels, full.kernels) << rank;
  ASSERT_EQ(folded.streams.size(), full.streams.size()) << rank;
  for (std::size_t i = 0; i < full.streams.size(); ++i) {
    EXPECT_EQ(folded.streams[i].stream, full.streams[i].stream) << rank;
    EXPECT_EQ(folded.streams[i].busy_us, full.streams[i].busy_us) << rank;
    EXPECT_EQ(folded.streams[i].by_category_us, full.streams[i].by_category_us) << rank;
  }
  ASSERT_EQ(folded.groups.size(), full.groups.size()) << rank;
  for (const auto& [group, traffic] : full.groups) {
    ASSERT_TRUE(folded.groups.contains(group)) << rank << " " << group;
    const GroupTraffic& other = folded.groups.at(group);
    EXPECT_EQ(other.collectives, traffic.collectives) << rank << " " << group;
    EXPECT_EQ(other.bytes, traffic.bytes) << rank << " " << group;
    EXPECT_EQ(other.time_us, traffic.time_us) << rank << " " << group;
    EXPECT_EQ(other.exposed_us, traffic.exposed_us) << rank << " " << group;
  }
  // Slices are recorded as collectives resolve, an order that depends on the traversal's
  // interleaving of ranks (as it does between MPI layouts): compare them in time order.
  const std::vector<TimelineSlice> folded_slices = in_time_order(folded.timeline);
  const std::vector<TimelineSlice> full_slices = in_time_order(full.timeline);
  ASSERT_EQ(folded_slices.size(), full_slices.size()) << rank;
  for (std::size_t i = 0; i < full_slices.size(); ++i) {
    const TimelineSlice& a = folded_slices[i];
    const TimelineSlice& b = full_slices[i];
    ASSERT_TRUE(a.name == b.name && a.lane == b.lane && a.start_us == b.start_us &&
                a.duration_us == b.duration_us && a.category == b.category &&
                a.collective_key == b.collective_key)
        << rank << " slice " << i << ": " << a.name << " " << a.collective_key << " vs " << b.name
        << " " << b.collective_key;
  }
}

void expect_fold_exact(const llm::ParallelConfig& parallel) {
  const LlmScenario scenario = scenario_of(parallel);
  const FoldedRun folded = fold_in_process(scenario, true);
  ASSERT_FALSE(folded.refusal) << *folded.refusal;
  EXPECT_EQ(folded.representatives, static_cast<std::size_t>(parallel.pp));
  const std::vector<RankResult> full = unfolded(scenario);
  ASSERT_EQ(folded.results.size(), full.size());
  for (std::size_t rank = 0; rank < full.size(); ++rank)
    expect_identical(folded.results[rank], full[rank]);
}

llm::ParallelConfig layout(int tp, int pp, int dp) {
  llm::ParallelConfig parallel;
  parallel.tp = tp;
  parallel.pp = pp;
  parallel.dp = dp;
  return parallel;
}

TEST(FoldedSimulation, TensorPipelineAndDataParallel) {
  expect_fold_exact(layout(2, 2, 4));
}

TEST(FoldedSimulation, InterleavedPipeline) {
  llm::ParallelConfig parallel = layout(2, 3, 2);
  parallel.virtual_stages = 2;
  expect_fold_exact(parallel);
}

TEST(FoldedSimulation, SequenceParallelWithSelectiveRecompute) {
  llm::ParallelConfig parallel = layout(4, 2, 2);
  parallel.sequence_parallel = true;
  parallel.recompute = llm::Recompute::kSelective;
  expect_fold_exact(parallel);
}

TEST(FoldedSimulation, DistributedOptimizerWithOverlappedReduction) {
  llm::ParallelConfig parallel = layout(2, 2, 4);
  parallel.zero_stage = 1;
  parallel.overlap_grad_reduce = true;
  parallel.overlap_param_gather = true;
  expect_fold_exact(parallel);
}

TEST(FoldedSimulation, ZeroStage3) {
  llm::ParallelConfig parallel = layout(1, 2, 4);
  parallel.zero_stage = 3;
  expect_fold_exact(parallel);
}

TEST(FoldedSimulation, ContextParallelRing) {
  llm::ParallelConfig parallel = layout(2, 2, 2);
  parallel.cp = 2;
  expect_fold_exact(parallel);
}

TEST(FoldedSimulation, UnevenStagesFoldPerStage) {
  llm::ParallelConfig parallel = layout(2, 2, 2);
  parallel.pp_layers = {2, 4};
  expect_fold_exact(parallel);
}

TEST(FoldedSimulation, RefusedWhereTensorGroupsStraddleNodes) {
  // TP 3 on 8-GPU nodes: groups {0,1,2} and {3,4,5} stay in node 0, {6,7,8} crosses into
  // node 1, so their collectives take different times and the ranks are not interchangeable.
  const LlmScenario scenario = scenario_of(layout(3, 1, 3));
  const FoldedRun folded = fold_in_process(scenario, false);
  ASSERT_TRUE(folded.refusal);
  EXPECT_NE(folded.refusal->find("differs"), std::string::npos) << *folded.refusal;
  EXPECT_TRUE(folded.results.empty());
}

TEST(FoldConsistency, RefusesAGroupWhoseMembersPlayOtherRoles) {
  // Ranks 0, 1 in class 0 and 2, 3 in class 2; "a" = {0, 1}, "b" = {2, 3}, the representatives'
  // cross-class group "x" = {0, 2} and the clones' "c" = {1, 3}, which plays "x" on both.
  const std::vector<int> representative_of{0, 0, 2, 2};
  std::vector<engine::GroupRenaming> renamings{{0, {{"a", "a"}, {"x", "x"}}},
                                               {1, {{"a", "a"}, {"c", "x"}}},
                                               {2, {{"b", "b"}, {"x", "x"}}},
                                               {3, {{"b", "b"}, {"c", "x"}}}};
  EXPECT_FALSE(engine::fold_consistency(renamings, representative_of));
  // Rank 3 now plays "c" as its class's "b": c's members no longer match x's roles.
  renamings[3].own_to_representative = {{"c", "b"}, {"b", "x"}};
  const std::optional<std::string> refusal = engine::fold_consistency(renamings, representative_of);
  ASSERT_TRUE(refusal);
  EXPECT_NE(refusal->find("is not congruent"), std::string::npos) << *refusal;
}

TEST(FoldConsistency, RenamingsSurviveTheTextBetweenProcesses) {
  const std::vector<engine::GroupRenaming> renamings{{5, {{"tp/2", "tp/0"}, {"", ""}}},
                                                     {6, {{"p2p:6->14", "p2p:0->8"}}}};
  const std::vector<std::pair<int, std::string>> differences{{7, "op 3 (x): kernels"}};
  std::vector<engine::GroupRenaming> read_renamings;
  std::vector<std::pair<int, std::string>> read_differences;
  engine::deserialize_renamings(engine::serialize_renamings(renamings, differences), read_renamings,
                                read_differences);
  ASSERT_EQ(read_renamings.size(), 2u);
  EXPECT_EQ(read_renamings[0].rank, 5);
  EXPECT_EQ(read_renamings[0].own_to_representative, renamings[0].own_to_representative);
  EXPECT_EQ(read_renamings[1].own_to_representative, renamings[1].own_to_representative);
  EXPECT_EQ(read_differences, differences);
}

}  // namespace
}  // namespace perfsim::cli

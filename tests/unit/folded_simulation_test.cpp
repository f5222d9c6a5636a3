// `simulate --fold auto` simulates one representative per pipeline stage and clones its result
// to every rank proven to run the same program (scenario/folded_simulation.hpp). These tests run
// small layouts of every parallelism kind the LLM generator has (support/parallelism_layouts.hpp)
// both ways and require every rank's result to be bit for bit the full simulation's, and check
// that folding is refused where the topology places congruent groups differently.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>

#include "generators/llm/llm_collective_bus_rates.hpp"
#include "io/input_file.hpp"
#include "mpi_sim/engine/in_process_clock_sync.hpp"
#include "mpi_sim/engine/local_scheduler.hpp"
#include "scenario/folded_simulation.hpp"
#include "support/llm_programs_in_full.hpp"
#include "support/parallelism_layouts.hpp"
#include "support/same_rank_result.hpp"
#include "support/small_gpt.hpp"
#include "topology/topology.hpp"

namespace perfsim::scenario {
namespace {

namespace llm = generators::llm;

const std::string kSource = PERFSIM_SOURCE_DIR;

llm::TransformerConfig small_gpt() {
  llm::TransformerConfig model = test_support::small_gpt(6, 768, 24);
  model.dropout = true;
  return model;
}

LlmScenario scenario_of(const llm::ParallelConfig& parallel, const char* node = "dgx-a100",
                        int nodes = 2) {
  const std::string device_file = kSource + "/configs/devices/A100-80GB.json";
  topology::Topology cluster = topology::with_node_count(
      topology::load_topology(kSource + "/configs/topologies/" + node + ".json"), nodes);
  // As the CLI builds it: overlapped collectives take HBM bandwidth at the cluster's bus rates.
  llm::ParallelConfig with_rates = llm::with_collective_bus_rates(parallel, cluster);
  return LlmScenario{parallel.ep > 1 ? test_support::small_moe() : small_gpt(),
                     std::move(with_rates),
                     std::move(cluster),
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

void expect_fold_exact(const LlmScenario& scenario) {
  const llm::ParallelConfig& parallel = scenario.parallel;
  const FoldedRun folded = fold_in_process(scenario, true);
  ASSERT_FALSE(folded.refusal) << *folded.refusal;
  EXPECT_EQ(folded.representatives, static_cast<std::size_t>(parallel.pp));
  const std::vector<RankResult> full = unfolded(scenario);
  ASSERT_EQ(folded.results.size(), full.size());
  for (std::size_t rank = 0; rank < full.size(); ++rank)
    test_support::expect_same_result(folded.results[rank], full[rank]);
}

void expect_fold_exact(const llm::ParallelConfig& parallel) {
  expect_fold_exact(scenario_of(parallel));
}

using test_support::tp_pp_dp;

// A stage-template option set on 1F1B over 2 stages and on interleaved over 3 (the last stage
// feeds stage 0) folds exactly on both; gives the interleaved layout for further variants.
llm::ParallelConfig expect_pipelines_fold_exact(bool llm::ParallelConfig::*option) {
  llm::ParallelConfig one_f_one_b = tp_pp_dp(2, 2, 2);
  one_f_one_b.*option = true;
  expect_fold_exact(one_f_one_b);
  llm::ParallelConfig interleaved = tp_pp_dp(2, 3, 1);
  interleaved.virtual_stages = 2;
  interleaved.*option = true;
  expect_fold_exact(interleaved);
  return interleaved;
}

class FoldedSimulationOfEveryKind : public testing::TestWithParam<test_support::ParallelismLayout> {
};

TEST_P(FoldedSimulationOfEveryKind, FoldsToTheFullSimulationBitForBit) {
  expect_fold_exact(GetParam().parallel);
}

INSTANTIATE_TEST_SUITE_P(FoldedSimulation, FoldedSimulationOfEveryKind,
                         testing::ValuesIn(test_support::parallelism_layouts()),
                         [](const auto& info) { return info.param.name; });

TEST(FoldedSimulation, ExpertTensorParallelAndRouterOverTensorTimesContext) {
  // MoE layers with whole experts (ETP 1 under TP 2: expert grid 1 x EP 2 x expert-DP 4) and
  // the router's all-reduce over the TP x CP groups: both are roles of the stage template.
  llm::ParallelConfig parallel = tp_pp_dp(2, 2, 2);
  parallel.cp = 2;
  parallel.ep = 2;
  parallel.etp = 1;
  parallel.sequence_parallel = true;
  LlmScenario scenario = scenario_of(parallel);
  scenario.model = small_gpt();  // made MoE by the fields below, not the table's small_moe
  scenario.model.attention = llm::AttentionKernel::kFlash;
  scenario.model.moe.num_experts = 4;
  scenario.model.moe.top_k = 2;
  scenario.model.moe.expert_ffn_hidden = 1536;
  expect_fold_exact(scenario);
  parallel.etp = 0;  // ETP = TP: the experts' collectives on the TP groups
  scenario.parallel = parallel;
  expect_fold_exact(scenario);
}

TEST(FoldedSimulation, MultiLatentAttentionAndMultiTokenPrediction) {
  // MLA layers (latent gathers on the TP groups) and an MTP module on the last stage of an
  // interleaved pipeline with MoE layers: the last stage's template differs, and still folds.
  llm::ParallelConfig parallel = tp_pp_dp(2, 3, 2);
  parallel.virtual_stages = 2;
  parallel.ep = 2;
  parallel.sequence_parallel = true;
  LlmScenario scenario = scenario_of(parallel);
  scenario.model = small_gpt();
  scenario.model.dropout = false;
  scenario.model.attention = llm::AttentionKernel::kFlash;
  scenario.model.position_embedding = llm::PositionEmbedding::kRope;
  scenario.model.mla = {.q_lora_rank = 192,
                        .kv_lora_rank = 128,
                        .qk_nope_head_dim = 32,
                        .qk_rope_head_dim = 16,
                        .v_head_dim = 32};
  scenario.model.moe.num_experts = 4;
  scenario.model.moe.top_k = 2;
  scenario.model.moe.expert_ffn_hidden = 1536;
  scenario.model.mtp_num_layers = 1;
  expect_fold_exact(scenario);
}

TEST(FoldedSimulation, PipelineScatterGather) {
  // Megatron-LM's p2p scatter/gather: the stage boundary's TP all-gather is a role of the
  // stage template too. 1F1B, and interleaved over 3 stages (the last feeds stage 0).
  llm::ParallelConfig interleaved =
      expect_pipelines_fold_exact(&llm::ParallelConfig::p2p_scatter_gather);
  // Without overlap_p2p_comm: Megatron's batched exchanges, each followed by a synchronize.
  interleaved.overlap_p2p_comm = false;
  expect_fold_exact(interleaved);
}

TEST(FoldedSimulation, TimerSyncs) {
  // Megatron-LM 2020-2022's timers: a device synchronize at each forward/backward start and
  // stop, part of the stage template. Without pipelining, 1F1B, and interleaved over 3 stages.
  llm::ParallelConfig parallel = tp_pp_dp(2, 1, 4);
  parallel.timer_syncs = true;
  expect_fold_exact(parallel);
  expect_pipelines_fold_exact(&llm::ParallelConfig::timer_syncs);
}

TEST(FoldedSimulation, PipelineStagesInsideTheNodeOrderRepresentatives) {
  // Order tp-pp-dp (Megatron's --use-tp-pp-dp-mapping): rank = tp + 2 (pp + 2 dp), so node 0
  // holds both stages of replicas 0 and 1 and every DP group {r, r + 4, r + 8, r + 12}
  // crosses the two nodes; each stage's representative is rank 2 x stage (the layout folds
  // exactly: FoldedSimulationOfEveryKind).
  llm::ParallelConfig parallel = tp_pp_dp(2, 2, 4);
  parallel.order = llm::parse_rank_order("tp-pp-dp", "--order");
  EXPECT_EQ(stage_representative_of(parallel)[3], 2);
}

TEST(FoldedSimulation, RefusedWhereTensorGroupsStraddleNodes) {
  // TP 3 on 8-GPU nodes: groups {0,1,2} and {3,4,5} stay in node 0, {6,7,8} crosses into
  // node 1, so their collectives take different times and the ranks are not interchangeable.
  const LlmScenario scenario = scenario_of(tp_pp_dp(3, 1, 3));
  const FoldedRun folded = fold_in_process(scenario, false);
  ASSERT_TRUE(folded.refusal);
  EXPECT_NE(folded.refusal->find("differs"), std::string::npos) << *folded.refusal;
  EXPECT_TRUE(folded.results.empty());
}

// The proof compares each rank's witness collectives only (folded_simulation.hpp). Checks the
// argument that this decides what comparing whole programs decides: for every rank of small
// layouts of each parallelism kind, and of one that must be refused, the whole program's
// comparison with its representative's gives the same verdict and the same renaming.
void expect_witnesses_decide_like_whole_programs(const LlmScenario& scenario) {
  const FoldInputs fold = load_fold_inputs(scenario);
  const std::vector<int> representative_of = stage_representative_of(scenario.parallel);
  std::vector<int> all(representative_of.size());
  for (std::size_t rank = 0; rank < all.size(); ++rank)
    all[rank] = static_cast<int>(rank);
  const FoldProof witnessed = prove_ranks(scenario, fold, representative_of, all);
  std::vector<int> ranks;
  for (int rank = 0; rank < scenario.parallel.world_size(); ++rank)
    ranks.push_back(rank);
  // Whole programs, each compiled from its own trace (load_llm_inputs shares a stage's ops).
  const SimulationInputs priced = load_llm_inputs(scenario, {});
  const std::vector<engine::RankProgram> whole =
      test_support::llm_programs_in_full(scenario, priced);
  std::size_t proven = 0;
  for (int rank : ranks) {
    const int representative = representative_of[static_cast<std::size_t>(rank)];
    if (representative == rank) {
      ++proven;
      continue;
    }
    const engine::ProgramComparison comparison = engine::compare_with_representative(
        whole[static_cast<std::size_t>(representative)], whole[static_cast<std::size_t>(rank)],
        representative_of);
    if (!comparison.renaming) {
      // The witness proof stops at its first difference, which must be this rank's.
      ASSERT_FALSE(witnessed.differences.empty())
          << "rank " << rank << ": " << comparison.difference;
      EXPECT_EQ(witnessed.differences.front().first, rank);
      return;
    }
    ASSERT_LT(proven, witnessed.renamings.size()) << "rank " << rank;
    std::vector<std::pair<std::string, std::string>> expected =
        comparison.renaming->own_to_representative;
    std::vector<std::pair<std::string, std::string>> actual =
        witnessed.renamings[proven].own_to_representative;
    std::sort(expected.begin(), expected.end());
    std::sort(actual.begin(), actual.end());
    EXPECT_EQ(witnessed.renamings[proven].rank, rank);
    EXPECT_EQ(actual, expected) << "rank " << rank;
    ++proven;
  }
  EXPECT_TRUE(witnessed.differences.empty()) << witnessed.differences.front().second;
}

class FoldProofOfEveryKind : public testing::TestWithParam<test_support::ParallelismLayout> {};

TEST_P(FoldProofOfEveryKind, WitnessCollectivesDecideLikeWholePrograms) {
  expect_witnesses_decide_like_whole_programs(scenario_of(GetParam().parallel));
}

INSTANTIATE_TEST_SUITE_P(FoldProof, FoldProofOfEveryKind,
                         testing::ValuesIn(test_support::parallelism_layouts()),
                         [](const auto& info) { return info.param.name; });

TEST(FoldProof, WitnessCollectivesRefuseLikeWholePrograms) {
  // TP 3 on 8-GPU nodes: refused by both.
  expect_witnesses_decide_like_whole_programs(scenario_of(tp_pp_dp(3, 1, 3)));
}

// A collective model that prices one group's collectives 1 us longer: an injected asymmetry
// the proof must catch and refuse.
class OneGroupSlower final : public CommDurationSource {
 public:
  OneGroupSlower(std::unique_ptr<CommDurationSource> model, std::string group)
      : model_(std::move(model)), group_(std::move(group)) {}
  DurationUs collective_duration_us(const CollectiveCall& call) const override {
    return model_->collective_duration_us(call) + (call.group == group_ ? 1.0 : 0.0);
  }
  std::string_view name() const override { return "one-group-slower"; }

 private:
  std::unique_ptr<CommDurationSource> model_;
  std::string group_;
};

TEST(FoldProof, RefusesARunWithOneGroupPricedDifferently) {
  // TP 2 x PP 2 x DP 4: "dp/1" holds the tp-rank-1 ranks of stage 0 (1, 3, 5, 7), whose
  // representative 0 reduces its gradients on "dp/0".
  const LlmScenario scenario = scenario_of(tp_pp_dp(2, 2, 4));
  FoldInputs fold = load_fold_inputs(scenario);
  const std::vector<int> representative_of = stage_representative_of(scenario.parallel);
  std::vector<int> all(representative_of.size());
  for (std::size_t rank = 0; rank < all.size(); ++rank)
    all[rank] = static_cast<int>(rank);
  ASSERT_FALSE(
      fold_refusal(prove_ranks(scenario, fold, representative_of, all), representative_of));
  fold.inputs.comm_source =
      std::make_unique<OneGroupSlower>(std::move(fold.inputs.comm_source), "dp/1");
  const FoldProof proof = prove_ranks(scenario, fold, representative_of, all);
  const std::optional<std::string> refusal = fold_refusal(proof, representative_of);
  ASSERT_TRUE(refusal);
  EXPECT_NE(refusal->find("rank 1 differs from rank 0"), std::string::npos) << *refusal;
  // The all-reduce's slot kernel carries the longer duration: the first field that differs.
  EXPECT_NE(refusal->find("nccl:all_reduce"), std::string::npos) << *refusal;
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

}  // namespace
}  // namespace perfsim::scenario

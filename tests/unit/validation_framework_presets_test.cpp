// RUNS.csv's `framework` column (and validate runs --framework): a framework's recipe switches
// fill the cells a row leaves empty, a cell the row gives always wins, and the MoE-only and
// sequence-parallel-only switches apply where they can run. An unknown framework is the row's
// error, naming the known ones.
#include <gtest/gtest.h>

#include <string>

#include "perfsim/error.hpp"
#include "scenario/run_validation.hpp"
#include "validation/framework_presets.hpp"
#include "validation/run_table.hpp"

namespace perfsim::scenario {
namespace {

constexpr const char* kHeader =
    "name,model,seq_len,gpus,tp,pp,dp,ep,micro_batch,global_batch,sequence_parallel,dtype,"
    "framework,overlap_grad_reduce,get_batch_sync,distributed_optimizer,device,topology,"
    "measured_iteration_s\n";

LlmSimulateOptions options_of(const std::string& row) {
  const validation::RunTable table = validation::parse_run_table(kHeader + row, "runs.csv");
  EXPECT_EQ(table.rows.front().error, "");
  return simulate_options_of_run(table.rows.front(), "runs.csv", "", "none");
}

TEST(FrameworkPresets, EveryNameResolvesAndAnUnknownOneIsAnError) {
  for (std::string_view name : validation::framework_names())
    EXPECT_EQ(validation::framework_preset(name).name, name);
  EXPECT_EQ(validation::framework_preset("").name, "megatron-core");
  EXPECT_THROW(validation::framework_preset("deepspeed-zero"), InputError);
  const validation::RunTable table = validation::parse_run_table(
      std::string(kHeader) +
          "r,llama3-8b,4096,8,1,1,8,1,1,8,0,bf16,nemo2,,,1,H100-SXM,hgx-h100,1\n",
      "runs.csv");
  EXPECT_NE(table.rows.front().error.find("framework: unknown framework (known: megatron-core"),
            std::string::npos)
      << table.rows.front().error;
}

TEST(FrameworkPresets, MegatronCoreAndAnEmptyCellSetNothing) {
  const LlmSimulateOptions empty =
      options_of("r,llama3-70b,4096,16,4,1,4,1,1,8,1,bf16,,,,1,H100-SXM,hgx-h100-2node,1\n");
  const LlmSimulateOptions core = options_of(
      "r,llama3-70b,4096,16,4,1,4,1,1,8,1,bf16,megatron-core,,,1,H100-SXM,hgx-h100-2node,1\n");
  for (const LlmSimulateOptions* options : {&empty, &core}) {
    EXPECT_FALSE(options->overlap_grad_reduce);
    EXPECT_FALSE(options->overlap_param_gather);
    EXPECT_FALSE(options->tp_comm_overlap);
    EXPECT_FALSE(options->get_batch_sync);
    EXPECT_EQ(options->grad_reduce_dtype, "auto");
  }
}

TEST(FrameworkPresets, NemoOverlapsAndTpOverlapOnlyWithSequenceParallelism) {
  const LlmSimulateOptions sp =
      options_of("r,llama3-70b,4096,16,4,1,4,1,1,8,1,bf16,nemo,,,1,H100-SXM,hgx-h100-2node,1\n");
  EXPECT_TRUE(sp.overlap_grad_reduce);
  EXPECT_TRUE(sp.overlap_param_gather);
  EXPECT_TRUE(sp.tp_comm_overlap);
  EXPECT_FALSE(sp.cross_entropy_fusion);
  const LlmSimulateOptions no_sp =
      options_of("r,llama3-70b,4096,16,4,1,4,1,1,8,0,bf16,nemo,,,1,H100-SXM,hgx-h100-2node,1\n");
  EXPECT_FALSE(no_sp.tp_comm_overlap);
}

TEST(FrameworkPresets, ACellTheRowGivesWins) {
  const LlmSimulateOptions stated =
      options_of("r,llama3-70b,4096,16,4,1,4,1,1,8,1,bf16,nemo,0,1,1,H100-SXM,hgx-h100-2node,1\n");
  EXPECT_FALSE(stated.overlap_grad_reduce);  // the row's 0 over nemo's 1
  EXPECT_TRUE(stated.get_batch_sync);        // the row's 1 over nemo's default 0
  EXPECT_TRUE(stated.overlap_param_gather);  // empty: nemo's
}

TEST(FrameworkPresets, MegatronBridgeSetsItsFp8AndMoeSwitchesWhereTheyApply) {
  const LlmSimulateOptions dense = options_of(
      "r,llama3-70b,4096,16,4,1,4,1,1,8,1,fp8,megatron-bridge,,,1,H100-SXM,hgx-h100-2node,1\n");
  EXPECT_EQ(dense.grad_reduce_dtype, "bf16");
  EXPECT_TRUE(dense.cross_entropy_fusion);
  EXPECT_EQ(dense.cross_entropy_fusion_impl, "te");
  EXPECT_TRUE(dense.fp8_param_gather);
  EXPECT_TRUE(dense.tp_comm_overlap);
  EXPECT_FALSE(dense.moe_router_fusion);
  const LlmSimulateOptions bf16 = options_of(
      "r,llama3-70b,4096,16,4,1,4,1,1,8,1,bf16,megatron-bridge,,,1,H100-SXM,hgx-h100-2node,1\n");
  EXPECT_FALSE(bf16.fp8_param_gather);
  // Qwen3 235B-A22B's published layout: EP 32 over TP 2 x DP 16 runs with ETP 1.
  const LlmSimulateOptions moe = options_of(
      "r,qwen3-235b-a22b,4096,256,2,8,16,32,1,2048,1,fp8,megatron-bridge,,,1,H100-SXM,"
      "hgx-h100-8node,1\n");
  EXPECT_TRUE(moe.moe_router_fusion);
  EXPECT_TRUE(moe.moe_permute_fusion);
  EXPECT_FALSE(moe.tp_comm_overlap);
  EXPECT_EQ(moe.etp, 1);
}

// A preset never sets a switch simulate would refuse for the row: it is the recipe's where the
// recipe could run it.
TEST(FrameworkPresets, SwitchesApplyOnlyWhereTheyCanRun) {
  const LlmSimulateOptions unsharded = options_of(
      "r,llama3-70b,4096,16,4,1,4,1,1,8,1,fp8,megatron-bridge,,,0,H100-SXM,hgx-h100-2node,1\n");
  EXPECT_TRUE(unsharded.overlap_grad_reduce);
  EXPECT_FALSE(unsharded.overlap_param_gather);  // needs the distributed optimizer
  EXPECT_FALSE(unsharded.fp8_param_gather);      // likewise
  const LlmSimulateOptions mla = options_of(
      "r,deepseek-v2-lite,4096,16,2,1,8,8,1,16,1,bf16,nemo,,,1,H100-SXM,hgx-h100-2node,1\n");
  EXPECT_FALSE(mla.tp_comm_overlap);  // userbuffers are not modelled with MLA
  EXPECT_TRUE(mla.overlap_param_gather);
}

TEST(FrameworkPresets, OldMegatronWaitsForTheBatchAndSyncsItsTimers) {
  const LlmSimulateOptions lm = options_of(
      "r,llama3-8b,2048,8,2,2,2,1,1,8,0,fp16,megatron-lm-2021,,,1,A100-80GB,dgx-a100,1\n");
  EXPECT_TRUE(lm.get_batch_sync);
  EXPECT_TRUE(lm.timer_syncs);
  EXPECT_TRUE(lm.p2p_scatter_gather);
  EXPECT_FALSE(lm.overlap_p2p_comm);
  EXPECT_EQ(lm.shape.attention, "unfused");
  EXPECT_EQ(lm.shape.dropout, std::optional<bool>(true));
  const LlmSimulateOptions ds = options_of(
      "r,llama3-8b,2048,8,2,2,2,1,1,8,0,fp16,megatron-deepspeed,,,1,A100-80GB,dgx-a100,1\n");
  EXPECT_TRUE(ds.get_batch_sync);
  EXPECT_FALSE(ds.timer_syncs);
}

// Without a framework, an empty etp cell is Megatron's TP unless that cannot tile the
// attention ranks; then ETP 1, the only size such a layout can have run with.
TEST(FrameworkPresets, EmptyEtpIsOneOnlyWhereTpCannotTile) {
  const LlmSimulateOptions tiles =
      options_of("r,mixtral-8x7b,4096,64,2,1,32,8,1,64,1,bf16,,,,1,H100-SXM,hgx-h100-8node,1\n");
  EXPECT_EQ(tiles.etp, 0);  // simulate's default: TP
  const LlmSimulateOptions one = options_of(
      "r,qwen3-235b-a22b,4096,256,2,8,16,32,1,2048,1,fp8,,,,1,H100-SXM,hgx-h100-8node,1\n");
  EXPECT_EQ(one.etp, 1);
}

}  // namespace
}  // namespace perfsim::scenario

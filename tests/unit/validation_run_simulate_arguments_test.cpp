// `validate runs --explain`: a RUNS.csv row rendered as the `perfsim simulate` arguments that
// repeat its prediction (simulate_options_of_run, then llm_simulate_arguments), flag by flag,
// and those arguments parsed back by simulate's own option parser to the same options.
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "mpi_sim/cli/simulate_arguments.hpp"
#include "mpi_sim/cli/workload_options.hpp"
#include "perfsim/error.hpp"
#include "scenario/run_validation.hpp"
#include "support/parsed_by_simulate.hpp"
#include "validation/run_table.hpp"

namespace perfsim::cli {
namespace {

using Arguments = std::vector<std::string>;

// "a b c" as {"a", "b", "c"}.
Arguments words(const std::string& text) {
  Arguments out;
  std::istringstream in(text);
  for (std::string word; in >> word;)
    out.push_back(word);
  return out;
}

validation::RunTable table_of(const std::string& csv) {
  return validation::parse_run_table(csv, "runs.csv");
}

Arguments arguments_of(const validation::RunRow& row, const std::string& calibration) {
  return llm_simulate_arguments(
      scenario::simulate_options_of_run(row, "runs.csv", "", calibration));
}

TEST(RunSimulateArguments, ModelFileRowWithEverySwitchTheRowSets) {
  const validation::RunTable table = table_of(
      "name,model,seq_len,gpus,tp,pp,dp,cp,ep,virtual_stages,micro_batch,global_batch,"
      "recompute,recompute_modules,sequence_parallel,dtype,fp8_recipe,distributed_optimizer,"
      "grad_reduce_dtype,overlap_grad_reduce,overlap_param_gather,tp_comm_overlap,"
      "overlap_p2p_comm,cross_entropy_fusion,rope_fusion,account_for_embedding,get_batch_sync,"
      "timer_syncs,device,topology,nodes,measured_iteration_s\n"
      "fp8-row,llama3-8b,4096,32,2,2,8,1,1,4,1,64,selective,core_attn+layernorm,1,fp8,current,1,"
      "bf16,1,1,1,0,te,0,1,1,1,H100-SXM,hgx-h100-8node,,1.5\n");
  ASSERT_EQ(table.rows.front().error, "");
  // 32 GPUs on 8-GPU nodes: the empty nodes cell is 4 nodes.
  const Arguments expected = words(
      "--model llama3-8b --seq-len 4096 --tp 2 --pp 2 --dp 8 --virtual-stages 4 "
      "--account-for-embedding-in-pipeline-split --micro-batch 1 --global-batch 64 "
      "--sequence-parallel --recompute selective --recompute-modules core_attn+layernorm --dtype "
      "fp8 --fp8-recipe current --distributed-optimizer --grad-reduce-dtype bf16 "
      "--overlap-grad-reduce --overlap-param-gather --tp-comm-overlap --no-overlap-p2p-comm "
      "--no-rope-fusion --cross-entropy-loss-fusion --cross-entropy-fusion-impl te "
      "--get-batch-sync --timer-syncs --topology hgx-h100-8node --nodes 4 --device H100-SXM "
      "--calibration none");
  const Arguments rendered = arguments_of(table.rows.front(), "none");
  EXPECT_EQ(rendered, expected);
  // Parsed back by simulate, the arguments render the same way (no flag simulate lacks or
  // reads differently).
  EXPECT_EQ(llm_simulate_arguments(test_support::parsed_by_simulate(rendered)), rendered);
}

TEST(RunSimulateArguments, InlineShapeRowWithMoeSwitches) {
  const validation::RunTable table = table_of(
      "name,layers,hidden,heads,kv_heads,ffn_hidden,vocab,seq_len,attention,dropout,gated_ffn,"
      "position_embedding,gpus,tp,pp,dp,ep,etp,order,micro_batch,global_batch,dtype,"
      "moe_imbalance,moe_a2a_overlap,moe_router_fusion,moe_permute_fusion,"
      "moe_router_force_load_balancing,moe_token_dispatcher,moe_flex_backend,p2p_scatter_gather,"
      "first_stage_layers,device,topology,nodes,measured_tokens_per_s_per_gpu\n"
      "shape-row,12,1024,16,4,4096,32000,2048,unfused,0,1,rope,16,2,2,4,2,1,tp-cp-ep-pp-dp,2,"
      "64,bf16,1.25,0,1,1,1,flex,hybridep,1,5,A100-80GB,dgx-a100,2,900\n");
  ASSERT_EQ(table.rows.front().error, "");
  Arguments expected = words(
      "--layers 12 --hidden 1024 --heads 16 --kv-heads 4 --ffn-hidden 4096 --vocab 32000 --seq-len "
      "2048 --attention unfused --no-dropout --gated-ffn --position-embedding rope --tp 2 --pp 2 "
      "--dp 4 --ep 2 --etp 1 --moe-imbalance 1.25 --first-stage-layers 5 --micro-batch 2 "
      "--global-batch 64 --order tp-cp-ep-pp-dp --dtype bf16 --p2p-scatter-gather "
      "--moe-router-fusion --moe-permute-fusion --moe-router-force-load-balancing "
      "--moe-token-dispatcher flex --moe-flex-backend hybridep --topology dgx-a100 --nodes 2 "
      "--device A100-80GB --calibration");
  expected.push_back("my calibration.json");
  const Arguments rendered = arguments_of(table.rows.front(), "my calibration.json");
  EXPECT_EQ(rendered, expected);
  EXPECT_EQ(llm_simulate_arguments(test_support::parsed_by_simulate(rendered)), rendered);
  // The command line quotes what a shell would split.
  EXPECT_NE(simulate_command_line(rendered).find("--calibration 'my calibration.json'"),
            std::string::npos)
      << simulate_command_line(rendered);
}

TEST(RunSimulateArguments, MoeOverlapSwitchesRoundTrip) {
  const validation::RunTable table = table_of(
      "name,model,seq_len,gpus,tp,pp,dp,ep,micro_batch,global_batch,moe_a2a_overlap,"
      "delay_wgrad_compute,device,topology,measured_iteration_s\n"
      "moe-row,mixtral-8x7b,4096,8,1,1,8,8,1,32,1,1,H100-SXM,hgx-h100,2.0\n");
  ASSERT_EQ(table.rows.front().error, "");
  const Arguments rendered = arguments_of(table.rows.front(), "none");
  const std::string line = simulate_command_line(rendered);
  EXPECT_NE(line.find("--moe-a2a-overlap --delay-wgrad-compute"), std::string::npos) << line;
  EXPECT_TRUE(test_support::parsed_by_simulate(rendered).delay_wgrad_compute);
  EXPECT_EQ(llm_simulate_arguments(test_support::parsed_by_simulate(rendered)), rendered);

  const validation::RunTable shared = table_of(
      "name,model,seq_len,gpus,tp,pp,dp,ep,micro_batch,global_batch,moe_shared_expert_overlap,"
      "device,topology,measured_iteration_s\n"
      "shared-row,deepseek-v3,4096,64,1,1,64,64,1,64,1,H100-SXM,hgx-h100-8node,2.0\n");
  ASSERT_EQ(shared.rows.front().error, "");
  const Arguments shared_rendered = arguments_of(shared.rows.front(), "none");
  EXPECT_NE(simulate_command_line(shared_rendered).find("--moe-shared-expert-overlap"),
            std::string::npos);
  EXPECT_TRUE(test_support::parsed_by_simulate(shared_rendered).moe_shared_expert_overlap);
  EXPECT_EQ(llm_simulate_arguments(test_support::parsed_by_simulate(shared_rendered)),
            shared_rendered);
}

TEST(RunSimulateArguments, ZeroStageRoundTrips) {
  const validation::RunTable table = table_of(
      "name,model,seq_len,gpus,tp,pp,dp,micro_batch,global_batch,zero,device,topology,"
      "measured_iteration_s\n"
      "fsdp,llama3-8b,4096,8,1,1,8,1,8,3,H100-SXM,hgx-h100,1\n");
  ASSERT_EQ(table.rows.front().error, "");
  const Arguments rendered = arguments_of(table.rows.front(), "none");
  EXPECT_EQ(rendered, words("--model llama3-8b --seq-len 4096 --tp 1 --pp 1 --dp 8 --micro-batch 1 "
                            "--global-batch 8 --zero 3 --dtype bf16 --topology hgx-h100 --nodes 1 "
                            "--device "
                            "H100-SXM --calibration none"));
  EXPECT_EQ(llm_simulate_arguments(test_support::parsed_by_simulate(rendered)), rendered);
}

TEST(RunSimulateArguments, RowWithABadCellHasNoArguments) {
  const validation::RunTable table = table_of(
      "name,model,gpus,tp,pp,dp,micro_batch,global_batch,device,topology,measured_iteration_s\n"
      "bad,llama3-8b,8,2,2,3,1,12,H100-SXM,hgx-h100,1\n");
  ASSERT_NE(table.rows.front().error, "");
  EXPECT_THROW(arguments_of(table.rows.front(), "none"), InputError);
}

}  // namespace
}  // namespace perfsim::cli

// `perfsim plan` prints the chosen layout as a `perfsim simulate` command
// (mpi_sim/cli/plan_simulate_arguments.hpp): for every layout the planner makes with every MoE
// switch asked for, the command parsed back by simulate's own option parser gives the layout's
// parallel settings and the switches the planner turned on for it.
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "mpi_sim/cli/plan_simulate_arguments.hpp"
#include "mpi_sim/cli/simulate_arguments.hpp"
#include "mpi_sim/cli/workload_options.hpp"
#include "planner/layout_enumerator.hpp"
#include "planner/plan_search.hpp"
#include "scenario/llm_simulation.hpp"
#include "support/parsed_by_simulate.hpp"
#include "support/small_moe.hpp"

namespace perfsim::cli {
namespace {

namespace llm = generators::llm;

using test_support::parsed_by_simulate;

TEST(PlanSimulateCommand, EveryLayoutAndItsMoeSwitchesRoundTrip) {
  llm::TransformerConfig model = test_support::small_moe(2, 16);
  model.moe.shared_expert_ffn_hidden = 1024;
  planner::EnumerationLimits limits;
  limits.gpus = 8;
  limits.gpus_per_node = 4;
  limits.max_micro_batch = 2;
  limits.max_virtual_stages = 2;
  limits.orders = {llm::default_rank_order(), llm::parse_rank_order("tp-cp-ep-pp-dp", "--order")};
  limits.moe_token_dispatcher = llm::MoeTokenDispatcher::kFlex;
  limits.moe_flex_backend = llm::MoeFlexBackend::kHybridEp;
  limits.moe_hybridep_num_sms = 12;
  limits.moe_a2a_overlap = true;
  limits.delay_wgrad_compute = true;
  limits.moe_shared_expert_overlap = true;
  limits.overlap_grad_reduce = true;
  limits.overlap_param_gather = true;
  limits.tp_comm_overlap = true;
  limits.recompute_modules = llm::parse_recompute_modules("layernorm,moe_act", "<test>", "");
  PlanSimulateSetting setting;
  setting.model_path = "small-moe.json";
  setting.topology_path = "hgx-h100";
  setting.topology_size.nodes = 2;
  setting.topology_size.gpus_per_node = 4;
  setting.device = "H100-SXM";
  setting.calibration = "none";
  int flex = 0, a2a = 0, shared = 0, granular = 0;
  for (const llm::ParallelConfig& layout : planner::enumerate_layouts(model, limits)) {
    const std::vector<std::string> arguments =
        llm_simulate_arguments(plan_layout_simulate_options(setting, layout));
    const std::string line = simulate_command_line(arguments);
    const scenario::LlmSimulateOptions options = parsed_by_simulate(arguments);
    const llm::ParallelConfig back = scenario::parallel_config_from(options);
    EXPECT_EQ(options.model_path, "small-moe.json") << line;
    EXPECT_NE(line.find(" --topology hgx-h100 "), std::string::npos) << line;
    EXPECT_EQ(options.topology_size.nodes, 2) << line;
    EXPECT_EQ(options.device_path, "H100-SXM") << line;
    EXPECT_EQ(options.calibration, "none") << line;
    EXPECT_EQ(back.tp, layout.tp) << line;
    EXPECT_EQ(back.pp, layout.pp) << line;
    EXPECT_EQ(back.dp, layout.dp) << line;
    EXPECT_EQ(back.cp, layout.cp) << line;
    EXPECT_EQ(back.ep, layout.ep) << line;
    EXPECT_EQ(back.expert_tp(), layout.expert_tp()) << line;
    EXPECT_EQ(back.virtual_stages, layout.virtual_stages) << line;
    EXPECT_EQ(back.micro_batch, layout.micro_batch) << line;
    EXPECT_EQ(back.global_batch, layout.global_batch) << line;
    EXPECT_EQ(back.order, layout.order) << line;
    EXPECT_EQ(back.sequence_parallel, layout.sequence_parallel) << line;
    EXPECT_EQ(back.recompute, layout.recompute) << line;
    EXPECT_EQ(back.recompute_modules, layout.recompute_modules) << line;
    // --recompute-modules: the selective layouts' list, every other layout Megatron's default.
    EXPECT_EQ(layout.recompute_modules.moe_act, layout.recompute == llm::Recompute::kSelective)
        << line;
    granular += layout.recompute_modules.moe_act;
    EXPECT_EQ(back.zero_stage, layout.zero_stage) << line;
    EXPECT_EQ(back.overlap_grad_reduce, layout.overlap_grad_reduce) << line;
    EXPECT_EQ(back.overlap_param_gather, layout.overlap_param_gather) << line;
    EXPECT_EQ(back.tp_comm_overlap, layout.tp_comm_overlap) << line;
    EXPECT_EQ(back.moe_a2a_overlap, layout.moe_a2a_overlap) << line;
    EXPECT_EQ(back.delay_wgrad_compute, layout.delay_wgrad_compute) << line;
    EXPECT_EQ(back.moe_shared_expert_overlap, layout.moe_shared_expert_overlap) << line;
    EXPECT_EQ(back.moe_token_dispatcher, layout.moe_token_dispatcher) << line;
    if (layout.moe_flex()) {
      EXPECT_EQ(back.moe_flex_backend, llm::MoeFlexBackend::kHybridEp) << line;
      EXPECT_EQ(back.moe_flex_sms(), 12) << line;
      EXPECT_NE(line.find("--moe-token-dispatcher flex --moe-flex-backend hybridep"),
                std::string::npos)
          << line;
    }
    flex += layout.moe_flex();
    a2a += layout.moe_a2a_overlap;
    shared += layout.moe_shared_expert_overlap;
  }
  EXPECT_GT(flex, 0);
  EXPECT_GT(a2a, 0);
  EXPECT_GT(shared, 0);
  EXPECT_GT(granular, 0);
}

// plan --fp8-param-gather: an FP8 model's ZeRO 1/2 layouts carry FP8 primary weights into their
// simulate command; the others (ZeRO 0 and 3) cannot hold them and do not.
TEST(PlanSimulateCommand, Fp8PrimaryWeightsOnTheDistributedOptimizersLayouts) {
  llm::TransformerConfig model = test_support::small_moe(2, 16);
  model.dtype = DType::kFloat8;
  planner::EnumerationLimits limits;
  limits.gpus = 4;
  limits.gpus_per_node = 4;
  limits.fp8_param_gather = true;
  PlanSimulateSetting setting;
  setting.model_path = "small-moe.json";
  setting.topology_path = "hgx-h100";
  setting.device = "H100-SXM";
  int primary = 0;
  for (const llm::ParallelConfig& layout : planner::enumerate_layouts(model, limits)) {
    EXPECT_EQ(layout.fp8_param_gather, layout.zero_stage == 1 || layout.zero_stage == 2);
    EXPECT_NO_THROW(llm::validate(model, layout));
    const std::vector<std::string> arguments =
        llm_simulate_arguments(plan_layout_simulate_options(setting, layout));
    const llm::ParallelConfig back = scenario::parallel_config_from(parsed_by_simulate(arguments));
    EXPECT_EQ(back.fp8_param_gather, layout.fp8_param_gather) << simulate_command_line(arguments);
    primary += layout.fp8_param_gather;
    EXPECT_EQ(planner::short_layout_name(layout).find(" fp8w") != std::string::npos,
              layout.fp8_param_gather);
    EXPECT_EQ(scenario::describe_layout(layout).find("FP8 primary weights") != std::string::npos,
              layout.fp8_param_gather);
  }
  EXPECT_GT(primary, 0);
  model.dtype = DType::kBFloat16;  // nothing to hold in FP8
  for (const llm::ParallelConfig& layout : planner::enumerate_layouts(model, limits))
    EXPECT_FALSE(layout.fp8_param_gather);
}

}  // namespace
}  // namespace perfsim::cli

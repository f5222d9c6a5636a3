// `simulate --framework` (scenario/framework_switches.hpp): the framework sets every switch the
// command line left out, where the layout can run it, and says which it set; a stated switch
// (including a --no-... form) keeps its value.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "scenario/framework_switches.hpp"

namespace perfsim::scenario {
namespace {

using Flags = std::vector<std::string>;

LlmSimulateOptions dense_sp_layout() {
  LlmSimulateOptions options;
  options.tp = 4;
  options.dp = 2;
  options.sequence_parallel = true;
  options.distributed_optimizer = true;
  options.dtype = "bf16";
  return options;
}

TEST(FrameworkSwitches, NemoSetsItsOverlapsAndNamesThem) {
  LlmSimulateOptions options = dense_sp_layout();
  const Flags set = apply_framework_switches(validation::framework_preset("nemo"), {}, {}, options);
  EXPECT_EQ(set, (Flags{"--overlap-grad-reduce", "--overlap-param-gather", "--tp-comm-overlap"}));
  EXPECT_TRUE(options.overlap_grad_reduce);
  EXPECT_TRUE(options.overlap_param_gather);
  EXPECT_TRUE(options.tp_comm_overlap);
  EXPECT_FALSE(options.cross_entropy_fusion);
}

TEST(FrameworkSwitches, AStatedSwitchKeepsItsValue) {
  LlmSimulateOptions options = dense_sp_layout();
  StatedSwitches stated;
  stated.overlap_grad_reduce = true;  // --no-overlap-grad-reduce: stated off
  stated.tp_comm_overlap = true;
  const Flags set =
      apply_framework_switches(validation::framework_preset("nemo"), {}, stated, options);
  EXPECT_EQ(set, (Flags{"--overlap-param-gather"}));
  EXPECT_FALSE(options.overlap_grad_reduce);
  EXPECT_FALSE(options.tp_comm_overlap);
}

TEST(FrameworkSwitches, SwitchesTheLayoutCannotRunStayOff) {
  // No distributed optimizer: no parameter all-gather to overlap; TP 1: no userbuffer overlap.
  LlmSimulateOptions options;
  options.dp = 8;
  options.dtype = "fp8";
  const Flags set =
      apply_framework_switches(validation::framework_preset("megatron-bridge"), {}, {}, options);
  EXPECT_EQ(set, (Flags{"--grad-reduce-dtype bf16", "--overlap-grad-reduce",
                        "--cross-entropy-loss-fusion", "--cross-entropy-fusion-impl te"}));
  EXPECT_FALSE(options.overlap_param_gather);
  EXPECT_FALSE(options.fp8_param_gather);  // needs the distributed optimizer
  EXPECT_FALSE(options.tp_comm_overlap);
  EXPECT_FALSE(options.moe_router_fusion);  // a dense model
}

TEST(FrameworkSwitches, MegatronBridgeOnAnFp8MoeLayout) {
  LlmSimulateOptions options = dense_sp_layout();
  options.dtype = "fp8";
  options.ep = 8;
  const Flags set = apply_framework_switches(validation::framework_preset("megatron-bridge"),
                                             {.moe = true, .mla = false}, {}, options);
  EXPECT_EQ(options.etp, 1);
  EXPECT_TRUE(options.fp8_param_gather);
  EXPECT_TRUE(options.moe_router_fusion);
  EXPECT_TRUE(options.moe_permute_fusion);
  EXPECT_FALSE(options.tp_comm_overlap);  // the bridge's MoE recipes run without it
  EXPECT_EQ(set.front(), "--etp 1");
  // Blockwise FP8 has no FP8 primary weights in perfsim: the switch stays off.
  LlmSimulateOptions blockwise = dense_sp_layout();
  blockwise.dtype = "fp8";
  blockwise.fp8_recipe = "blockwise";
  apply_framework_switches(validation::framework_preset("megatron-bridge"), {}, {}, blockwise);
  EXPECT_FALSE(blockwise.fp8_param_gather);
}

TEST(FrameworkSwitches, OldMegatronTurnsOffWhatMegatronCoreTurnsOn) {
  LlmSimulateOptions options = dense_sp_layout();
  const Flags set =
      apply_framework_switches(validation::framework_preset("megatron-lm-2021"), {}, {}, options);
  EXPECT_EQ(set, (Flags{"--attention unfused", "--dropout", "--no-overlap-p2p-comm",
                        "--p2p-scatter-gather", "--get-batch-sync", "--timer-syncs"}));
  EXPECT_EQ(options.shape.attention, "unfused");
  EXPECT_EQ(options.shape.dropout, true);
  EXPECT_FALSE(options.overlap_p2p_comm);
  // Megatron-Core sets nothing.
  LlmSimulateOptions core = dense_sp_layout();
  EXPECT_TRUE(apply_framework_switches(validation::framework_preset("megatron-core"), {}, {}, core)
                  .empty());
}

}  // namespace
}  // namespace perfsim::scenario

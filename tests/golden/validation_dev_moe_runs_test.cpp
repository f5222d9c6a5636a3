// Golden regression guard on the mixture-of-experts DEVELOPMENT runs (configs/validation/
// published-dev-moe.csv: DGX Cloud Benchmarking Recipes, Grok-1 314B on 8-512 H100 in BF16 and
// FP8, DeepSeek-V3 671B on 512 and 1024 H100 in BF16; README "MoE development runs"). The file
// was committed, its recipe switches filled, before perfsim was run on it; the first run (no
// constant fitted, nothing chosen on these rows yet) gave mean |error| 12.18%, max 23.61%, every
// row too fast (-12.2% signed). The MoE host path (README "The MoE layer's host path", designed
// from Megatron-Core's and Transformer Engine's code without these rows) moved them to 11.04%,
// max 22.30%. The DeepSeek-V3 rows' recompute_modules mla_up_proj (their launch script's;
// expressible since --recompute-modules, filled after their errors had been seen) moved them
// to 10.92%, max 21.34%; with the Grok-1 rows' overlap_param_gather (their recipes') as well,
// 11.04%, max 21.34%. The MoE op inventory (README "The MoE layer's op inventory from
// Megatron-Core's source"; Grok-1 with Megatron-Core's default unfused router and permute, the
// DeepSeek-V3 rows' moe_permute_fusion as their script states, filled after their errors had
// been seen) moved them to 9.16%, max 20.98%. DeepSeek-V3's router as Megatron-Core runs it
// (README "DeepSeek-V3's router as Megatron-Core runs it": sigmoid scores, expert bias, group-
// limited top-k, scaling, seq_aux_loss from the model file, the rows' moe_router_dtype fp32)
// moved them to 9.07%, max 20.13%, and the rows' rope_fusion 0 (NeMo's DeepSeekConfig; both
// filled after the rows' errors had been seen) to 8.95%, max 19.07%. Session 17's shipped H100
// calibration (fitted on the dense H100 development table, not on these rows: out of sample for
// the calibration; its adoption rule, fixed before, required this file not to get worse) moved
// them, before the router change, to 5.51%, max 17.47% (-3.0% signed); with both, 5.27%, max 15.16%
// (-2.8% signed). Physics work may look at these rows, after which their errors are in sample. The
// bounds are those figures rounded up to the next whole percent: a guard against getting worse, not
// a target; a physics change that moves them on purpose moves the bounds and the README's figures
// together.
#include <gtest/gtest.h>

#include <iostream>
#include <string>

#include "support/shipped_run_table.hpp"

namespace perfsim::scenario {
namespace {

TEST(ValidateRunsGolden, DevelopmentMoeRunsFirstRun) {
  const test_support::ShippedTableRun run =
      test_support::validate_shipped_table("published-dev-moe.csv", "development");
  const RunValidationReport& report = run.report;
  EXPECT_EQ(report.errors.count, 18u) << "a row stopped simulating";
  // Session 19: the DeepSeek-V3 rows' moe_shared_expert_overlap and overlap_param_gather, which
  // their recipe states (filled after their errors had been seen): mean 5.55%, max 17.38%.
  // Session 22: every row's moe_expert_capacity_factor 1.0 and moe_pad_expert_input_to_capacity
  // 1, which every recipe states (filled after the errors had been seen; README "Token
  // dropping"): no host wait per MoE forward, every row faster: mean 7.95%, max 17.82%.
  EXPECT_LE(report.errors.mean_abs, 0.08);
  EXPECT_LE(report.errors.max_abs, 0.18);
}

}  // namespace
}  // namespace perfsim::scenario

// Golden regression guard on the H100 DEVELOPMENT runs (configs/validation/
// published-dev-dgxc-h100.csv: DGX Cloud Benchmarking Recipes, Llama 3.1 8B/70B and
// Nemotron-4 15B, BF16 and FP8). Physics work chose the H100 sustained tensor-core rate,
// streaming bandwidth and sustained clock fraction by looking at these rows, so the errors are
// IN SAMPLE (no constant was fitted on them: the device figures are measurements,
// configs/devices/H100-SXM.json). The bounds are the errors measured after the sustained clock
// fraction (mean 3.21%, max 7.03%; 9.11% / 12.98% before), rounded up to the next whole
// percent: a guard against getting worse, not evidence of accuracy. Issue 15's Megatron-Core
// fusions (fused SwiGLU, fused RoPE: README "Megatron-Core fusions") made the Llama rows faster
// and moved them on purpose, with the clock fraction, to mean 4.68%, max 9.41% (signed -3.7%);
// bounds rounded up again. Session 17 fitted the shipped H100 calibration on these rows
// (configs/assets/llm_calibration-h100.json: 80 us/op, 7.25 ms/micro-batch, GEMM time x1.04): in
// sample as fitted, mean 2.67%, max 6.13% (5-fold cross-validation of that fit on these rows, out
// of sample: mean 3.19%, max 6.59%); bounds rounded up.
#include <gtest/gtest.h>

#include <iostream>
#include <string>

#include "support/shipped_run_table.hpp"

namespace perfsim::scenario {
namespace {

TEST(ValidateRunsGolden, DevelopmentH100RunsInSample) {
  const test_support::ShippedTableRun run =
      test_support::validate_shipped_table("published-dev-dgxc-h100.csv", "development, in sample");
  const RunValidationReport& report = run.report;
  EXPECT_EQ(report.errors.count, 10u) << "a row stopped simulating";
  EXPECT_LE(report.errors.mean_abs, 0.03);
  EXPECT_LE(report.errors.max_abs, 0.07);
}

}  // namespace
}  // namespace perfsim::scenario

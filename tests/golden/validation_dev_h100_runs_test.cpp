// Golden regression guard on the H100 DEVELOPMENT runs (configs/validation/
// published-dev-dgxc-h100.csv: DGX Cloud Benchmarking Recipes, Llama 3.1 8B/70B and
// Nemotron-4 15B, BF16 and FP8). Physics work chose the H100 sustained tensor-core rate and
// streaming bandwidth by looking at these rows, so the errors are IN SAMPLE (no constant was
// fitted on them: the device figures are measurements, configs/devices/H100-SXM.json). The
// bounds are the errors measured after that change (mean 9.11%, max 12.98%), rounded up to the
// next whole percent: a guard against getting worse, not evidence of accuracy. Issue 15's
// Megatron-Core fusions (fused SwiGLU, fused RoPE: README "Megatron-Core fusions") made the
// Llama rows faster and moved them on purpose to mean 10.34%, max 15.81% (all rows under
// measured; the Nemotron rows, RoPE only, moved the other way); bounds rounded up again.
#include <gtest/gtest.h>

#include <iostream>
#include <string>

#include "scenario/run_validation.hpp"
#include "validation/end_to_end_calibration.hpp"
#include "validation/run_table.hpp"

namespace perfsim::scenario {
namespace {

TEST(ValidateRunsGolden, DevelopmentH100RunsInSample) {
  const std::string root = PERFSIM_SOURCE_DIR;
  const validation::RunTable table =
      validation::load_run_table(root + "/configs/validation/published-dev-dgxc-h100.csv");
  RunValidationRequest request;
  request.jobs = 2;
  request.calibration = validation::load_calibration(root + "/configs/assets/llm_calibration.json");
  const RunValidationReport report = validate_runs(table, request);
  std::cout << "published-dev-dgxc-h100.csv (development, in sample): " << report.errors.count
            << " of " << report.predictions.size() << " simulated, mean |error| "
            << 100 * report.errors.mean_abs << "%, max " << 100 * report.errors.max_abs
            << "%, mean signed " << 100 * report.errors.mean_signed << "%\n";
  EXPECT_EQ(report.errors.count, 10u) << "a row stopped simulating";
  EXPECT_LE(report.errors.mean_abs, 0.11);
  EXPECT_LE(report.errors.max_abs, 0.16);
}

}  // namespace
}  // namespace perfsim::scenario

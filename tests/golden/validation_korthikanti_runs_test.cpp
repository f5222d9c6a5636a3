// Golden: `perfsim validate runs configs/validation/korthikanti2022.csv` with the shipped
// calibration (configs/assets/llm_calibration.json). The calibration was fitted on vTrain's
// single-node A100 runs only (GPT shapes of 350M-1.3B parameters on 2-8 GPUs), so these four
// Megatron-LM iterations of 22B and 175B models on 8-64 A100s (Korthikanti et al. 2022,
// Table 5) are OUT OF SAMPLE for every fitted parameter. The bounds are the README's claims.
#include <gtest/gtest.h>

#include <iostream>
#include <string>

#include "scenario/run_validation.hpp"
#include "validation/end_to_end_calibration.hpp"
#include "validation/run_table.hpp"

namespace perfsim::scenario {
namespace {

constexpr double kClaimedMeanAbsError = 0.019;
constexpr double kClaimedMaxAbsError = 0.03;

TEST(ValidateRunsGolden, KorthikantiTable5WithVtrainCalibration) {
  const std::string root = PERFSIM_SOURCE_DIR;
  const validation::RunTable table =
      validation::load_run_table(root + "/configs/validation/korthikanti2022.csv");
  RunValidationRequest request;
  request.jobs = 2;
  request.calibration = validation::load_calibration(root + "/configs/assets/llm_calibration.json");
  ASSERT_EQ(request.calibration.fitted_on, "vtrain-singlenode-a100.csv")
      << "this test's claim is out of sample only for a calibration fitted on vTrain";
  const RunValidationReport report = validate_runs(table, request);
  ASSERT_EQ(report.errors.count, 4u) << "every row must simulate";
  for (const RunPrediction& prediction : report.predictions)
    std::cout << prediction.row->name << ": " << 100 * prediction.signed_error << "%\n";
  std::cout << "Korthikanti Table 5 (out of sample): mean |error| " << 100 * report.errors.mean_abs
            << "%, max " << 100 * report.errors.max_abs << "%\n";
  EXPECT_LE(report.errors.mean_abs, kClaimedMeanAbsError);
  EXPECT_LE(report.errors.max_abs, kClaimedMaxAbsError);
}

}  // namespace
}  // namespace perfsim::scenario

// Which rows a calibration's GEMM time scale reaches: the device it was fitted on, and devices
// whose GEMM efficiency nothing measured (nearest device with data); never a device whose file
// carries a gemm_efficiency fitted on its own GEMMs (H100-SXM: OpenXLA's measured table), nor
// FP8 runs, whose GEMM peak fraction comes from a measured H100 benchmark.
#include <gtest/gtest.h>

#include <string>

#include "scenario/run_validation.hpp"
#include "validation/end_to_end_calibration.hpp"
#include "validation/run_table.hpp"

namespace perfsim::scenario {
namespace {

constexpr const char* kTable =
    "name,group,model,layers,hidden,heads,kv_heads,ffn_hidden,vocab,seq_len,gpus,tp,pp,dp,"
    "micro_batch,global_batch,recompute,dtype,device,topology,measured_iteration_s\n"
    "a100,g,,2,4096,32,32,16384,32000,2048,8,8,1,1,4,4,none,bf16,A100-80GB,dgx-a100,1.0\n"
    "h100,g,,2,4096,32,32,16384,32000,2048,8,8,1,1,4,4,none,bf16,H100-SXM,hgx-h100,1.0\n"
    "h100-fp8,g,,2,4096,32,32,16384,32000,2048,8,8,1,1,4,4,none,fp8,H100-SXM,hgx-h100,1.0\n"
    "v100,g,,2,4096,32,32,16384,32000,2048,8,8,1,1,4,4,none,fp16,V100-SXM2,dgx1-v100,1.0\n";

std::vector<double> predicted_s(double gemm_time_scale) {
  const validation::RunTable table = validation::parse_run_table(kTable, "t.csv");
  RunValidationRequest request;
  request.calibration.fitted_on = "t.csv";
  request.calibration.device = "A100-80GB";
  request.calibration.host.gemm_time_scale = gemm_time_scale;
  const RunValidationReport report = validate_runs(table, request);
  std::vector<double> out;
  for (const RunPrediction& prediction : report.predictions) {
    EXPECT_TRUE(prediction.skipped.empty()) << prediction.skipped;
    out.push_back(prediction.predicted_s);
  }
  return out;
}

TEST(ValidationGemmScale, ReachesFittedAndUnmeasuredDevicesButNotFp8) {
  const std::vector<double> plain = predicted_s(1.0);
  const std::vector<double> scaled = predicted_s(1.3);
  ASSERT_EQ(plain.size(), 4u);
  ASSERT_EQ(scaled.size(), 4u);
  EXPECT_GT(scaled[0], plain[0] * 1.05) << "A100: the fitted device";
  EXPECT_DOUBLE_EQ(scaled[1], plain[1]) << "H100 bf16: its own measured GEMM efficiency kept";
  EXPECT_DOUBLE_EQ(scaled[2], plain[2]) << "H100 fp8: measured FP8 peak fraction kept";
  EXPECT_GT(scaled[3], plain[3] * 1.05) << "V100: no GEMM efficiency of its own";
}

}  // namespace
}  // namespace perfsim::scenario

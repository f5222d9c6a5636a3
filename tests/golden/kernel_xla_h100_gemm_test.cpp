// Golden: the analytical GEMM model on H100 SXM against OpenXLA's measured bf16 GEMM table
// (tests/data/kernels/xla-h100, 375 batched GEMMs, b in {1,2,4}, m, n, k in {256..4096}; see
// its README for provenance and the figures asserted here).
//
// The shipped tensor-core parameters (peak fraction 0.88, pipeline depth 64 k-steps) are
// estimates never fitted on this table, so every figure on them is out of sample. The table is
// dominated by GEMMs of a few microseconds, whose time is mostly fixed per-kernel cost the
// two-parameter model has no term for: the model is fast on those (signed error about -59% on
// GEMMs under 20 us) but within 7% on the GEMMs that take at least 100 us, the size class of
// LLM training GEMMs. Refitting the two parameters to the whole table (`perfsim calibrate
// gemm`) lowers the 5-fold CV GMAE only from 45.9% to 41.3% by driving the pipeline depth to
// the edge of its grid (1024 k-steps), which would slow the large GEMMs by about 40%; the
// device file therefore keeps the estimates. These tests pin both facts.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <vector>

#include "devices/device_spec.hpp"
#include "kernels/analytical_gemm.hpp"
#include "kernels/gemm_efficiency_fit.hpp"

namespace perfsim::kernels {
namespace {

const std::filesystem::path kSource = PERFSIM_SOURCE_DIR;
const std::filesystem::path kTable =
    std::filesystem::path(PERFSIM_TEST_DATA_DIR) / "kernels/xla-h100/xla-h100-gemm-bf16.csv";

devices::DeviceSpec h100() {
  return devices::load_device_file((kSource / "configs/devices/H100-SXM.json").string());
}

TEST(XlaH100Gemm, TableReadsEveryBatchedRow) {
  const std::vector<MeasuredGemm> table = read_deepbench_gemm_table(kTable, DType::kBFloat16);
  ASSERT_EQ(table.size(), 375u);
  int batched = 0;
  for (const MeasuredGemm& gemm : table)
    batched += gemm.work.batch > 1;
  EXPECT_EQ(batched, 250);  // b = 2 and b = 4 rows: the batch column is read, not ignored
}

TEST(XlaH100Gemm, ShippedParametersOutOfSample) {
  const devices::DeviceSpec device = h100();
  const std::vector<MeasuredGemm> table = read_deepbench_gemm_table(kTable, DType::kBFloat16);
  const GemmEfficiencyParameters shipped = gemm_efficiency_for(device, DType::kBFloat16);
  const GemmPredictionErrors all = gemm_prediction_errors(table, device, shipped);
  // README: GMAE 45.9% (at most 46%) on all 375 rows, the model faster than measured.
  EXPECT_LE(all.gmae, 0.46);
  EXPECT_LT(all.mean_signed, 0);
  std::vector<MeasuredGemm> large;
  for (const MeasuredGemm& gemm : table)
    if (gemm.measured_us >= 100)
      large.push_back(gemm);
  ASSERT_EQ(large.size(), 16u);
  // README: GMAE 6.6% (at most 6.7%) on the 16 GEMMs of at least 100 us.
  EXPECT_LE(gemm_prediction_errors(large, device, shipped).gmae, 0.067);
}

TEST(XlaH100Gemm, RefitGainsLittleOutOfSample) {
  const devices::DeviceSpec device = h100();
  const std::vector<MeasuredGemm> table = read_deepbench_gemm_table(kTable, DType::kBFloat16);
  // README: 5-fold CV GMAE of the refitted parameters 41.3% (at most 41.3%), in sample 41.5%
  // (at most 41.5%).
  const GemmPredictionErrors cv = cross_validate_gemm_efficiency(table, device, 5);
  EXPECT_LE(cv.gmae, 0.413);
  const GemmEfficiencyParameters fitted = fit_gemm_efficiency(table, device);
  EXPECT_LE(gemm_prediction_errors(table, device, fitted).gmae, 0.415);
  // README: the fit lands on the largest pipeline depth of its grid (1024 k-steps).
  EXPECT_EQ(fitted.pipeline_depth_k, 1024);
}

}  // namespace
}  // namespace perfsim::kernels

// `validate runs` checks each row's layout against its device with the memory closed form: every
// row ran, so a layout that does not fit is a miss of the memory model. The verdict is the one
// `perfsim memory --llm` gives for the same layout, and an unknown model file never reaches it.
#include <gtest/gtest.h>

#include <string>

#include "devices/device_spec.hpp"
#include "memory/device_memory.hpp"
#include "memory/llm_memory.hpp"
#include "scenario/device_argument.hpp"
#include "scenario/run_validation.hpp"
#include "validation/run_table.hpp"

namespace perfsim::scenario {
namespace {

// Two layouts of one 8-layer model on 8 H100s: TP 8 keeps little per GPU; TP 1 with micro-batch
// 16 of 8192 tokens keeps every layer's activations of 131072 tokens and cannot fit.
constexpr const char* kTable =
    "name,group,model,layers,hidden,heads,kv_heads,ffn_hidden,vocab,seq_len,gpus,tp,pp,dp,"
    "micro_batch,global_batch,recompute,dtype,device,topology,measured_iteration_s\n"
    "lean,g,,8,4096,32,32,16384,32000,2048,8,8,1,1,1,4,none,bf16,H100-SXM,hgx-h100,1.0\n"
    "heavy,g,,8,4096,32,32,16384,32000,8192,8,1,1,8,16,128,none,bf16,H100-SXM,hgx-h100,1.0\n";

TEST(ValidationMemoryCheck, EachRowCarriesItsClosedFormVerdict) {
  const validation::RunTable table = validation::parse_run_table(kTable, "t.csv");
  const RunValidationReport report = validate_runs(table, RunValidationRequest{});
  ASSERT_EQ(report.predictions.size(), 2u);
  const RunPrediction& lean = report.predictions[0];
  const RunPrediction& heavy = report.predictions[1];
  ASSERT_TRUE(lean.skipped.empty()) << lean.skipped;
  ASSERT_TRUE(heavy.skipped.empty()) << heavy.skipped;
  EXPECT_TRUE(lean.memory.known);
  EXPECT_TRUE(lean.memory.fits);
  EXPECT_TRUE(heavy.memory.known);
  EXPECT_FALSE(heavy.memory.fits);
  EXPECT_LT(heavy.memory.margin_bytes, 0);

  // The same figure `perfsim memory --llm` prints for the row's layout and device.
  const LlmScenario scenario = scenario_of_run(table.rows[1], "t.csv");
  const devices::DeviceSpec device = read_device_argument("H100-SXM");
  const memory::LlmMemoryEstimate estimate = memory::estimate_llm_memory(
      scenario.model, scenario.parallel, memory::device_memory_of(device));
  EXPECT_EQ(heavy.memory_peak_bytes, estimate.worst().total_bytes);
  EXPECT_EQ(heavy.memory.margin_bytes,
            static_cast<Bytes>(device.hbm_capacity_bytes.value) - heavy.memory_peak_bytes);
}

// A row whose cell cannot be read is skipped with the table, its line and the column named, as a
// row that fails to simulate is.
TEST(ValidationMemoryCheck, ABadCellSkipsItsRowWithTableAndLine) {
  const std::string table_text =
      std::string(kTable) +
      "badzero,g,,8,4096,32,32,16384,32000,2048,8,8,1,1,1,4,none,bf16,H100-SXM,hgx-h100,x\n";
  const validation::RunTable table = validation::parse_run_table(table_text, "t.csv");
  const RunValidationReport report = validate_runs(table, RunValidationRequest{});
  ASSERT_EQ(report.predictions.size(), 3u);
  const std::string& skipped = report.predictions[2].skipped;
  EXPECT_EQ(skipped.rfind("t.csv: line 4: measured_iteration_s", 0), 0u) << skipped;
}

// The capacity is what CUDA reports to a process (cudaGetDeviceProperties totalGlobalMem, as
// PyTorch prints it), not the datasheet's decimal gigabytes: 81089 MiB on an H100 80GB HBM3.
TEST(ValidationMemoryCheck, DeviceCapacityIsWhatCudaReports) {
  constexpr double kMiB = 1024.0 * 1024.0;
  EXPECT_DOUBLE_EQ(read_device_argument("H100-SXM").hbm_capacity_bytes.value, 81089 * kMiB);
  EXPECT_DOUBLE_EQ(read_device_argument("H200").hbm_capacity_bytes.value, 143156 * kMiB);
  EXPECT_DOUBLE_EQ(read_device_argument("A100-40GB").hbm_capacity_bytes.value, 40536 * kMiB);
  EXPECT_DOUBLE_EQ(read_device_argument("A100-80GB").hbm_capacity_bytes.value, 85056798720.0);
}

}  // namespace
}  // namespace perfsim::scenario

// Trace-driven peak memory (seed 003 Sec. 3) on the real execution traces: rank 0 of the DLRM
// 8xV100 fixture and the ResNet 2-GPU fixture. The report is printed; the assertions check what
// the traces themselves say (table sizes, phases), not figures copied from a previous run.
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>

#include "memory/trace_memory.hpp"
#include "trace_io/execution_trace_loader.hpp"

namespace perfsim::memory {
namespace {

const std::string kDlrmArchive =
    std::string(PERFSIM_SHARED_DATA_DIR) + "/traces/param-dlrm-8xV100/dlrm_pytorch_et.tar.gz";
const std::string kResnet =
    std::string(PERFSIM_SHARED_DATA_DIR) + "/traces/param-resnet-2gpu/resnet_2gpu_et.json.gz";

DeviceMemory v100_32gb() {
  DeviceMemory device;
  device.name = "V100-SXM2-32GB";
  // totalGlobalMem in the deviceProperties of the paired Kineto trace of the same run.
  device.capacity_bytes = 34'079'899'648;
  return device;
}

void require_fixture(const std::string& path) {
  ASSERT_TRUE(std::filesystem::exists(path)) << "missing trace fixture " << path;
}

TEST(TraceMemoryGolden, DlrmRankZeroPeakAndBreakdown) {
  require_fixture(kDlrmArchive);
  const Trace trace =
      load_execution_trace_file(kDlrmArchive + ":dlrm_pytorch_et/dlrm_eg_0.json", 0);
  const TraceMemoryReport report = trace_memory_report(trace, v100_32gb());
  std::cout << format_trace_memory_report(report);
  std::cout << "  verdict: " << format_verdict(report.verdict, v100_32gb()) << "\n";

  EXPECT_EQ(report.device, "cuda:0");
  // The embedding table this rank owns and its Adagrad momentum: the dev_weights and
  // momentum1_dev arguments of the fbgemm lookup op, 640,649,648 fp32 elements each, present
  // from the start to the end of the iteration.
  const Bytes table_bytes = 640'649'648LL * 4;
  EXPECT_GE(report.peak_live_tensor_bytes, 2 * table_bytes);
  EXPECT_GE(report.live_at_peak[MemoryCategory::kParameters], table_bytes);
  EXPECT_GE(report.live_at_peak[MemoryCategory::kOptimizerState], table_bytes);
  ASSERT_GE(report.largest_at_peak.size(), 2u);
  EXPECT_EQ(report.largest_at_peak[0].bytes, table_bytes);
  EXPECT_EQ(report.largest_at_peak[1].bytes, table_bytes);
  // Allocator invariants: rounding and caching only add.
  EXPECT_GE(report.peak_allocated_bytes, report.peak_live_tensor_bytes);
  EXPECT_GE(report.peak_reserved_bytes, report.peak_allocated_bytes);
  EXPECT_LE(report.live_at_peak.total(), report.peak_live_tensor_bytes);
  EXPECT_EQ(report.peak_device_bytes, report.peak_reserved_bytes + kDefaultContextBytes);
  EXPECT_TRUE(report.verdict.fits);
  // Gradients, the DDP all-reduce bucket and the Adagrad state of the dense layers are live too.
  EXPECT_GT(report.live_at_peak[MemoryCategory::kCommunication], 0);
  EXPECT_GT(report.live_at_peak[MemoryCategory::kGradients], 0);
}

TEST(TraceMemoryGolden, ResnetPeaksInBackwardWithActivationsDominant) {
  require_fixture(kResnet);
  const Trace trace = load_execution_trace_file(kResnet);
  DeviceMemory device;  // the GPU of this run is not recorded: no verdict
  const TraceMemoryReport report = trace_memory_report(trace, device);
  std::cout << format_trace_memory_report(report);

  EXPECT_EQ(report.device, "cuda:1");  // traces/README.md: every GPU tensor is on cuda:1
  EXPECT_FALSE(report.verdict.known);
  // A CNN's footprint peaks when the forward pass has saved every activation: at the start of
  // backward.
  EXPECT_EQ(report.peak_phase, TracePhase::kBackward);
  // traces/README.md: the file holds ProfilerStep#4, #5 and #6.
  EXPECT_TRUE(report.peak_profiler_step == "ProfilerStep#4" ||
              report.peak_profiler_step == "ProfilerStep#5" ||
              report.peak_profiler_step == "ProfilerStep#6")
      << report.peak_profiler_step;
  for (std::size_t i = 0; i < kMemoryCategoryCount; ++i) {
    const auto category = static_cast<MemoryCategory>(i);
    if (category != MemoryCategory::kActivations) {
      EXPECT_GT(report.live_at_peak[MemoryCategory::kActivations], report.live_at_peak[category]);
    }
  }
  EXPECT_GE(report.peak_reserved_bytes, report.peak_allocated_bytes);
}

}  // namespace
}  // namespace perfsim::memory

// Compute kernels beside a NCCL kernel (tests/data/overlap-interference): the slowdown the SM
// and HBM sharing rule predicts against the reported one. Out of sample: nothing was fitted on
// these rows. The reports state no shapes or channel counts for most kernels, so the rule is
// applied to a kernel of each kind (memory-bound or compute-bound) with perfsim's defaults.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

#include "devices/device_spec.hpp"
#include "generators/llm/llm_collective_bus_rates.hpp"
#include "io/csv_table.hpp"
#include "kernels/analytical_gemm.hpp"
#include "kernels/comm_contention.hpp"
#include "kernels/comm_hbm_traffic.hpp"
#include "topology/topology.hpp"

namespace perfsim {
namespace {

std::filesystem::path source_path(const std::string& relative) {
  return std::filesystem::path(PERFSIM_SOURCE_DIR) / relative;
}

struct Comparison {
  std::string source, kernel;
  double measured = 0, predicted = 0;
};

std::vector<Comparison> compare() {
  const io::CsvTable table = io::CsvTable::read(
      source_path("tests/data/overlap-interference/overlap_interference.csv").string(),
      "overlap interference");
  std::vector<Comparison> out;
  for (const io::CsvTable::Row& row : table.rows()) {
    const devices::DeviceSpec device = devices::load_device_file(
        source_path("configs/devices/" + table.cell(row, "device") + ".json").string());
    const topology::Topology node = topology::load_topology(
        source_path("configs/topologies/" + table.cell(row, "topology") + ".json").string());
    // An all-gather over the node's 8 GPUs.
    const double bus_GBps =
        generators::llm::collective_bus_rates({.tp = 8, .pp = 1, .dp = 1}, node).tp_GBps;
    const kernels::CommLoad load{
        table.cell(row, "comm_ctas").empty()
            ? generators::llm::ParallelConfig{}.comm_sms
            : static_cast<int>(table.number(row, "comm_ctas", 1, 1000)),
        kernels::hbm_bytes_per_bus_byte(CollectiveKind::kAllGather,
                                        kernels::CommDataPath::kNcclStaged) *
            bus_GBps};
    kernels::KernelSpec spec;
    double alone_us = 100;
    if (table.cell(row, "kind") == "memory") {
      spec = {"elementwise", KernelCategory::kOther,
              kernels::ElementwiseWork{0, 1e8, 1e8, DType::kBFloat16}};
    } else if (!table.cell(row, "gemm_m").empty()) {
      const kernels::GemmWork gemm{static_cast<std::int64_t>(table.number(row, "gemm_m", 1, 1e6)),
                                   static_cast<std::int64_t>(table.number(row, "gemm_n", 1, 1e6)),
                                   static_cast<std::int64_t>(table.number(row, "gemm_k", 1, 1e6)),
                                   1, DType::kBFloat16};
      spec = {"gemm", KernelCategory::kGemm, gemm};
      alone_us = kernels::analytical_gemm_duration_us(gemm, device);
    } else {  // compute-bound, no shape: the SM share
      spec = {"compute", KernelCategory::kGemm,
              kernels::ElementwiseWork{1e12, 0, 0, DType::kBFloat16}};
    }
    out.push_back({table.cell(row, "source"), table.cell(row, "compute_kernel"),
                   table.number(row, "measured_slowdown", 1, 100),
                   kernels::contended_duration_us(spec, alone_us, load, device) / alone_us});
  }
  return out;
}

TEST(OverlapInterference, PredictedAgainstReportedSlowdowns) {
  const std::vector<Comparison> rows = compare();
  ASSERT_EQ(rows.size(), 4u);
  std::printf("%-22s %-36s %9s %9s %7s\n", "source", "kernel", "measured", "predicted", "error");
  for (const Comparison& row : rows)
    std::printf("%-22s %-36s %9.3f %9.3f %+6.1f%%\n", row.source.c_str(), row.kernel.c_str(),
                row.measured, row.predicted, 100 * (row.predicted / row.measured - 1));
  // A100 beside an NVLink all-gather (3 x 0.8 x 300 = 720 GB/s of 2039): compute kernels at
  // 84 of 108 SMs, element-wise at 1319 of 2039 GB/s. The rule explains part of the reported
  // slowdowns only (README: 27-38 % short): what it leaves out is not modelled yet.
  EXPECT_NEAR(rows[0].predicted, 108.0 / 84.0, 1e-9);
  EXPECT_NEAR(rows[1].predicted, 108.0 / 84.0, 1e-9);
  EXPECT_NEAR(rows[2].predicted, 2039.0 / (2039.0 - 720.0), 1e-9);
  for (int i = 0; i < 3; ++i) {
    EXPECT_LT(rows[i].predicted, rows[i].measured) << rows[i].kernel;
    EXPECT_GT(rows[i].predicted / rows[i].measured, 0.60) << rows[i].kernel;
  }
  // H100, a one-wave GEMM beside 24 NCCL CTAs. The analytical model re-tiles the GEMM for the
  // 108 SMs left (1.44, -15 %); cuBLAS picks its tile for the whole GPU, so the reported kernel
  // kept 132 CTAs and ran a second wave (2.0 with that tile, +17.5 %): the two bracket it.
  EXPECT_GE(rows[3].predicted, 132.0 / 108.0);
  EXPECT_LT(rows[3].predicted, rows[3].measured);
  EXPECT_GT(rows[3].predicted / rows[3].measured, 0.80);
}

}  // namespace
}  // namespace perfsim

// Host overheads extracted from rank 0 of the DLRM Kineto fixture (seed 000 Sec. 4.3.3). The
// paper finds T1 means around 8 us on V100 (Sec. 4.4.2, Fig. 4.7); this PyTorch version and
// DDP/torchrec setup differ, so the test asserts a plausible band and prints the figures.
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>
#include <string>

#include "overheads/overhead_extractor.hpp"
#include "trace_io/kineto_loader.hpp"

namespace perfsim::overheads {
namespace {

const std::string kArchive =
    std::string(PERFSIM_SHARED_DATA_DIR) + "/traces/param-dlrm-8xV100/dlrm_kineto.tar.gz";
const std::string kRank0 = kArchive + ":dlrm_kineto/worker0_step_12.1694128201545.pt.trace.json";

void print(const char* label, const OverheadStats& stats) {
  std::cout << "  " << label << ": mean " << stats.mean_us << " us, std " << stats.stddev_us
            << " us, count " << stats.count << "\n";
}

TEST(OverheadsDlrm, Rank0PooledMeansArePlausible) {
  ASSERT_TRUE(std::filesystem::exists(kArchive)) << "fixture missing: " << kArchive;
  Trace trace = trace_io::load_kineto_trace_file(kRank0);
  HostOverheads overheads = extract_host_overheads(trace);
  std::cout << "rank 0 pooled host overheads (profiler overhead "
            << overheads.launch.profiler_cpu_overhead_us << " us per event removed):\n";
  print("T1", overheads.all_ops.t1);
  print("T2", overheads.all_ops.t2);
  print("T3", overheads.all_ops.t3);
  print("T4", overheads.t4_all);
  print("T5", overheads.all_ops.t5);
  for (const auto& [api, stats] : overheads.t4_per_runtime) {
    std::cout << "  T4 " << api << ": ";
    print("", stats);
  }

  EXPECT_GT(overheads.all_ops.t1.count, 100);
  EXPECT_GT(overheads.all_ops.t2.count, 50);
  EXPECT_GT(overheads.all_ops.t3.count, 50);
  EXPECT_GT(overheads.all_ops.t5.count, 50);
  EXPECT_GT(overheads.t4_all.count, 200);
  // A gap between two eager PyTorch ops on a V100 host: a few to a few tens of microseconds.
  EXPECT_GT(overheads.all_ops.t1.mean_us, 1.0);
  EXPECT_LT(overheads.all_ops.t1.mean_us, 40.0);
  EXPECT_GT(overheads.t4_per_runtime.at("cudaLaunchKernel").mean_us, 1.0);
  EXPECT_LT(overheads.t4_per_runtime.at("cudaLaunchKernel").mean_us, 20.0);
  EXPECT_EQ(overheads.source_traces, 1);
}

TEST(OverheadsDlrm, AllRanksMergeIntoOneSharedSet) {
  ASSERT_TRUE(std::filesystem::exists(kArchive)) << "fixture missing: " << kArchive;
  std::vector<HostOverheads> sets;
  for (const Trace& trace : trace_io::load_kineto_archive(kArchive))
    sets.push_back(extract_host_overheads(trace));
  HostOverheads shared = merge_host_overheads(sets);
  std::int64_t t1_count = 0;
  for (const HostOverheads& set : sets)
    t1_count += set.all_ops.t1.count;
  EXPECT_EQ(shared.source_traces, 8);
  EXPECT_EQ(shared.all_ops.t1.count, t1_count);
  std::cout << "8-rank shared set:\n";
  print("T1", shared.all_ops.t1);
  print("T4", shared.t4_all);
}

}  // namespace
}  // namespace perfsim::overheads

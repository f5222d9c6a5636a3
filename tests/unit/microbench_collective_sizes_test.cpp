// The collective sweep of microbench/ (seed 001 Sec. IV-A: "equal message size starting from
// 4 bytes on each device and doubling it until exceeding the device memory"; random per-peer
// sizes for all-to-allv), and the table a measured sweep becomes (nccl-tests' bus factors).
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "collectives/bus_factor.hpp"
#include "microbench/host/all_to_allv_sizes.hpp"
#include "microbench/host/collective_results.hpp"
#include "microbench/host/collective_sizes.hpp"
#include "microbench/host/gpu_topology.hpp"
#include "perfsim/error.hpp"

namespace perfsim::microbench {
namespace {

TEST(MicrobenchCollectiveSizes, AllReduceStartsAtFourBytesAndDoublesUpToTheCap) {
  // Out-of-place all-reduce needs send + receive: 2 S <= 1 MiB, so S = 4 .. 512 KiB.
  const CollectiveSizeSweep sweep{4, Bytes{1} << 20, 4, 8};
  const auto sizes = collective_message_sizes(CollectiveKind::kAllReduce, sweep);
  ASSERT_EQ(sizes.size(), 18u);  // 2^2 .. 2^19
  EXPECT_EQ(sizes.front(), 4);
  EXPECT_EQ(sizes.back(), Bytes{1} << 19);
  for (std::size_t i = 1; i < sizes.size(); ++i)
    EXPECT_EQ(sizes[i], 2 * sizes[i - 1]);
  EXPECT_LE(collective_buffer_bytes(CollectiveKind::kAllReduce, sizes.back(), 8),
            sweep.memory_cap_bytes);
  EXPECT_GT(collective_buffer_bytes(CollectiveKind::kAllReduce, 2 * sizes.back(), 8),
            sweep.memory_cap_bytes);
}

TEST(MicrobenchCollectiveSizes, TheCapIsInclusiveAndCountsTheCollectivesBuffers) {
  // All-gather of S bytes on 4 ranks sends S/4 and receives S: 1.25 S <= 5120 -> S <= 4096.
  const CollectiveSizeSweep sweep{16, 5120, 4, 4};
  const auto sizes = collective_message_sizes(CollectiveKind::kAllGather, sweep);
  EXPECT_EQ(sizes.front(), 16);
  EXPECT_EQ(sizes.back(), 4096);
  EXPECT_EQ(sizes.size(), 9u);
  const CollectiveSizeSweep one_less{16, 5119, 4, 4};
  EXPECT_EQ(collective_message_sizes(CollectiveKind::kAllGather, one_less).back(), 2048);
}

TEST(MicrobenchCollectiveSizes, SplitCollectivesRoundToWholeElementsPerRank) {
  // 8 ranks x fp32: all-to-all moves whole elements per peer, so sizes below 32 bytes vanish
  // and the rest stay powers of two.
  const CollectiveSizeSweep sweep{4, Bytes{1} << 16, 4, 8};
  const auto sizes = collective_message_sizes(CollectiveKind::kAllToAll, sweep);
  EXPECT_EQ(sizes.front(), 32);
  for (Bytes size : sizes)
    EXPECT_EQ(size % 32, 0);
  // 6 ranks: 4 .. 2^15 rounded down to multiples of 24, without repeats.
  const CollectiveSizeSweep six{4, Bytes{1} << 16, 4, 6};
  const auto rounded = collective_message_sizes(CollectiveKind::kReduceScatter, six);
  EXPECT_EQ(rounded.front(), 24);  // 32 -> 24
  EXPECT_EQ(rounded[1], 48);       // 64 -> 48
  for (std::size_t i = 1; i < rounded.size(); ++i)
    EXPECT_GT(rounded[i], rounded[i - 1]);
}

TEST(MicrobenchCollectiveSizes, BadSweepsAreInputErrors) {
  EXPECT_THROW(collective_message_sizes(CollectiveKind::kAllReduce, {0, 1024, 4, 2}), InputError);
  EXPECT_THROW(collective_message_sizes(CollectiveKind::kAllReduce, {4, 1024, 0, 2}), InputError);
  EXPECT_THROW(collective_message_sizes(CollectiveKind::kAllReduce, {4, 1024, 4, 0}), InputError);
  try {
    collective_message_sizes(CollectiveKind::kAllReduce, {4, 7, 4, 2});
    FAIL() << "a cap below the first size's buffers must throw";
  } catch (const InputError& error) {
    EXPECT_EQ(error.location(), "memory_cap_bytes");
  }
}

TEST(MicrobenchAllToAllvSizes, EverySenderSendsItsTotalInWholeElements) {
  const AllToAllvSizes sizes = random_all_to_allv_sizes(8, 1 << 20, 4, 7);
  ASSERT_EQ(sizes.bytes.size(), 64u);
  for (int rank = 0; rank < 8; ++rank)
    EXPECT_EQ(sizes.sent_by(rank), 1 << 20);
  for (Bytes part : sizes.bytes) {
    EXPECT_GE(part, 0);
    EXPECT_EQ(part % 4, 0);
  }
  const auto received = sizes.received_per_rank();
  EXPECT_EQ(std::accumulate(received.begin(), received.end(), Bytes{0}), Bytes{8} << 20);
  // Random per-peer sizes: the receivers do not all get the same.
  EXPECT_NE(*std::min_element(received.begin(), received.end()),
            *std::max_element(received.begin(), received.end()));
  // Seed 001 Sec. IV-A: the model size is the largest sent or received total over ranks.
  const Bytes largest_received = *std::max_element(received.begin(), received.end());
  EXPECT_EQ(sizes.model_message_bytes(), std::max<Bytes>(1 << 20, largest_received));
}

TEST(MicrobenchAllToAllvSizes, SameSeedSameSizesAndTotalsRoundDownToElements) {
  EXPECT_EQ(random_all_to_allv_sizes(4, 4096, 2, 3).bytes,
            random_all_to_allv_sizes(4, 4096, 2, 3).bytes);
  EXPECT_NE(random_all_to_allv_sizes(4, 4096, 2, 3).bytes,
            random_all_to_allv_sizes(4, 4096, 2, 4).bytes);
  const AllToAllvSizes odd = random_all_to_allv_sizes(3, 1001, 4, 1);
  for (int rank = 0; rank < 3; ++rank)
    EXPECT_EQ(odd.sent_by(rank), 1000);
  EXPECT_THROW(random_all_to_allv_sizes(0, 4096, 4, 1), InputError);
  EXPECT_THROW(random_all_to_allv_sizes(2, -1, 4, 1), InputError);
}

TEST(MicrobenchCollectiveResults, BandwidthsFollowNcclTestsFactors) {
  CollectiveRun run;
  run.name = "all_reduce_8r_1n";
  run.kind = CollectiveKind::kAllReduce;
  run.n_ranks = 8;
  run.device = "8x test GPU";
  // 1e6 bytes in a mean of 10 us: algbw 100 GB/s, busbw 100 * 2 * 7 / 8 = 175 GB/s.
  run.measurements.push_back({1000000, 1000000, false, {9.0, 10.0, 11.0}});
  const auto sweep = to_collective_sweep(run);
  ASSERT_EQ(sweep.samples.size(), 1u);
  EXPECT_DOUBLE_EQ(sweep.samples[0].time_us, 10.0);
  EXPECT_DOUBLE_EQ(sweep.samples[0].algbw_GBps, 100.0);
  EXPECT_DOUBLE_EQ(sweep.samples[0].busbw_GBps, 175.0);
  EXPECT_EQ(sweep.metadata.at("device"), "8x test GPU");
  run.kind = CollectiveKind::kAllToAllv;
  EXPECT_DOUBLE_EQ(to_collective_sweep(run).samples[0].busbw_GBps, 100.0 * 7 / 8);
  run.measurements[0].iteration_times_us.clear();
  EXPECT_THROW(to_collective_sweep(run), RuntimeFailure);
  EXPECT_EQ(collective_table_name(CollectiveKind::kAllToAllv, 16, 2), "all_to_allv_16r_2n");
}

TEST(MicrobenchTopology, LabelsAndPeerMatrixSayWhatTheRuntimeReported) {
  GpuInfo h100{0, "NVIDIA H100 80GB HBM3", "0000:18:00.0", Bytes{80} << 30, 132, 90, 1980, 2619, 0};
  GpuInfo other = h100;
  other.index = 1;
  other.pci_bus_id = "0000:2A:00.0";
  EXPECT_EQ(device_label({h100}), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(device_label({h100, other}), "2x NVIDIA H100 80GB HBM3");
  other.name = "NVIDIA A100-SXM4-40GB";
  EXPECT_EQ(device_label({h100, other}), "NVIDIA H100 80GB HBM3 + NVIDIA A100-SXM4-40GB");
  EXPECT_EQ(device_label({}), "");
  LocalTopology topology{"node-1", {h100, other}, {{0, 1, true, true, 0}, {1, 0, true, false, 1}}};
  const std::string text = describe_topology(topology);
  EXPECT_NE(text.find("host node-1"), std::string::npos) << text;
  EXPECT_NE(text.find("GPU0 NVIDIA H100 80GB HBM3 0000:18:00.0 sm_90 132 SMs 81920 MiB"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(" 0-1:A0"), std::string::npos) << text;  // native atomics: NVLink-class
  EXPECT_NE(text.find(" 1-0:P1"), std::string::npos) << text;  // peer access only: PCIe-class
}

}  // namespace
}  // namespace perfsim::microbench

// The heuristic embedding-lookup model of seed 000 Sec. 4.3.2.1.1 against a hand calculation.
#include <gtest/gtest.h>

#include "devices/device_spec.hpp"
#include "kernels/embedding_heuristic.hpp"

namespace perfsim::kernels {
namespace {

const std::string kDeviceFolder = std::string(PERFSIM_SOURCE_DIR) + "/configs/devices";

// B = 1024, E = 10000, T = 8, L = 20, D = 64, rows_per_block = 32 on V100-SXM2
// (80 SMs, L2 6 MiB = 6291456 B, DRAM 900 GB/s, L2 2155 GB/s).
EmbeddingWork example(bool backward) {
  EmbeddingWork work;
  work.batch_size = 1024;
  work.rows = 10000;
  work.tables = 8;
  work.pooling_factor = 20;
  work.dim = 64;
  work.backward = backward;
  work.rows_per_block = 32;
  return work;
}

TEST(KernelEmbedding, PerWarpTrafficFollowsSeed000) {
  const EmbeddingWarpTraffic forward = embedding_warp_traffic(example(false));
  EXPECT_EQ(forward.table_offsets_bytes, 32);
  EXPECT_EQ(forward.offsets_bytes, 64);
  EXPECT_EQ(forward.indices_bytes, 96);        // ceil(4 * 20 / 32) * 32
  EXPECT_EQ(forward.outputs_bytes, 256);       // ceil(4 * 64 / 32) * 32
  EXPECT_EQ(forward.weights_bytes, 20 * 256);  // L rows of ceil(4 * 64 / 32) * 32
  const EmbeddingWarpTraffic backward = embedding_warp_traffic(example(true));
  EXPECT_EQ(backward.weights_bytes, 10240);  // ceil(2 * 4 * 20 * 64 / 32) * 32
}

TEST(KernelEmbedding, DramOnlyTime) {
  // B T (32 + 64 + 96 + 5120 + 256) / 900e9 = 8192 * 5568 / 900e9 s = 50.6812 us.
  const auto v100 = devices::find_device(kDeviceFolder, "V100-SXM2");
  EXPECT_NEAR(embedding_dram_only_duration_us(example(false), v100), 8192.0 * 5568 / 900e3, 1e-9);
  EXPECT_NEAR(embedding_dram_only_duration_us(example(false), v100), 50.6812, 1e-4);
}

TEST(KernelEmbedding, L2HitRateAndEnhancedTime) {
  const auto v100 = devices::find_device(kDeviceFolder, "V100-SXM2");
  // num_tables = 32 * 80 / 1024 = 2.5; cached rows = min(6291456 / (2.5 * 256 B), 10000)
  // = 9830.4; p = C(9830.4, 20) / C(10000, 20) = prod_{i<20} (9830.4 - i) / (10000 - i).
  double p = 1;
  for (int i = 0; i < 20; ++i)
    p *= (9830.4 - i) / (10000.0 - i);
  EXPECT_NEAR(p, 0.71004, 1e-4);
  EXPECT_NEAR(embedding_l2_hit_rate(example(false), v100), p, 1e-9);
  // tr_L2 = 32 + 64 + p 5120, tr_DRAM = 96 + 256 + (1 - p) 5120;
  // t = 8192 (tr_DRAM / 900e9 + tr_L2 / 2155e9).
  const double expected_us =
      8192 * ((96 + 256 + (1 - p) * 5120) / 900e3 + (32 + 64 + p * 5120) / 2155e3);
  EXPECT_NEAR(embedding_heuristic_duration_us(example(false), v100), expected_us, 1e-9);
  EXPECT_NEAR(expected_us, 30.90, 0.01);
}

TEST(KernelEmbedding, HugeTablesMissL2AndSmallTablesHit) {
  const auto v100 = devices::find_device(kDeviceFolder, "V100-SXM2");
  EmbeddingWork huge = example(false);
  huge.rows = 10'000'000;
  EXPECT_LT(embedding_l2_hit_rate(huge, v100), 1e-20);
  EmbeddingWork tiny = example(false);
  tiny.rows = 1000;  // fits: cached rows = min(9830.4, 1000) = E, p = 1
  EXPECT_DOUBLE_EQ(embedding_l2_hit_rate(tiny, v100), 1.0);
}

}  // namespace
}  // namespace perfsim::kernels

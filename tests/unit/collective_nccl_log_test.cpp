// nccl-tests log parsing: the three layouts of shared/data/nccl-tests and the malformed logs of
// tests/data/nccl (see its README.md).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "collectives/bus_factor.hpp"
#include "collectives/nccl_tests_log.hpp"
#include "perfsim/error.hpp"

namespace perfsim::collectives {
namespace {

const std::filesystem::path kShared = std::filesystem::path(PERFSIM_SHARED_DATA_DIR) / "nccl-tests";
const std::filesystem::path kMalformed = std::filesystem::path(PERFSIM_TEST_DATA_DIR) / "nccl";

NcclTestsLog read(const std::filesystem::path& path) {
  if (!std::filesystem::exists(path))
    throw std::runtime_error("missing fixture " + path.string());
  return read_nccl_tests_log(path.string());
}

// Expects InputError whose message contains `needle` and whose location is `location`.
void expect_input_error(const std::filesystem::path& path, const std::string& location,
                        const std::string& needle) {
  ASSERT_TRUE(std::filesystem::exists(path)) << "missing fixture " << path;
  try {
    read_nccl_tests_log(path.string());
    FAIL() << path << " parsed without error";
  } catch (const InputError& error) {
    EXPECT_EQ(error.file(), path.string());
    EXPECT_EQ(error.location(), location) << error.what();
    EXPECT_NE(std::string(error.what()).find(needle), std::string::npos) << error.what();
  }
}

TEST(NcclTestsLog, CurrentFormatTwoNodes) {
  const auto log = read(kShared / "h100-ib400-2node-allreduce.txt");
  EXPECT_EQ(log.sweep.kind, CollectiveKind::kAllReduce);
  EXPECT_EQ(log.sweep.n_ranks, 16);
  EXPECT_EQ(log.sweep.n_nodes, 2);
  EXPECT_FALSE(log.sweep.time_derived_from_busbw);
  ASSERT_EQ(log.sweep.samples.size(), 64u);  // 32 sizes x (out-of-place, in-place)
  EXPECT_EQ(log.sweep.samples.front().bytes, 8);
  EXPECT_DOUBLE_EQ(log.sweep.samples.front().time_us, 68.52);
  EXPECT_FALSE(log.sweep.samples.front().in_place);
  EXPECT_EQ(log.sweep.samples[32].bytes, 8);
  EXPECT_DOUBLE_EQ(log.sweep.samples[32].time_us, 24.70);
  EXPECT_TRUE(log.sweep.samples[32].in_place);
  EXPECT_EQ(log.sweep.metadata.at("nccl"), "2.26.2+cuda12.8");
  EXPECT_EQ(log.sweep.metadata.at("dtype"), "float");
  EXPECT_TRUE(log.warnings.empty()) << log.warnings.front();
}

TEST(NcclTestsLog, OldFormatWithErrorColumn) {
  const auto log = read(kShared / "v100-dgx1-hcm-1node-allreduce.txt");
  EXPECT_EQ(log.sweep.n_ranks, 8);
  EXPECT_EQ(log.sweep.n_nodes, 1);
  ASSERT_EQ(log.sweep.samples.size(), 50u);
  EXPECT_EQ(log.sweep.samples[24].bytes, 134217728);
  EXPECT_DOUBLE_EQ(log.sweep.samples[24].time_us, 1818.8);
}

TEST(NcclTestsLog, BusBandwidthOnlyTableDerivesTime) {
  const auto log = read(kShared / "azure-ndh200v5-1node-allreduce-busbw.txt");
  EXPECT_TRUE(log.sweep.time_derived_from_busbw);
  EXPECT_EQ(log.sweep.n_ranks, 8);
  ASSERT_EQ(log.sweep.samples.size(), 24u);
  const auto& last = log.sweep.samples.back();
  EXPECT_EQ(last.bytes, 8589934592);
  EXPECT_TRUE(last.in_place);
  // time = bytes * 2(n-1)/n / busbw: 8 GiB * 1.75 / 479.98 GB/s.
  EXPECT_NEAR(last.time_us, 8589934592.0 * 1.75 / 479.98e9 * 1e6, 1e-6);
  EXPECT_NEAR(last.algbw_GBps, 479.98 / bus_factor(CollectiveKind::kAllReduce, 8), 1e-12);
}

TEST(NcclTestsLog, TruncatedRowIsAnError) {
  expect_input_error(kMalformed / "truncated-row.txt", "line 31", "truncated table");
}

TEST(NcclTestsLog, MissingFooterWarns) {
  const auto log = read(kMalformed / "no-footer.txt");
  ASSERT_EQ(log.warnings.size(), 1u);
  EXPECT_NE(log.warnings.front().find("line 40"), std::string::npos) << log.warnings.front();
  EXPECT_NE(log.warnings.front().find("truncated"), std::string::npos) << log.warnings.front();
}

TEST(NcclTestsLog, WrongResultsAreDroppedWithAWarning) {
  const auto log = read(kMalformed / "wrong-results.txt");
  ASSERT_EQ(log.warnings.size(), 1u);
  EXPECT_NE(log.warnings.front().find("line 34"), std::string::npos) << log.warnings.front();
  EXPECT_NE(log.warnings.front().find("wrong"), std::string::npos) << log.warnings.front();
  EXPECT_EQ(log.sweep.samples.size(), 63u);
  for (const auto& sample : log.sweep.samples)
    EXPECT_FALSE(sample.bytes == 1048576 && sample.in_place);
}

TEST(NcclTestsLog, NonMonotoneSizesAreAnError) {
  expect_input_error(kMalformed / "non-monotone.txt", "line 27", "non-monotone sizes");
}

TEST(NcclTestsLog, MismatchedGpuCountIsAnError) {
  expect_input_error(kMalformed / "gpu-mismatch.txt", "gpus", "mismatched GPU count");
}

TEST(NcclTestsLog, BusBandwidthTableNeedsAGpuCount) {
  expect_input_error(kMalformed / "busbw-no-gpus.txt", "gpus", "no GPU count");
}

TEST(NcclTestsLog, RawLogWithRankLines) {
  const std::string text =
      "# nThread 1 nGpus 1 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 5 iters: 20\n"
      "#  Rank  0 Group  0 Pid  11 on   hostA device  0 [0x1b] NVIDIA H100 80GB HBM3\n"
      "#  Rank  1 Group  0 Pid  12 on   hostB device  0 [0x1b] NVIDIA H100 80GB HBM3\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
      "time   algbw   busbw #wrong\n"
      "           8             2     float     sum      -1    20.00    0.00    0.00      0    "
      "20.00    0.00    0.00      0\n"
      "          16             4     float     sum      -1    20.00    0.00    0.00      0    "
      "20.00    0.00    0.00    N/A\n"
      "# Out of bounds values : 2 FAILED\n"
      "# Avg bus bandwidth    : 0.00\n";
  const auto log = parse_nccl_tests_log(text, "all_reduce_perf.log");
  EXPECT_EQ(log.sweep.n_ranks, 2);
  EXPECT_EQ(log.sweep.n_nodes, 2);
  EXPECT_EQ(log.sweep.kind, CollectiveKind::kAllReduce);  // from the file name
  EXPECT_EQ(log.sweep.metadata.at("device"), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(log.sweep.samples.size(), 4u);
  ASSERT_EQ(log.warnings.size(), 1u);
  EXPECT_NE(log.warnings.front().find("2 out-of-bounds values"), std::string::npos);
}

// all_gather_perf -b 8 on 2 GPUs prints size 0 twice before 32 B (the count per rank rounds
// down to 0): skipped with a warning; a size 0 after a real row stays non-monotone.
TEST(NcclTestsLog, LeadingSizeZeroRowsAreSkipped) {
  const std::string header =
      "#  Rank  0 Group  0 Pid  11 on   hostA device  0 [0x1b] NVIDIA GeForce RTX 2080 Ti\n"
      "#  Rank  1 Group  0 Pid  11 on   hostA device  1 [0x1c] NVIDIA GeForce RTX 2080 Ti\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
      "time   algbw   busbw #wrong\n";
  const std::string zero =
      "           0             0     float    none      -1     0.33    0.00    0.00      0     "
      "0.36    0.00    0.00      0\n";
  const std::string row =
      "          32             4     float    none      -1    10.52    0.00    0.00      0    "
      "10.01    0.00    0.00      0\n";
  const auto log = parse_nccl_tests_log(header + zero + zero + row + "# Avg bus bandwidth : 0\n",
                                        "all_gather_perf.log");
  EXPECT_EQ(log.sweep.kind, CollectiveKind::kAllGather);
  EXPECT_EQ(log.sweep.samples.size(), 2u);
  EXPECT_EQ(log.sweep.samples.front().bytes, 32);
  ASSERT_EQ(log.warnings.size(), 2u);
  EXPECT_NE(log.warnings.front().find("size 0 row"), std::string::npos);
  EXPECT_THROW(parse_nccl_tests_log(header + row + zero, "all_gather_perf.log"), InputError);
}

}  // namespace
}  // namespace perfsim::collectives

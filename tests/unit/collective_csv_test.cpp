// vTrain's nccl-tests CSV (collectives/collective_csv.hpp): samples, placements and the errors
// that name file and line.
#include <gtest/gtest.h>

#include "collectives/collective_csv.hpp"
#include "perfsim/error.hpp"

namespace perfsim::collectives {
namespace {

constexpr char kHeader[] = "size(B),count,type,time(ns),busbw(GB/s),time(ns),busbw(GB/s)\n";

TEST(CollectiveCsv, ReadsBothPlacements) {
  const std::string text = std::string(kHeader) +
                           "1048576,262144,float,44210,23.72,45100,23.25\n"
                           "2097152,524288,float,53430,39.25,51130,41.01\n";
  const auto sweep = parse_collective_csv(text, "dir/allreduce-2gpu.csv");
  EXPECT_EQ(sweep.name, "allreduce-2gpu");
  EXPECT_EQ(sweep.kind, CollectiveKind::kAllReduce);
  EXPECT_EQ(sweep.n_ranks, 2);
  EXPECT_EQ(sweep.n_nodes, 1);
  ASSERT_EQ(sweep.samples.size(), 4u);
  EXPECT_FALSE(sweep.samples[0].in_place);
  EXPECT_DOUBLE_EQ(sweep.samples[0].time_us, 44.21);
  EXPECT_TRUE(sweep.samples[3].in_place);
  EXPECT_DOUBLE_EQ(sweep.samples[3].time_us, 51.13);
  // Bus bandwidth recomputed from the time agrees with the file's (2(n-1)/n = 1 for 2 GPUs).
  EXPECT_NEAR(sweep.samples[0].busbw_GBps, 23.72, 0.01);
}

TEST(CollectiveCsv, RejectsBadInput) {
  const auto problem_at = [](const std::string& text, const std::string& source) {
    try {
      parse_collective_csv(text, source);
    } catch (const InputError& error) {
      return error.location();
    }
    return std::string("accepted");
  };
  EXPECT_EQ(problem_at("size,count\n", "allreduce-2gpu.csv"), "line 1");
  EXPECT_EQ(problem_at(std::string(kHeader) + "1024,256,float,10\n", "allreduce-2gpu.csv"),
            "line 2");
  EXPECT_EQ(
      problem_at(std::string(kHeader) + "2048,512,float,10,1,10,1\n1024,256,float,10,1,10,1\n",
                 "allreduce-2gpu.csv"),
      "line 3");
  EXPECT_EQ(problem_at(std::string(kHeader) + "1024,256,float,-3,1,10,1\n", "allreduce-2gpu.csv"),
            "line 2");
  EXPECT_EQ(problem_at(kHeader, "results.csv"), "file name");
  EXPECT_EQ(problem_at(std::string(kHeader), "allreduce-2gpu.csv"), "line 1");
}

}  // namespace
}  // namespace perfsim::collectives

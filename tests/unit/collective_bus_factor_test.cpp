// Bus-to-algorithm bandwidth factors (nccl-tests PERFORMANCE.md) and the all-to-allv size rule
// of seed 001 Sec. IV-A.
#include <gtest/gtest.h>

#include <vector>

#include "collectives/bus_factor.hpp"
#include "perfsim/error.hpp"

namespace perfsim::collectives {
namespace {

TEST(BusFactor, MatchesNcclTests) {
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveKind::kAllReduce, 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveKind::kAllReduce, 16), 2.0 * 15 / 16);
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveKind::kAllGather, 4), 0.75);
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveKind::kReduceScatter, 4), 0.75);
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveKind::kAllToAll, 4), 0.75);
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveKind::kAllToAllv, 2), 0.5);
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveKind::kBroadcast, 8), 1.0);
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveKind::kSend, 2), 1.0);
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveKind::kRecv, 2), 1.0);
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveKind::kReduce, 8), 1.0);
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveKind::kBarrier, 8), 0.0);
  EXPECT_THROW(bus_factor(CollectiveKind::kAllReduce, 0), RuntimeFailure);
}

TEST(BusFactor, AllToAllvUsesLargestSentOrReceivedOverRanks) {
  // Rank 2 receives the most (900), more than anyone sends.
  const std::vector<Bytes> sent{100, 800, 300, 50};
  const std::vector<Bytes> received{400, 200, 900, 10};
  EXPECT_EQ(all_to_allv_message_bytes(sent, received), 900);
  EXPECT_THROW(all_to_allv_message_bytes(sent, std::vector<Bytes>{1}), RuntimeFailure);
}

TEST(BusFactor, MessageBytesOfOneRank) {
  CommInfo comm;
  comm.kind = CollectiveKind::kAllToAllv;
  comm.dtype = DType::kFloat32;
  comm.in_split_elements = {10, 20, 30};   // 240 bytes sent
  comm.out_split_elements = {50, 50, 50};  // 600 bytes received
  EXPECT_EQ(model_message_bytes(comm), 600);
  comm.bytes_in = 1000;
  EXPECT_EQ(model_message_bytes(comm), 1000);
  CommInfo gather;
  gather.kind = CollectiveKind::kAllGather;
  gather.bytes_in = 64;
  gather.bytes_out = 512;
  EXPECT_EQ(model_message_bytes(gather), 512);
}

}  // namespace
}  // namespace perfsim::collectives

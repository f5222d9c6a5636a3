// The link-sharing rule (mpi_sim/engine/link_occupancy.hpp) on transfers whose processor-sharing
// schedules are worked out by hand in each comment.
#include <gtest/gtest.h>

#include "mpi_sim/engine/link_occupancy.hpp"

namespace perfsim::engine {
namespace {

LinkDemand nic_both_ways() {
  return {.sends = true, .receives = true, .nic = true};
}
LinkDemand nvlink_both_ways() {
  return {.sends = true, .receives = true, .nic = false};
}
LinkDemand nic_send() {
  return {.sends = true, .receives = false, .nic = true};
}
LinkDemand nic_receive() {
  return {.sends = false, .receives = true, .nic = true};
}

// Transfer A, ready at 0 on both directions of the NIC, 100 alone, posted first: the books the
// tests below add their transfers to.
class LinkOccupancyAfterA : public testing::Test {
 protected:
  void SetUp() override { EXPECT_DOUBLE_EQ(links.share(nic_both_ways(), 0, 100, 0), 100); }

  LinkOccupancy links;
};

// B arrives with A at 0, both move at 1/2: each has moved 100 at 200.
TEST_F(LinkOccupancyAfterA, TwoEqualTransfersOverlappingFullyTakeTwiceAsLong) {
  EXPECT_DOUBLE_EQ(links.share(nic_both_ways(), 0, 100, 0), 200);
}

TEST_F(LinkOccupancyAfterA, DifferentLinkClassesDoNotSlowEachOtherDown) {
  EXPECT_DOUBLE_EQ(links.share(nvlink_both_ways(), 0, 100, 0), 100);
}

// Full duplex: a send and a receive at once (pipeline send_forward beside recv_backward) use
// different directions of the NIC.
TEST(LinkOccupancy, SendAndReceiveUseDifferentDirections) {
  LinkOccupancy links;
  EXPECT_DOUBLE_EQ(links.share(nic_send(), 0, 100, 0), 100);
  EXPECT_DOUBLE_EQ(links.share(nic_receive(), 0, 100, 0), 100);
  // An all-reduce uses both: it shares the send direction with the send above.
  EXPECT_DOUBLE_EQ(links.share(nic_both_ways(), 0, 100, 0), 200);
}

// B (100) arrives at 50, when A has 50 left: both at 1/2 until A ends at 150 (B has moved 50),
// then B alone moves its last 50 by 200: B takes 150.
TEST_F(LinkOccupancyAfterA, PartialOverlapStretchesOnlyTheOverlappedWindow) {
  EXPECT_DOUBLE_EQ(links.share(nic_both_ways(), 50, 100, 50), 150);
}

// A transfer ready after the others have finished is not slowed down.
TEST_F(LinkOccupancyAfterA, TransferAfterTheOthersFinishRunsAlone) {
  EXPECT_DOUBLE_EQ(links.share(nic_both_ways(), 100, 40, 0), 40);
}

// A (300) at 0 takes 300 as posted. B (100) at 0: both at 1/2, B done at 200, A has 200 left
// on the books (it is not stretched in the clock sync, but the bandwidth it yielded is owed).
// C (100) at 200 shares with A's 200: C done at 400, A has 100 left. D (50) at 400 shares
// with A's last 100: D done at 500. The burst of 550 ends at 550 on the link's books.
TEST(LinkOccupancy, EarlierTransfersYieldedBandwidthStaysOnTheBooks) {
  LinkOccupancy links;
  EXPECT_DOUBLE_EQ(links.share(nic_both_ways(), 0, 300, 0), 300);
  EXPECT_DOUBLE_EQ(links.share(nic_both_ways(), 0, 100, 0), 200);
  EXPECT_DOUBLE_EQ(links.share(nic_both_ways(), 200, 100, 200), 200);
  // D at 400 meets A's last 100 (it yielded to B and C): both at 1/2, D (50) done at 500.
  EXPECT_DOUBLE_EQ(links.share(nic_both_ways(), 400, 50, 400), 100);
}

// Three equal transfers at once each take three times as long as alone.
TEST(LinkOccupancy, ThreeEqualTransfersShareInThirds) {
  LinkOccupancy links;
  links.share(nic_send(), 0, 60, 0);
  links.share(nic_send(), 0, 60, 0);
  // The first two are known: 60 each at 1/3 with the third until 180.
  EXPECT_DOUBLE_EQ(links.share(nic_send(), 0, 60, 0), 180);
}

// Transfers finished by the horizon (the rank's CPU clock) are dropped: state stays
// O(transfers in flight).
TEST(LinkOccupancy, HorizonDropsFinishedTransfers) {
  LinkOccupancy links;
  for (int i = 0; i < 1000; ++i) {
    const TimestampUs ready_us = 10.0 * i;
    EXPECT_DOUBLE_EQ(links.share(nic_both_ways(), ready_us, 5, ready_us), 5);
  }
  // Both directions of the NIC hold at most the last transfer.
  EXPECT_LE(links.transfers_in_flight(), 2u);
}

}  // namespace
}  // namespace perfsim::engine

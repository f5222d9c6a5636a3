// Rank packing when `mpirun -n N` oversubscribes the cores (mpi_sim/mpi/process_packing.hpp).
#include "mpi_sim/mpi/process_packing.hpp"

#include <gtest/gtest.h>

namespace perfsim::mpi {
namespace {

TEST(ProcessPacking, OneRankPerProcessWhenEveryProcessHasACore) {
  const ProcessPacking packing = pack_ranks(64, 64, 8, 16);
  EXPECT_EQ(packing.ranks_per_process, 1);
  EXPECT_EQ(packing.active_processes, 64);
  EXPECT_FALSE(packing.packed);
}

TEST(ProcessPacking, MoreRanksThanProcessesIsRoundedUpWithoutPacking) {
  const ProcessPacking packing = pack_ranks(1024, 8, 8, 8);
  EXPECT_EQ(packing.ranks_per_process, 128);
  EXPECT_EQ(packing.active_processes, 8);
  EXPECT_FALSE(packing.packed);
}

TEST(ProcessPacking, SixtyFourProcessesOnTwoCoresUseTwoProcesses) {
  const ProcessPacking packing = pack_ranks(64, 64, 64, 2);
  EXPECT_EQ(packing.ranks_per_process, 32);
  EXPECT_EQ(packing.active_processes, 2);
  EXPECT_TRUE(packing.packed);
}

TEST(ProcessPacking, UnevenOversubscriptionKeepsEveryRankPlaced) {
  // 10 processes on 4 cores: 10 * 4 / 10 = 4 usable, 30 ranks -> 8 per process on 4 processes.
  const ProcessPacking packing = pack_ranks(30, 10, 10, 4);
  EXPECT_EQ(packing.ranks_per_process, 8);
  EXPECT_EQ(packing.active_processes, 4);
  EXPECT_GE(packing.ranks_per_process * packing.active_processes, 30);
  EXPECT_TRUE(packing.packed);
}

TEST(ProcessPacking, SingleCoreStillGetsOneActiveProcess) {
  const ProcessPacking packing = pack_ranks(16, 4, 4, 1);
  EXPECT_EQ(packing.ranks_per_process, 16);
  EXPECT_EQ(packing.active_processes, 1);
}

}  // namespace
}  // namespace perfsim::mpi

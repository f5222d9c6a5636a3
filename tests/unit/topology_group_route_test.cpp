// Which link classes a process group crosses, and flat vs hierarchical.
#include <gtest/gtest.h>

#include <filesystem>
#include <numeric>
#include <vector>

#include "perfsim/error.hpp"
#include "topology/group_route.hpp"

namespace perfsim::topology {
namespace {

Topology load(const std::string& name) {
  const auto path = std::filesystem::path(PERFSIM_SOURCE_DIR) / "configs" / "topologies" / name;
  if (!std::filesystem::exists(path))
    throw std::runtime_error("missing config " + path.string());
  return load_topology(path.string());
}

std::vector<int> first_ranks(int count) {
  std::vector<int> ranks(count);
  std::iota(ranks.begin(), ranks.end(), 0);
  return ranks;
}

TEST(GroupRoute, DgxOneRingUsesOnlyDoubleLinks) {
  const Topology dgx1 = load("dgx1-v100.json");
  // All 8 GPUs: the ring 0-3-2-1-7-4-5-6 crosses only NV2 pairs.
  const GroupRoute all = resolve_group(dgx1, first_ranks(8));
  EXPECT_EQ(all.algorithm, GroupAlgorithm::kFlat);
  EXPECT_EQ(all.intra_class, "nvlink2-x2-ring");
  EXPECT_EQ(all.classes_crossed, std::vector<std::string>{"nvlink2-x2-ring"});
  // GPU0-GPU1 is NV1; GPU0-GPU4 has no NVLink (SYS).
  EXPECT_EQ(resolve_group(dgx1, std::vector<int>{0, 1}).intra_class, "nvlink2-x1-ring");
  EXPECT_EQ(resolve_group(dgx1, std::vector<int>{0, 4}).intra_class, "pcie3-sys");
}

TEST(GroupRoute, FourGv100MixesNvlinkAndPcie) {
  const Topology gv100 = load("4xgv100.json");
  EXPECT_EQ(resolve_group(gv100, std::vector<int>{0, 1}).intra_class, "nvlink2-x4");
  const GroupRoute all = resolve_group(gv100, first_ranks(4));
  EXPECT_EQ(all.intra_class, "pcie3-sys");  // bounded by the slowest link of the best ring
  EXPECT_EQ(all.classes_crossed, (std::vector<std::string>{"nvlink2-x4", "pcie3-sys"}));
}

TEST(GroupRoute, MultiNodeGroups) {
  const Topology h100 = load("hgx-h100-4node.json");
  const GroupRoute world = resolve_group(h100, first_ranks(32));
  EXPECT_EQ(world.algorithm, GroupAlgorithm::kHierarchical);
  EXPECT_EQ(world.n_nodes, 4);
  EXPECT_EQ(world.ranks_per_node, 8);
  EXPECT_EQ(world.nics_per_node, 8);
  EXPECT_EQ(world.intra_class, "nvlink4-nvswitch");
  EXPECT_EQ(world.inter_class, "ib-ndr400");
  // One rank per node (a data-parallel group across tensor-parallel nodes): flat over the NICs.
  const GroupRoute column = resolve_group(h100, std::vector<int>{3, 11, 19, 27});
  EXPECT_EQ(column.algorithm, GroupAlgorithm::kFlat);
  EXPECT_EQ(column.intra_class, "");
  EXPECT_EQ(column.classes_crossed, std::vector<std::string>{"ib-ndr400"});
  const GroupRoute uneven = resolve_group(h100, std::vector<int>{0, 1, 2, 8});
  EXPECT_FALSE(uneven.balanced);
  EXPECT_EQ(uneven.ranks_per_node, 3);
  EXPECT_EQ(resolve_group(h100, std::vector<int>{5}).algorithm, GroupAlgorithm::kLocal);
}

TEST(GroupRoute, BadGroups) {
  const Topology h100 = load("hgx-h100.json");
  EXPECT_THROW(resolve_group(h100, std::vector<int>{0, 8}), InputError);  // 8 GPUs only
  EXPECT_THROW(resolve_group(h100, std::vector<int>{1, 1}), InputError);
  EXPECT_THROW(resolve_group(h100, std::vector<int>{}), InputError);
}

}  // namespace
}  // namespace perfsim::topology

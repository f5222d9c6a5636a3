// --nodes / --gpus-per-node: clusters of any size from one node description.
#include <gtest/gtest.h>

#include <string>

#include "perfsim/error.hpp"
#include "topology/node_resize.hpp"

namespace perfsim::topology {
namespace {

const std::string kTopologies = std::string(PERFSIM_SOURCE_DIR) + "/configs/topologies/";

TEST(NodeResize, NodeCountRepeatsTheNode) {
  const Topology cluster = resized(load_topology(kTopologies + "dgx-a100.json"), 2048, 0);
  EXPECT_EQ(cluster.nodes, 2048);
  EXPECT_EQ(cluster.world_size(), 16384);
  EXPECT_EQ(cluster.node_of(16383), 2047);
}

TEST(NodeResize, FewerGpusKeepTheirLinksAndRails) {
  const Topology full = load_topology(kTopologies + "dgx-a100.json");
  const Topology half = with_gpus_per_node(full, 4);
  EXPECT_EQ(half.node.gpus, 4);
  ASSERT_TRUE(half.node.nics);
  for (int gpu = 0; gpu < 4; ++gpu) {
    EXPECT_GE(half.nic_of(gpu), 0) << gpu;
    EXPECT_EQ(half.node.host_bridge_of(gpu), full.node.host_bridge_of(gpu)) << gpu;
  }
  EXPECT_EQ(half.node.nics->count, static_cast<int>(half.node.nics->rails.size()));
  for (const PcieSwitch& pcie_switch : half.node.pcie_switches) {
    EXPECT_FALSE(pcie_switch.gpus.empty());
    for (int gpu : pcie_switch.gpus)
      EXPECT_LT(gpu, 4);
  }
  EXPECT_EQ(resized(full, 3, 4).world_size(), 12);
}

TEST(NodeResize, MeshNodeKeepsItsSubMatrix) {
  const Topology full = load_topology(kTopologies + "dgx1-v100.json");
  ASSERT_FALSE(full.node.nvlink_matrix.empty());
  const Topology cut = with_gpus_per_node(full, 4);
  ASSERT_EQ(cut.node.nvlink_matrix.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    ASSERT_EQ(cut.node.nvlink_matrix[i].size(), 4u);
    for (int j = 0; j < 4; ++j)
      EXPECT_EQ(cut.node.nvlink_matrix[i][j], full.node.nvlink_matrix[i][j]);
  }
}

TEST(NodeResize, LargerNodesAndZeroAreRefused) {
  const Topology full = load_topology(kTopologies + "dgx-a100.json");
  EXPECT_THROW(with_gpus_per_node(full, 16), InputError);
  EXPECT_THROW(with_gpus_per_node(full, 0), InputError);
  EXPECT_EQ(with_gpus_per_node(full, 8).name, full.name);
}

}  // namespace
}  // namespace perfsim::topology

// Two rules for all-reduce across nodes (collectives/README.md "Fabrics without curves"): a
// transport on which NCCL's trees reach less of the line rate than the ring beyond two nodes
// (nics/transport/tree_bandwidth_efficiency), and a tuner plugin that keeps the ring out below
// a boundary that grows with the rank count (nccl/tuner_ring_from_bytes_per_rank).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "collectives/nccl_fabric.hpp"
#include "perfsim/error.hpp"
#include "topology/topology.hpp"

namespace perfsim::collectives {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kMiB = 1024.0 * 1024.0;

std::filesystem::path config(const char* name) {
  return std::filesystem::path(PERFSIM_SOURCE_DIR) / "configs/topologies" / name;
}

// HGX H100 with 8 x 400G NICs: 400 GB/s per node, NVLS above it; trees at `tree` of the ring.
NcclFabric h100_fabric(double tree) {
  topology::Topology topology = topology::load_topology(config("hgx-h100-2node.json").string());
  topology.node.nics->tree_bandwidth_efficiency = tree;
  return with_nic_transport(nominal_fabric(topology), topology);
}

double nvls_tree_algbw_GBps(const NcclFabric& fabric, const CommShape& shape) {
  return nccl_pair_estimate(CollectiveKind::kAllReduce, 8 * kGiB, shape, fabric,
                            NcclAlgorithm::kNvlsTree, NcclProtocol::kSimple)
      .algbw_GBps;
}

TEST(TreeTransport, TreesBeyondTwoNodesReachTheFractionOfTheNetwork) {
  // 4 nodes: NVLS-tree is bound by the 400 GB/s network, so it keeps exactly 0.8 of it.
  const CommShape four{32, 4};
  EXPECT_NEAR(
      nvls_tree_algbw_GBps(h100_fabric(0.8), four) / nvls_tree_algbw_GBps(h100_fabric(1.0), four),
      0.8, 1e-12);
  // The ring is unchanged.
  const auto ring = [&](double tree) {
    return nccl_pair_estimate(CollectiveKind::kAllReduce, 8 * kGiB, four, h100_fabric(tree),
                              NcclAlgorithm::kRing, NcclProtocol::kSimple)
        .algbw_GBps;
  };
  EXPECT_DOUBLE_EQ(ring(0.8), ring(1.0));
}

TEST(TreeTransport, TwoNodesKeepTheTreesFullRate) {
  // Two nodes are one exchange between them: no tree of three nodes, nothing changes.
  const CommShape two{16, 2};
  EXPECT_DOUBLE_EQ(nvls_tree_algbw_GBps(h100_fabric(0.5), two),
                   nvls_tree_algbw_GBps(h100_fabric(1.0), two));
}

TEST(TunerRingBoundary, KeepsTheRingOutBelowItsBoundaryOnly) {
  // 4 nodes, trees at 0.8: NCCL's own choice is the ring from ~1 GiB; a tuner at 48 MiB per
  // rank (1.5 GiB over 32 ranks) keeps the trees up to its boundary and the ring above it.
  const NcclFabric fabric = h100_fabric(0.8);
  const CommShape four{32, 4};
  NcclSettings own;
  NcclSettings tuned;
  tuned.tuner_ring_from_bytes_per_rank = 48 * kMiB;
  EXPECT_EQ(nccl_estimate(CollectiveKind::kAllReduce, 1 * kGiB, four, fabric, own).algorithm,
            NcclAlgorithm::kRing);
  EXPECT_NE(nccl_estimate(CollectiveKind::kAllReduce, 1 * kGiB, four, fabric, tuned).algorithm,
            NcclAlgorithm::kRing);
  EXPECT_EQ(nccl_estimate(CollectiveKind::kAllReduce, 2 * kGiB, four, fabric, tuned).algorithm,
            NcclAlgorithm::kRing);
  // The boundary grows with the ranks: at 8 nodes (3 GiB) 2 GiB is still on the trees.
  EXPECT_NE(nccl_estimate(CollectiveKind::kAllReduce, 2 * kGiB, CommShape{64, 8}, fabric, tuned)
                .algorithm,
            NcclAlgorithm::kRing);
  // Inside one node the tuner has no say.
  EXPECT_EQ(
      nccl_estimate(CollectiveKind::kAllReduce, 1 * kGiB, CommShape{8, 1}, fabric, tuned).algorithm,
      nccl_estimate(CollectiveKind::kAllReduce, 1 * kGiB, CommShape{8, 1}, fabric, own).algorithm);
}

TEST(TunerRingBoundary, TheRingStillRunsWhenNothingElseIsEnabled) {
  NcclSettings ring_only = parse_nccl_settings("ring", "", "test", "");
  ring_only.tuner_ring_from_bytes_per_rank = 48 * kMiB;
  EXPECT_EQ(nccl_estimate(CollectiveKind::kAllReduce, 1 * kGiB, CommShape{32, 4}, h100_fabric(0.8),
                          ring_only)
                .algorithm,
            NcclAlgorithm::kRing);
}

// Writes aws-p5-efa.json with the value of `key` replaced by `value` and loads it.
void load_with(const std::string& key, const std::string& value) {
  std::ifstream in(config("aws-p5-efa.json"));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string quoted = "\"" + key + "\": ";
  const auto at = text.find(quoted);
  ASSERT_NE(at, std::string::npos) << key;
  const auto end = text.find_first_of(",\n}", at + quoted.size());
  text.replace(at + quoted.size(), end - at - quoted.size(), value);
  const auto path = std::filesystem::temp_directory_path() / "tree_tuner_edited.json";
  std::ofstream(path) << text;
  topology::load_topology(path.string());
}

TEST(TreeTransport, TheParserChecksBothFields) {
  EXPECT_NO_THROW(load_with("tree_bandwidth_efficiency", "0.5"));
  EXPECT_THROW(load_with("tree_bandwidth_efficiency", "0"), InputError);
  EXPECT_THROW(load_with("tree_bandwidth_efficiency", "1.5"), InputError);
  EXPECT_NO_THROW(load_with("tuner_ring_from_bytes_per_rank", "0"));
  try {
    load_with("tuner_ring_from_bytes_per_rank", "-1");
    FAIL() << "a negative boundary was accepted";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("tuner_ring_from_bytes_per_rank"), std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace perfsim::collectives

// Default collective curves (assets/default_collective_curves.hpp): fitted where the shipped
// assets cover the topology, nominal (and said so) otherwise.
#include <gtest/gtest.h>

#include <filesystem>

#include "assets/default_collective_curves.hpp"

namespace perfsim::assets {
namespace {

const std::filesystem::path kSource = PERFSIM_SOURCE_DIR;

TEST(DefaultCollectiveCurves, FittedWhereShippedDataCoversTheTopology) {
  const auto topology =
      topology::load_topology((kSource / "configs/topologies/hgx-h100-8node.json").string());
  const auto shipped = (kSource / "configs/assets/collective_curves.h5").string();
  const auto choice = default_collective_curves_for(topology, shipped);
  EXPECT_TRUE(choice.fitted);
  EXPECT_EQ(choice.provenance.rfind("fitted: ", 0), 0u) << choice.provenance;
  EXPECT_NE(choice.provenance.find("h100-ib400-2node-allreduce"), std::string::npos);
}

TEST(DefaultCollectiveCurves, DgxA100UsesTheMeasuredA100SweepsAtEveryGpuCount) {
  const auto topology =
      topology::load_topology((kSource / "configs/topologies/dgx-a100-8node.json").string());
  const auto shipped = (kSource / "configs/assets/collective_curves.h5").string();
  const auto choice = default_collective_curves_for(topology, shipped);
  EXPECT_TRUE(choice.fitted);
  for (int gpus = 2; gpus <= 8; ++gpus) {
    const std::string name = "allreduce-" + std::to_string(gpus) + "gpu";
    EXPECT_EQ(choice.curves.count(name), 1u) << name;
    EXPECT_NE(choice.provenance.find(name + " from " + name + ".csv"), std::string::npos)
        << choice.provenance;
  }
  // The IB class is the H100 NDR sweep at half bandwidth: the output must say so.
  EXPECT_NE(choice.provenance.find("stand-in"), std::string::npos) << choice.provenance;
}

TEST(DefaultCollectiveCurves, NominalWhenTheAssetsLackANamedCurve) {
  auto topology = topology::load_topology((kSource / "configs/topologies/dgx-a100.json").string());
  topology.link_classes.at("nvlink3-nvswitch").curves.at(CollectiveKind::kAllReduce).asset =
      "no-such-sweep";
  const auto shipped = (kSource / "configs/assets/collective_curves.h5").string();
  const auto choice = default_collective_curves_for(topology, shipped);
  EXPECT_FALSE(choice.fitted);
  EXPECT_EQ(choice.provenance.rfind("NOMINAL (no data)", 0), 0u) << choice.provenance;
  EXPECT_NE(choice.provenance.find("no-such-sweep"), std::string::npos) << choice.provenance;
}

TEST(DefaultCollectiveCurves, NominalWithoutData) {
  const auto topology =
      topology::load_topology((kSource / "configs/topologies/hgx-h100-8node.json").string());
  const auto choice = default_collective_curves_for(topology, "/nonexistent/assets.h5");
  EXPECT_FALSE(choice.fitted);
  EXPECT_EQ(choice.provenance.rfind("NOMINAL (no data)", 0), 0u) << choice.provenance;
  EXPECT_FALSE(choice.curves.empty());
}

}  // namespace
}  // namespace perfsim::assets

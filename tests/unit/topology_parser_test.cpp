// Topology files: the shipped configs parse, and the schema check names file, JSON pointer and
// problem.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "perfsim/error.hpp"
#include "topology/topology.hpp"

namespace perfsim::topology {
namespace {

const std::filesystem::path kConfigs =
    std::filesystem::path(PERFSIM_SOURCE_DIR) / "configs" / "topologies";

Topology load(const std::string& name) {
  const auto path = kConfigs / name;
  if (!std::filesystem::exists(path))
    throw std::runtime_error("missing config " + path.string());
  return load_topology(path.string());
}

TEST(TopologyParser, ShippedConfigsParse) {
  for (const char* name :
       {"4xgv100.json", "4xa100.json", "dgx1-v100.json", "dgx-a100.json", "dgx-a100-4node.json",
        "hgx-h100.json", "hgx-h100-2node.json", "hgx-h100-4node.json"}) {
    EXPECT_NO_THROW(load(name)) << name;
  }
  const Topology h100 = load("hgx-h100-4node.json");
  EXPECT_EQ(h100.nodes, 4);
  EXPECT_EQ(h100.world_size(), 32);
  EXPECT_EQ(h100.node.fabric, IntraNodeFabric::kNvSwitch);
  ASSERT_TRUE(h100.node.nics.has_value());
  EXPECT_EQ(h100.node.nics->count, 8);
  EXPECT_DOUBLE_EQ(h100.node.nics->rate_Gbps, 400.0);
  EXPECT_EQ(h100.nic_of(5), 5);
  const Topology dgx1 = load("dgx1-v100.json");
  EXPECT_EQ(dgx1.node.nvlink_matrix[0][3], 2);  // NV2 in the nvidia-smi matrix
  EXPECT_EQ(dgx1.node.nvlink_matrix[0][4], 0);  // SYS
  const auto& ring = dgx1.link_class("nvlink2-x1-ring");
  EXPECT_DOUBLE_EQ(ring.curves.at(CollectiveKind::kAllReduce).bandwidth_scale, 0.5);
}

TEST(TopologyParser, WithNodeCountMakesClusters) {
  const Topology one = load("hgx-h100.json");
  EXPECT_EQ(one.world_size(), 8);
  EXPECT_EQ(with_node_count(one, 16).world_size(), 128);
  EXPECT_THROW(with_node_count(load("4xgv100.json"), 2), InputError);  // no NICs
}

// A minimal valid document to break one field at a time.
std::string mesh_document(const std::string& matrix, const std::string& extra_node = "",
                          const std::string& curves = R"({"all_reduce": "c"})") {
  return R"({"name": "t", "nodes": 1, "node": {"gpus": 2, "fabric": {"type": "nvlink_mesh",
    "nvlink_matrix": )" +
         matrix + R"(, "ring_link_classes": {"1": "nv"}}, "pcie": {"link_class": "pcie"})" +
         extra_node + R"(}, "link_classes": {"nv": {"medium": "nvlink", "curves": )" + curves +
         R"(}, "pcie": {"medium": "pcie", "curves": {"all_reduce": "c"}}}})";
}

void expect_error(const std::string& text, const std::string& location, const std::string& needle) {
  try {
    parse_topology(text, "bad.json");
    FAIL() << "accepted: " << text;
  } catch (const InputError& error) {
    EXPECT_EQ(error.file(), "bad.json");
    EXPECT_EQ(error.location(), location) << error.what();
    EXPECT_NE(error.problem().find(needle), std::string::npos) << error.what();
  }
}

TEST(TopologyParser, ValidMinimalMesh) {
  const Topology topology = parse_topology(mesh_document("[[0,1],[1,0]]"), "ok.json");
  EXPECT_EQ(topology.node.ring_link_classes.at(1), "nv");
}

TEST(TopologyParser, AsymmetricLink) {
  expect_error(mesh_document("[[0,1],[2,0]]"), "/node/fabric/nvlink_matrix/0/1", "asymmetric link");
}

TEST(TopologyParser, UnknownGpuId) {
  expect_error(mesh_document("[[0,1],[1,0]]", R"(, "nics": {"count": 1, "rate_Gbps": 100,
      "rails": [[0, 7]], "link_class": "pcie"})"),
               "/node/nics/rails/0/1", "unknown GPU id 7");
}

TEST(TopologyParser, MissingCurve) {
  expect_error(mesh_document("[[0,1],[1,0]]", "", "{}"), "/link_classes/nv/curves",
               "missing curve");
}

TEST(TopologyParser, UnknownCollective) {
  expect_error(mesh_document("[[0,1],[1,0]]", "", R"({"all_smash": "c"})"),
               "/link_classes/nv/curves/all_smash", "unknown collective");
}

TEST(TopologyParser, UnknownFieldAndBadJson) {
  expect_error(mesh_document("[[0,1],[1,0]]", R"(, "gpu_modle": "V100")"), "/node/gpu_modle",
               "unknown field");
  expect_error("{\"name\": ", "byte 10", "invalid JSON");
}

TEST(TopologyParser, UndefinedLinkClass) {
  std::string text = mesh_document("[[0,1],[1,0]]");
  text.replace(text.find("\"link_class\": \"pcie\""), 20, "\"link_class\": \"pcie9\"");
  expect_error(text, "/node/pcie/link_class", "'pcie9' is not defined");
}

TEST(TopologyParser, MultiNodeNeedsEveryGpuOnANic) {
  std::string text = mesh_document("[[0,1],[1,0]]", R"(, "nics": {"count": 1, "rate_Gbps": 100,
      "rails": [[0]], "link_class": "pcie"})");
  text.replace(text.find("\"nodes\": 1"), 10, "\"nodes\": 2");
  expect_error(text, "/node/nics/rails", "GPU 1 is served by no NIC");
}

}  // namespace
}  // namespace perfsim::topology

// Oversubscribed leaf/spine fabrics (topology/leaf_spine.hpp, collectives/spine_traffic.hpp):
// the schema and its errors, the spine traffic of NCCL's ring, tree and all-to-all, the
// slowdown of the network term, concurrent rings sharing leaf uplinks, and the engine's sibling
// copies. Every expected figure is worked out by hand in the comments; the clusters are
// 16 HGX H100 nodes (8 GPUs, 8 x 400G NICs, one per GPU).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "collectives/collective_model.hpp"
#include "collectives/contention.hpp"
#include "collectives/spine_traffic.hpp"
#include "generators/llm/nominal_collective_curves.hpp"
#include "mpi_sim/engine/topology_link_sharing.hpp"
#include "perfsim/error.hpp"
#include "scenario/generated_workload_sources.hpp"
#include "topology/leaf_spine.hpp"
#include "topology/topology.hpp"

namespace perfsim {
namespace {

const std::string kH100 =
    (std::filesystem::path(PERFSIM_SOURCE_DIR) / "configs/topologies/hgx-h100.json").string();

// hgx-h100.json on 16 nodes with `section` as its leaf_spine ("" = none).
std::string document(const std::string& section) {
  std::ifstream in(kH100);
  std::stringstream text;
  text << in.rdbuf();
  std::string json = text.str();
  const std::size_t open = json.find('{');
  std::string fields = R"("nodes": 16, )";
  if (!section.empty())
    fields += R"("leaf_spine": )" + section + ", ";
  json.insert(open + 1, fields);
  // The file's own node count comes after ours; drop it.
  const std::size_t own = json.find("\"nodes\"", open + 1 + fields.size());
  if (own != std::string::npos)
    json.erase(own, json.find(',', own) + 1 - own);
  return json;
}

topology::Topology cluster(const std::string& section) {
  return topology::parse_topology(document(section), "spine.json");
}

std::string section(const std::string& size, bool rail_optimized, double oversubscription) {
  return "{" + size + R"(, "rail_optimized": )" + (rail_optimized ? "true" : "false") +
         R"(, "oversubscription": )" + std::to_string(oversubscription) + "}";
}

collectives::CollectiveModel model_of(const topology::Topology& topology,
                                      const std::string& algorithms = "") {
  return collectives::CollectiveModel(
      topology, generators::llm::nominal_collective_curves(topology), {},
      collectives::parse_nccl_settings(algorithms, "", "test", "/nccl"));
}

std::vector<int> ranks(int first, int count, int stride = 1) {
  std::vector<int> result;
  for (int i = 0; i < count; ++i)
    result.push_back(first + i * stride);
  return result;
}

void expect_refused(const std::string& leaf_spine, const std::string& location,
                    const std::string& needle) {
  try {
    cluster(leaf_spine);
    FAIL() << "accepted: " << leaf_spine;
  } catch (const InputError& error) {
    EXPECT_EQ(error.file(), "spine.json");
    EXPECT_EQ(error.location(), location) << error.what();
    EXPECT_NE(error.problem().find(needle), std::string::npos) << error.what();
  }
}

TEST(LeafSpineSchema, LeafSizeFromNodesOrPorts) {
  const auto rail = cluster(section(R"("nics_per_leaf": 32)", true, 2.0));
  ASSERT_TRUE(rail.leaf_spine);
  EXPECT_EQ(rail.leaf_spine->nodes_per_leaf, 32);  // one port per node on a rail leaf
  const auto tor = cluster(section(R"("nics_per_leaf": 32)", false, 2.0));
  EXPECT_EQ(tor.leaf_spine->nodes_per_leaf, 4);  // 32 ports / 8 NICs per node
  const auto by_nodes = cluster(section(R"("nodes_per_leaf": 4)", true, 1.5));
  EXPECT_EQ(by_nodes.leaf_spine->nodes_per_leaf, 4);
  EXPECT_DOUBLE_EQ(by_nodes.leaf_spine->oversubscription, 1.5);
  // Leaves: rail-optimized (group, rail); otherwise one per group.
  EXPECT_EQ(topology::leaf_of(by_nodes, 5, 3), 1 * 8 + 3);
  EXPECT_EQ(topology::leaf_of(tor, 5, 3), 1);
  // Uplinks in NIC line rates: ports / oversubscription.
  EXPECT_DOUBLE_EQ(topology::leaf_uplink_capacity(rail), 16.0);
  EXPECT_DOUBLE_EQ(topology::leaf_uplink_capacity(tor), 16.0);
}

TEST(LeafSpineSchema, ErrorsNameTheField) {
  expect_refused(section(R"("nodes_per_leaf": 4)", true, 0.5), "/leaf_spine/oversubscription",
                 "at least 1");
  expect_refused(R"({"nodes_per_leaf": 4, "oversubscription": 2})", "/leaf_spine/rail_optimized",
                 "missing required field");
  expect_refused(R"({"nodes_per_leaf": 4, "rail_optimized": "yes", "oversubscription": 2})",
                 "/leaf_spine/rail_optimized", "expected true or false");
  expect_refused(R"({"rail_optimized": true, "oversubscription": 2})", "/leaf_spine/nodes_per_leaf",
                 "exactly one of");
  expect_refused(section(R"("nodes_per_leaf": 4, "nics_per_leaf": 32)", true, 2.0),
                 "/leaf_spine/nics_per_leaf", "exactly one of");
  expect_refused(section(R"("nics_per_leaf": 12)", false, 2.0), "/leaf_spine/nics_per_leaf",
                 "whole nodes of 8 NICs");
  expect_refused(section(R"("nodes_per_leaf": 0)", true, 2.0), "/leaf_spine/nodes_per_leaf",
                 "at least 1");
  expect_refused(R"({"nodes_per_leaf": 4, "rail_optimized": true})", "/leaf_spine/oversubscription",
                 "missing required field");
  expect_refused(
      R"({"nodes_per_leaf": 4, "rail_optimized": true, "oversubscription": 2, "uplinks": 8})",
      "/leaf_spine/uplinks", "unknown field");
  // A leaf/spine needs NICs: a one-node PCIe box has none.
  const std::string box =
      (std::filesystem::path(PERFSIM_SOURCE_DIR) / "configs/topologies/4xgv100.json").string();
  std::ifstream in(box);
  std::stringstream text;
  text << in.rdbuf();
  std::string json = text.str();
  json.insert(json.find('{') + 1, R"("leaf_spine": {"nodes_per_leaf": 1, "rail_optimized": true,
    "oversubscription": 2}, )");
  try {
    topology::parse_topology(json, "box.json");
    FAIL() << "accepted a leaf/spine without NICs";
  } catch (const InputError& error) {
    EXPECT_EQ(error.location(), "/leaf_spine");
    EXPECT_NE(error.problem().find("needs NICs"), std::string::npos) << error.what();
  }
}

TEST(LeafSpineSchema, ProvenanceSaysNominal) {
  EXPECT_EQ(topology::leaf_spine_provenance(cluster("")), "");
  EXPECT_EQ(topology::leaf_spine_provenance(cluster(section(R"("nodes_per_leaf": 4)", true, 1.0))),
            "");
  const std::string note =
      topology::leaf_spine_provenance(cluster(section(R"("nodes_per_leaf": 4)", true, 2.0)));
  EXPECT_NE(note.find("spine term NOMINAL"), std::string::npos) << note;
  EXPECT_NE(note.find("spine.json/leaf_spine"), std::string::npos) << note;
}

// Absent, or non-blocking: the predictions are those of the model before leaf/spine existed.
TEST(LeafSpineModel, NonBlockingChangesNothing) {
  const auto none = model_of(cluster(""));
  const auto one = model_of(cluster(section(R"("nodes_per_leaf": 1)", false, 1.0)));
  const auto world = ranks(0, 128);
  for (const auto kind : {CollectiveKind::kAllReduce, CollectiveKind::kAllToAll,
                          CollectiveKind::kAllGather, CollectiveKind::kSend}) {
    const std::vector<int> group = kind == CollectiveKind::kSend ? ranks(0, 2, 64) : world;
    for (const Bytes bytes : {Bytes{1} << 12, Bytes{1} << 30}) {
      EXPECT_EQ(none.predict(kind, bytes, group).duration_us,
                one.predict(kind, bytes, group).duration_us);
    }
  }
}

// All-to-all over 16 nodes, 4 leaves of 4 nodes, 2:1. Every node sends its network bytes evenly
// to the 15 other nodes, on its rail r; leaf (g, r) sends 4 nodes x 12 remote nodes / 15 = 3.2
// line rates up against 4 ports / 2 = 2: the network term runs 1.6x slower. (Per byte of the
// buffer the remote share is (N - 4) / N = 0.75; per byte on the wire it is 12 / 15.) The
// same when not rail-optimized: 8 rails x 3.2 against 32 ports / 2.
TEST(LeafSpineModel, AllToAllOverFourLeavesAtTwoToOne) {
  const Bytes bytes = Bytes{1} << 30;
  const auto world = ranks(0, 128);
  const auto reference = model_of(cluster("")).predict(CollectiveKind::kAllToAll, bytes, world);
  for (const bool rail : {true, false}) {
    const auto topology = cluster(section(R"("nodes_per_leaf": 4)", rail, 2.0));
    const auto flows = collectives::collective_flows(
        topology, CollectiveKind::kAllToAll, collectives::NcclAlgorithm::kPointToPoint, world);
    EXPECT_NEAR(topology::spine_load(topology, flows).ratio, 1.6, 1e-12) << rail;
    const auto slowed = model_of(topology).predict(CollectiveKind::kAllToAll, bytes, world);
    EXPECT_NEAR(slowed.spine_slowdown, 1.6, 1e-12);
    // The transfer term (time - latency) by exactly 1.6, the latency unchanged.
    EXPECT_DOUBLE_EQ(slowed.nccl.latency_us, reference.nccl.latency_us);
    EXPECT_NEAR((slowed.nccl.time_us - slowed.nccl.latency_us) /
                    (reference.nccl.time_us - reference.nccl.latency_us),
                1.6, 1e-12);
    EXPECT_GT(slowed.duration_us, 1.5 * reference.duration_us);
  }
}

// The same switches (32 ports) wired both ways: rail-optimized, rail leaf r serves NIC r of
// 32 nodes, so the 16-node all-to-all stays under the leaves; top-of-rack, a leaf serves the
// 8 NICs of 4 nodes and the all-to-all crosses the spine as above.
TEST(LeafSpineModel, RailOptimizedAndTopOfRackDifferForTheSameSwitches) {
  const Bytes bytes = Bytes{1} << 30;
  const auto world = ranks(0, 128);
  const auto rail = model_of(cluster(section(R"("nics_per_leaf": 32)", true, 2.0)));
  const auto tor = model_of(cluster(section(R"("nics_per_leaf": 32)", false, 2.0)));
  EXPECT_DOUBLE_EQ(rail.predict(CollectiveKind::kAllToAll, bytes, world).spine_slowdown, 1.0);
  EXPECT_NEAR(tor.predict(CollectiveKind::kAllToAll, bytes, world).spine_slowdown, 1.6, 1e-12);
  // Traffic that changes rails: GPU 0 of node 0 to GPU 1 of node 1, both in leaf group 0.
  // Rail-optimized it climbs from leaf (0, 0) to the spine and down to leaf (0, 1): 1 line rate
  // against 4 / 2 with 4 nodes per leaf; top-of-rack both NICs are on leaf 0.
  const std::vector<int> cross_rail{0, 9};
  const auto rail4 = cluster(section(R"("nodes_per_leaf": 4)", true, 2.0));
  const auto tor4 = cluster(section(R"("nodes_per_leaf": 4)", false, 2.0));
  for (const auto& [topology, expected] : {std::pair{rail4, 0.5}, std::pair{tor4, 0.0}}) {
    const auto flows = collectives::collective_flows(
        topology, CollectiveKind::kSend, collectives::NcclAlgorithm::kPointToPoint, cross_rail);
    EXPECT_DOUBLE_EQ(topology::spine_load(topology, flows).ratio, expected);
  }
}

// A ring inside one leaf sends nothing up; a ring over the 4 leaves sends one hop per rail up
// each leaf (node 4g+3 to node 4g+4): 1 line rate against 2, it fits.
TEST(LeafSpineModel, RingInsideOneLeafAndOneRingAcrossLeavesUnchanged) {
  const Bytes bytes = Bytes{1} << 30;
  const auto none = model_of(cluster(""), "ring");
  const auto spine = model_of(cluster(section(R"("nodes_per_leaf": 4)", true, 2.0)), "ring");
  for (const auto& group : {ranks(0, 32), ranks(0, 128)}) {
    const auto alone = spine.predict(CollectiveKind::kAllReduce, bytes, group);
    EXPECT_EQ(alone.nccl.algorithm, collectives::NcclAlgorithm::kRing);
    EXPECT_DOUBLE_EQ(alone.spine_slowdown, 1.0);
    EXPECT_EQ(alone.duration_us,
              none.predict(CollectiveKind::kAllReduce, bytes, group).duration_us);
  }
  const auto topology = cluster(section(R"("nodes_per_leaf": 4)", true, 2.0));
  const auto flows = collectives::collective_flows(
      topology, CollectiveKind::kAllReduce, collectives::NcclAlgorithm::kRing, ranks(0, 128));
  EXPECT_DOUBLE_EQ(topology::spine_load(topology, flows).ratio, 0.5);
}

// Every node its own leaf (1 node per leaf, 2:1): everything a node sends crosses the spine,
// so ring, tree and all-to-all over 4 nodes all run at half their network rate. Tree: NCCL's
// double binary tree over 4 nodes is 0-2, 2-1, 2-3 and its mirror 1-0, 3-1, 1-2; nodes 1 and 2
// have 4 edges, so each edge runs at 1/4 and node 1 sends 4 x 1/4 x 8 rails = 8 against 8 / 2.
TEST(LeafSpineModel, OneNodePerLeafHalvesEveryAlgorithm) {
  const auto topology = cluster(section(R"("nodes_per_leaf": 1)", false, 2.0));
  const auto group = ranks(0, 32);
  for (const auto algorithm :
       {collectives::NcclAlgorithm::kRing, collectives::NcclAlgorithm::kTree,
        collectives::NcclAlgorithm::kNvlsTree, collectives::NcclAlgorithm::kPointToPoint}) {
    const auto kind = algorithm == collectives::NcclAlgorithm::kPointToPoint
                          ? CollectiveKind::kAllToAll
                          : CollectiveKind::kAllReduce;
    EXPECT_DOUBLE_EQ(collectives::spine_slowdown(topology, kind, algorithm, group), 2.0)
        << static_cast<int>(algorithm);
  }
  // Broadcast is a chain: the last node sends nothing, the others one hop each.
  EXPECT_DOUBLE_EQ(collectives::spine_slowdown(topology, CollectiveKind::kBroadcast,
                                               collectives::NcclAlgorithm::kRing, group),
                   2.0);
  // NVLS stays in a node.
  EXPECT_DOUBLE_EQ(collectives::spine_slowdown(topology, CollectiveKind::kAllReduce,
                                               collectives::NcclAlgorithm::kNvls, group),
                   1.0);
}

// DP rings of one GPU per node on 16 top-of-rack leaves of one node each, 2:1: a leaf's uplinks
// carry 8 ports / 2 = 4 line rates; one ring sends 1 up each leaf and fits, 4 concurrent rings
// (rails 0-3) send 4 and just fit, 8 (rails 0-7) send 8: each ring's transfer takes 2x. No two
// of them share a NIC, so only the leaf uplinks slow them.
TEST(LeafSpineContention, ConcurrentRingsShareLeafUplinks) {
  const Bytes bytes = Bytes{1} << 30;
  const auto model = model_of(cluster(section(R"("nodes_per_leaf": 1)", false, 2.0)), "ring");
  std::vector<collectives::ConcurrentCollective> rings;
  for (int rail = 0; rail < 8; ++rail)
    rings.push_back({CollectiveKind::kAllReduce, bytes, ranks(rail, 16, 8)});
  const auto alone = model.predict(CollectiveKind::kAllReduce, bytes, rings[0].ranks);
  EXPECT_DOUBLE_EQ(alone.spine_slowdown, 1.0);
  const double latency_us = alone.duration_us * alone.nccl.latency_us / alone.nccl.time_us;
  const double transfer_us = alone.duration_us - latency_us;
  const auto one = collectives::contended_durations_us(model, std::span(rings).first(1));
  EXPECT_DOUBLE_EQ(one[0], alone.duration_us);
  const auto four = collectives::contended_durations_us(model, std::span(rings).first(4));
  EXPECT_DOUBLE_EQ(four[0], alone.duration_us);
  const auto eight = collectives::contended_durations_us(model, rings);
  for (const double duration_us : eight)
    EXPECT_NEAR(duration_us, latency_us + 2.0 * transfer_us, 1e-9 * duration_us);
  // Rail-optimized, the eight rings climb eight different leaves: leaf (n, r) has 1 port and
  // 0.5 line rates up, so each ring alone runs at half rate and the others add nothing.
  const auto rail_model = model_of(cluster(section(R"("nodes_per_leaf": 1)", true, 2.0)), "ring");
  const auto rail_alone = rail_model.predict(CollectiveKind::kAllReduce, bytes, rings[0].ranks);
  EXPECT_DOUBLE_EQ(rail_alone.spine_slowdown, 2.0);
  EXPECT_DOUBLE_EQ(collectives::contended_durations_us(rail_model, rings)[0],
                   rail_alone.duration_us);
}

// In engine runs the siblings are implicit: the other GPUs of the group's nodes run the same
// collective in their own groups. A DP ring of GPU 0 of 16 nodes, top-of-rack leaves of one
// node, 2:1: with its 7 siblings each leaf sends 8 line rates against 4, the transfer takes 2x
// (network_stretch 2); rail-optimized the siblings climb their own leaves: the group's own
// slowdown (2, in its duration) is all, network_stretch 2 / 2 = 1.
TEST(LeafSpineContention, EngineCountsSiblingGroupsOnTheSameLeaf) {
  CommInfo comm;
  comm.kind = CollectiveKind::kAllReduce;
  comm.bytes_in = comm.bytes_out = Bytes{1} << 30;
  const auto dp = ranks(0, 16, 8);
  const engine::TopologyLinkSharing tor(
      model_of(cluster(section(R"("nodes_per_leaf": 1)", false, 2.0)), "ring"), 128);
  EXPECT_DOUBLE_EQ(tor.demand(comm, dp).nic_work(), 2.0);
  const engine::TopologyLinkSharing rail(
      model_of(cluster(section(R"("nodes_per_leaf": 1)", true, 2.0)), "ring"), 128);
  EXPECT_DOUBLE_EQ(rail.demand(comm, dp).nic_work(), 1.0);
  // A pair of GPU 0 on nodes 0 and 8 (an expert-DP group), leaves of 4 nodes at 2:1: alone it
  // sends 1 line rate up leaf 0 against 32 / 2 (top-of-rack) or 4 / 2 (rail leaf (0, 0)); the
  // job's 4 nodes x 8 GPUs under leaf 0 all run such pairs: 32 against 16, or 4 against 2.
  const auto pair = ranks(0, 2, 64);
  for (const bool rail_optimized : {false, true}) {
    const engine::TopologyLinkSharing rule(
        model_of(cluster(section(R"("nodes_per_leaf": 4)", rail_optimized, 2.0)), "ring"), 128);
    EXPECT_DOUBLE_EQ(rule.demand(comm, pair).nic_work(), 2.0) << rail_optimized;
  }
  // No leaf/spine: the NIC copies alone, 1 with one NIC per GPU.
  const engine::TopologyLinkSharing none(model_of(cluster(""), "ring"), 128);
  EXPECT_DOUBLE_EQ(none.demand(comm, dp).network_stretch, 0.0);
  EXPECT_DOUBLE_EQ(none.demand(comm, dp).nic_work(), 1.0);
}

// A generated run's collectives note says the spine term is nominal on the shipped 2:1
// topologies, and nothing about a spine on a non-blocking one.
TEST(LeafSpineOutput, RunNotesSayTheSpineTermIsNominal) {
  const std::filesystem::path configs = std::filesystem::path(PERFSIM_SOURCE_DIR) / "configs";
  const std::string device_path = (configs / "devices/H100-SXM.json").string();
  std::ifstream in(device_path);
  std::stringstream device;
  device << in.rdbuf();
  const std::string device_json = device.str();
  const std::string no_assets;
  for (const auto& [file, nominal] : {std::pair{"hgx-h100-16node-tor-2to1.json", true},
                                      std::pair{"hgx-h100-16node-rail-2to1.json", true},
                                      std::pair{"hgx-h100-8node.json", false}}) {
    const auto topology = topology::load_topology((configs / "topologies" / file).string());
    scenario::SimulationInputs inputs;
    scenario::attach_generated_workload_models(
        inputs, {topology, device_json, device_path, no_assets, {}, "none", {}});
    std::string collectives_note;
    for (const auto& note : inputs.notes) {
      if (note.rfind("collectives:", 0) == 0)
        collectives_note = note;
    }
    EXPECT_EQ(collectives_note.find("spine term NOMINAL") != std::string::npos, nominal)
        << file << ": " << collectives_note;
  }
}

}  // namespace
}  // namespace perfsim

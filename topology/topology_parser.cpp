#include <algorithm>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "io/json_document.hpp"
#include "perfsim/error.hpp"
#include "topology/nic_sharing.hpp"
#include "topology/topology.hpp"

namespace perfsim::topology {
namespace {

using nlohmann::json;

// Reads fields of one JSON object; every problem becomes InputError(file, JSON pointer, ...).
class ObjectReader {
 public:
  // Node, GPU, NIC and channel counts: a million is beyond any machine the models describe.
  static constexpr long long kMaxCount = 1 << 20;
  // Bandwidths (GB/s, Gb/s) and scales: 1e9 GB/s is six orders above any link.
  static constexpr double kMaxFigure = 1e9;

  ObjectReader(const json& object, std::string pointer, std::string source)
      : object_(object), pointer_(std::move(pointer)), source_(std::move(source)) {
    if (!object_.is_object())
      fail(pointer_.empty() ? "/" : pointer_,
           "expected an object, got " + std::string(object_.type_name()));
  }

  ObjectReader child(const std::string& key) const { return {get(key), at(key), source_}; }

  // Every key must be one of `known`: a typo is an error, not a silently ignored field.
  void allow_only(std::initializer_list<std::string_view> known) const {
    for (const auto& [key, value] : object_.items()) {
      if (std::find(known.begin(), known.end(), key) == known.end())
        fail(at(key), "unknown field '" + key + "'");
    }
  }
  bool has(const std::string& key) const { return object_.contains(key); }
  const json& get(const std::string& key) const {
    if (!object_.contains(key))
      fail(at(key), "missing required field");
    return object_.at(key);
  }
  const json& object() const { return object_; }
  std::size_t array_size(const std::string& key) const {
    const json& value = get(key);
    if (!value.is_array())
      fail(at(key), "expected an array, got " + std::string(value.type_name()));
    return value.size();
  }
  ObjectReader element(const std::string& key, std::size_t index) const {
    return {get(key).at(index), at(key) + "/" + std::to_string(index), source_};
  }
  // A sub-reader over an array element that is itself an array (rails).
  const json& array_element(const std::string& key, std::size_t index) const {
    return get(key).at(index);
  }
  std::string text(const std::string& key, std::optional<std::string> fallback = {}) const {
    if (!has(key) && fallback)
      return *fallback;
    const json& value = get(key);
    if (!value.is_string())
      fail(at(key), "expected a string, got " + std::string(value.type_name()));
    return value.get<std::string>();
  }
  int integer(const std::string& key, int minimum, std::optional<int> fallback = {}) const {
    if (!has(key) && fallback)
      return *fallback;
    const json& value = get(key);
    if (!value.is_number_integer())
      fail(at(key), "expected an integer, got " + std::string(value.type_name()));
    // Unsigned values past int64 and values past int are errors, not truncated.
    if (value.is_number_unsigned() &&
        value.get<std::uint64_t>() > static_cast<std::uint64_t>(kMaxCount))
      fail(at(key), "must be at most " + std::to_string(kMaxCount) + ", got " + value.dump());
    const auto result = value.get<long long>();
    if (result < minimum)
      fail(at(key),
           "must be at least " + std::to_string(minimum) + ", got " + std::to_string(result));
    if (result > kMaxCount)
      fail(at(key),
           "must be at most " + std::to_string(kMaxCount) + ", got " + std::to_string(result));
    return static_cast<int>(result);
  }
  double number(const std::string& key, std::optional<double> fallback = {}) const {
    if (!has(key) && fallback)
      return *fallback;
    const json& value = get(key);
    if (!value.is_number() || !(value.get<double>() >= 0.0))
      fail(at(key), "expected a non-negative number");
    if (!(value.get<double>() <= kMaxFigure))
      fail(at(key), "must be at most 1e9, got " + value.dump());
    return value.get<double>();
  }
  std::string at(const std::string& key) const { return pointer_ + "/" + key; }
  const std::string& source() const { return source_; }
  const std::string& pointer() const { return pointer_; }
  [[noreturn]] void fail(const std::string& where, const std::string& problem) const {
    throw InputError(source_, where, problem);
  }

 private:
  const json& object_;
  std::string pointer_;
  std::string source_;
};

// An integer JSON value, or -1 when it is negative or above ObjectReader::kMaxCount (so that
// get<int> never truncates 4294967297 to 1).
long long bounded_count(const json& value) {
  if (value.is_number_unsigned())
    return value.get<std::uint64_t>() > static_cast<std::uint64_t>(ObjectReader::kMaxCount)
               ? -1
               : value.get<long long>();
  const long long count = value.get<long long>();
  return count > ObjectReader::kMaxCount ? -1 : count;
}

// GPU ids under `key`, or under element `index` of the array `key` when given.
std::vector<int> gpu_list(const ObjectReader& reader, const std::string& key, int gpus,
                          std::optional<std::size_t> index = std::nullopt) {
  const json& value = index ? reader.array_element(key, *index) : reader.get(key);
  const std::string pointer = reader.at(key) + (index ? "/" + std::to_string(*index) : "");
  if (!value.is_array())
    reader.fail(pointer, "expected an array of GPU ids");
  std::vector<int> ids;
  for (std::size_t i = 0; i < value.size(); ++i) {
    const std::string where = pointer + "/" + std::to_string(i);
    if (!value[i].is_number_integer())
      reader.fail(where, "expected a GPU id (integer)");
    const long long id = bounded_count(value[i]);
    if (id < 0 || id >= gpus)
      reader.fail(where, "unknown GPU id " + std::to_string(id) + " (the node has GPUs 0.." +
                             std::to_string(gpus - 1) + ")");
    ids.push_back(static_cast<int>(id));
  }
  return ids;
}

void read_mesh(const ObjectReader& fabric, NodeSpec& node) {
  const json& matrix = fabric.get("nvlink_matrix");
  const std::string pointer = fabric.at("nvlink_matrix");
  if (!matrix.is_array() || static_cast<int>(matrix.size()) != node.gpus)
    fabric.fail(pointer, "expected " + std::to_string(node.gpus) + " rows, one per GPU");
  node.nvlink_matrix.assign(node.gpus, std::vector<int>(node.gpus, 0));
  for (int i = 0; i < node.gpus; ++i) {
    const std::string row = pointer + "/" + std::to_string(i);
    if (!matrix[i].is_array() || static_cast<int>(matrix[i].size()) != node.gpus)
      fabric.fail(row, "expected " + std::to_string(node.gpus) + " link counts");
    for (int j = 0; j < node.gpus; ++j) {
      const json& cell = matrix[i][j];
      if (!cell.is_number_integer() || bounded_count(cell) < 0)
        fabric.fail(row + "/" + std::to_string(j), "expected a non-negative NVLink count");
      node.nvlink_matrix[i][j] = cell.get<int>();
    }
    if (node.nvlink_matrix[i][i] != 0)
      fabric.fail(row + "/" + std::to_string(i), "a GPU has no NVLink to itself: use 0");
  }
  for (int i = 0; i < node.gpus; ++i) {
    for (int j = i + 1; j < node.gpus; ++j) {
      if (node.nvlink_matrix[i][j] != node.nvlink_matrix[j][i])
        fabric.fail(pointer + "/" + std::to_string(i) + "/" + std::to_string(j),
                    "asymmetric link: GPU" + std::to_string(i) + "->GPU" + std::to_string(j) +
                        " has " + std::to_string(node.nvlink_matrix[i][j]) + " NVLinks but GPU" +
                        std::to_string(j) + "->GPU" + std::to_string(i) + " has " +
                        std::to_string(node.nvlink_matrix[j][i]));
    }
  }
  const ObjectReader ring_classes = fabric.child("ring_link_classes");
  for (const auto& [key, value] : ring_classes.object().items()) {
    const std::string where = ring_classes.at(key);
    int links = 0;
    try {
      links = std::stoi(key);
    } catch (const std::exception&) {
      fabric.fail(where, "key must be an NVLink count");
    }
    if (!value.is_string())
      fabric.fail(where, "expected a link class name");
    node.ring_link_classes[links] = value.get<std::string>();
  }
  std::set<int> counts;
  for (const auto& row : node.nvlink_matrix) {
    for (int links : row) {
      if (links > 0)
        counts.insert(links);
    }
  }
  for (int links : counts) {
    if (!node.ring_link_classes.count(links))
      fabric.fail(ring_classes.pointer(), "no link class for rings whose thinnest link has " +
                                              std::to_string(links) +
                                              " NVLinks (the matrix uses that count)");
  }
}

void read_fabric(const ObjectReader& fabric, NodeSpec& node) {
  const std::string type = fabric.text("type");
  if (type == "nvswitch") {
    fabric.allow_only({"type", "nvlinks_per_gpu", "link_class"});
    node.fabric = IntraNodeFabric::kNvSwitch;
    node.nvlinks_per_gpu = fabric.integer("nvlinks_per_gpu", 1);
    node.nvswitch_link_class = fabric.text("link_class");
  } else if (type == "nvlink_mesh") {
    fabric.allow_only({"type", "nvlink_matrix", "ring_link_classes"});
    node.fabric = IntraNodeFabric::kNvLinkMesh;
    read_mesh(fabric, node);
  } else if (type == "pcie") {
    fabric.allow_only({"type"});
    node.fabric = IntraNodeFabric::kPcie;
  } else {
    fabric.fail(fabric.at("type"),
                "unknown fabric '" + type + "' (expected nvswitch, nvlink_mesh or pcie)");
  }
}

void read_pcie(const ObjectReader& pcie, NodeSpec& node) {
  pcie.allow_only({"generation", "link_class", "switches", "transport"});
  node.pcie_generation = pcie.integer("generation", 1, 0);
  node.pcie_link_class = pcie.text("link_class");
  if (pcie.has("transport"))
    node.pcie_transport =
        parse_pcie_transport(pcie.get("transport"), pcie.source(), pcie.at("transport"));
  if (!pcie.has("switches"))
    return;
  std::set<int> seen;
  const std::size_t count = pcie.array_size("switches");
  for (std::size_t i = 0; i < count; ++i) {
    const ObjectReader entry = pcie.element("switches", i);
    entry.allow_only({"name", "gpus", "host_bridge"});
    PcieSwitch pcie_switch;
    pcie_switch.name = entry.text("name");
    pcie_switch.host_bridge = entry.text("host_bridge", "");
    pcie_switch.gpus = gpu_list(entry, "gpus", node.gpus);
    for (int gpu : pcie_switch.gpus) {
      if (!seen.insert(gpu).second)
        entry.fail(entry.at("gpus"),
                   "GPU " + std::to_string(gpu) + " sits under two PCIe switches");
    }
    node.pcie_switches.push_back(std::move(pcie_switch));
  }
}

void read_nics(const ObjectReader& nics, NodeSpec& node) {
  nics.allow_only(
      {"count", "rate_Gbps", "rails", "link_class", "transport", "curves_nics_per_node"});
  NicSet set;
  set.count = nics.integer("count", 1);
  set.rate_Gbps = nics.number("rate_Gbps");
  if (nics.has("transport")) {
    const ObjectReader transport = nics.child("transport");
    transport.allow_only({"curves_rate_Gbps", "curves_gpu_model", "curves_nvlinks_per_gpu",
                          "hop_latency_us", "bandwidth_efficiency", "peer_latency_us",
                          "tree_bandwidth_efficiency", "note"});
    set.curves_gpu_model = transport.text("curves_gpu_model", "");
    set.curves_nvlinks_per_gpu = transport.integer("curves_nvlinks_per_gpu", 0, 0);
    set.peer_latency_us = transport.number("peer_latency_us", 0.0);
    if (set.peer_latency_us < 0.0)
      transport.fail(transport.at("peer_latency_us"), "expected a latency >= 0");
    set.curves_rate_Gbps = transport.number("curves_rate_Gbps", 0.0);
    if (set.curves_rate_Gbps < 0.0)
      transport.fail(transport.at("curves_rate_Gbps"), "expected a rate >= 0");
    set.hop_latency_us = transport.number("hop_latency_us", 0.0);
    set.bandwidth_efficiency = transport.number("bandwidth_efficiency", 1.0);
    if (set.hop_latency_us < 0.0)
      transport.fail(transport.at("hop_latency_us"), "expected a latency >= 0");
    if (!(set.bandwidth_efficiency > 0.0 && set.bandwidth_efficiency <= 1.0))
      transport.fail(transport.at("bandwidth_efficiency"), "expected a fraction in (0, 1]");
    set.tree_bandwidth_efficiency = transport.number("tree_bandwidth_efficiency", 1.0);
    if (!(set.tree_bandwidth_efficiency > 0.0 && set.tree_bandwidth_efficiency <= 1.0))
      transport.fail(transport.at("tree_bandwidth_efficiency"), "expected a fraction in (0, 1]");
  }
  set.link_class = nics.text("link_class");
  set.curves_nics_per_node = nics.integer("curves_nics_per_node", 1, 0);
  if (!nics.has("rails")) {
    set.rails = even_rails(set.count, node.gpus, nics.source(), nics.at("count"));
    node.nics = std::move(set);
    return;
  }
  const std::size_t rails = nics.array_size("rails");
  if (static_cast<int>(rails) != set.count)
    nics.fail(nics.at("rails"), "expected one GPU list per NIC (" + std::to_string(set.count) +
                                    "), got " + std::to_string(rails));
  std::set<int> served;
  for (std::size_t i = 0; i < rails; ++i) {
    const std::string key = "rails/" + std::to_string(i);
    std::vector<int> gpus = gpu_list(nics, "rails", node.gpus, i);
    for (int gpu : gpus) {
      if (!served.insert(gpu).second)
        nics.fail(nics.at(key), "GPU " + std::to_string(gpu) + " is served by two NICs");
    }
    set.rails.push_back(std::move(gpus));
  }
  node.nics = std::move(set);
}

LinkClass read_link_class(const ObjectReader& reader, const std::string& name) {
  reader.allow_only({"medium", "bandwidth_GBps", "curves", "note"});
  LinkClass link_class;
  link_class.name = name;
  link_class.json_pointer = reader.pointer();
  link_class.medium = reader.text("medium");
  link_class.bandwidth_GBps = reader.number("bandwidth_GBps", 0.0);
  const ObjectReader curves = reader.child("curves");
  for (const auto& [key, value] : curves.object().items()) {
    const auto kind = parse_collective(key);
    if (!kind)
      curves.fail(curves.at(key), "unknown collective '" + key + "'");
    CurveReference reference;
    reference.json_pointer = curves.at(key);
    if (value.is_object()) {
      const ObjectReader entry = curves.child(key);
      entry.allow_only({"asset", "bandwidth_scale", "note", "other_counts"});
      reference.asset = entry.text("asset");
      if (entry.has("other_counts")) {
        for (std::size_t i = 0; i < entry.array_size("other_counts"); ++i) {
          const auto& name = entry.array_element("other_counts", i);
          if (!name.is_string())
            curves.fail(entry.at("other_counts") + "/" + std::to_string(i),
                        "expected the name of a fitted curve");
          reference.other_counts.push_back(name.get<std::string>());
        }
      }
      reference.bandwidth_scale = entry.number("bandwidth_scale", 1.0);
      reference.note = entry.text("note", "");
      if (!(reference.bandwidth_scale > 0.0))
        curves.fail(entry.at("bandwidth_scale"), "must be positive");
    } else if (value.is_string()) {
      reference.asset = value.get<std::string>();
    }
    if (reference.asset.empty())
      curves.fail(curves.at(key),
                  "expected the name of a fitted curve in the model assets, or {\"asset\": ...}");
    link_class.curves[*kind] = std::move(reference);
  }
  if (link_class.curves.empty())
    reader.fail(curves.pointer(), "missing curve: link class '" + name + "' names no curve");
  return link_class;
}

// Ranks are ints throughout the engine: nodes x GPUs must stay far inside that.
void check_gpu_total(const Topology& topology, const std::string& pointer) {
  const long long total = static_cast<long long>(topology.nodes) * topology.node.gpus;
  if (total > ObjectReader::kMaxCount)
    throw InputError(topology.source, pointer,
                     std::to_string(topology.nodes) + " nodes of " +
                         std::to_string(topology.node.gpus) + " GPUs exceed the supported " +
                         std::to_string(ObjectReader::kMaxCount) + " GPUs");
}

void check_class_defined(const Topology& topology, const std::string& name,
                         const std::string& pointer) {
  if (!topology.link_classes.count(name))
    throw InputError(topology.source, pointer,
                     "link class '" + name + "' is not defined under /link_classes");
}

}  // namespace

int Topology::nic_of(int local_gpu) const {
  if (!node.nics)
    return -1;
  for (std::size_t nic = 0; nic < node.nics->rails.size(); ++nic) {
    const auto& rail = node.nics->rails[nic];
    if (std::find(rail.begin(), rail.end(), local_gpu) != rail.end())
      return static_cast<int>(nic);
  }
  return -1;
}

const LinkClass& Topology::link_class(const std::string& class_name) const {
  auto it = link_classes.find(class_name);
  if (it == link_classes.end())
    throw RuntimeFailure(source + ": link class '" + class_name + "' is not defined");
  return it->second;
}

std::string NodeSpec::host_bridge_of(int local_gpu) const {
  for (const auto& pcie_switch : pcie_switches) {
    if (std::find(pcie_switch.gpus.begin(), pcie_switch.gpus.end(), local_gpu) !=
        pcie_switch.gpus.end())
      return pcie_switch.host_bridge;
  }
  return "";
}

namespace {

// /leaf_spine (leaf_spine.hpp). Needs the node's NICs (read before it).
LeafSpine read_leaf_spine(const ObjectReader& reader, const NodeSpec& node) {
  reader.allow_only(
      {"nodes_per_leaf", "nics_per_leaf", "rail_optimized", "oversubscription", "note"});
  if (!node.nics)
    reader.fail(reader.pointer(), "a leaf/spine fabric needs NICs: /node/nics is missing");
  LeafSpine fabric;
  fabric.json_pointer = reader.pointer();
  fabric.note = reader.text("note", "");
  if (!reader.has("rail_optimized"))
    reader.fail(reader.at("rail_optimized"),
                "missing required field (true: NIC r of every node in a leaf group goes to leaf "
                "r; false: all NICs of a node go to one leaf)");
  if (!reader.get("rail_optimized").is_boolean())
    reader.fail(
        reader.at("rail_optimized"),
        "expected true or false, got " + std::string(reader.get("rail_optimized").type_name()));
  fabric.rail_optimized = reader.get("rail_optimized").get<bool>();
  const bool by_nodes = reader.has("nodes_per_leaf");
  if (by_nodes == reader.has("nics_per_leaf"))
    reader.fail(reader.at(by_nodes ? "nics_per_leaf" : "nodes_per_leaf"),
                "give exactly one of nodes_per_leaf and nics_per_leaf");
  if (by_nodes) {
    fabric.nodes_per_leaf = reader.integer("nodes_per_leaf", 1);
  } else {
    // A leaf's down ports: one NIC of each node when rail-optimized, all of a node's otherwise.
    const int ports = reader.integer("nics_per_leaf", 1);
    const int per_node = fabric.rail_optimized ? 1 : node.nics->count;
    if (ports % per_node != 0)
      reader.fail(reader.at("nics_per_leaf"), std::to_string(ports) +
                                                  " leaf ports do not hold whole nodes of " +
                                                  std::to_string(per_node) +
                                                  " NICs (not rail-optimized: all NICs of a node "
                                                  "go to one leaf)");
    fabric.nodes_per_leaf = ports / per_node;
  }
  fabric.oversubscription = reader.number("oversubscription");
  if (!(fabric.oversubscription >= 1.0))
    reader.fail(reader.at("oversubscription"),
                "must be at least 1 (leaf downlink : uplink bandwidth; 1 = non-blocking), got " +
                    reader.get("oversubscription").dump());
  return fabric;
}

}  // namespace

Topology parse_topology(std::string_view json_text, const std::string& source) {
  const json document = io::parse_json_document(json_text, source);
  const ObjectReader root(document, "", source);
  root.allow_only(
      {"name", "description", "nodes", "node", "network", "leaf_spine", "link_classes", "nccl"});
  Topology topology;
  topology.source = source;
  topology.name = root.text("name");
  topology.description = root.text("description", "");
  topology.nodes = root.integer("nodes", 1, 1);
  topology.network = root.text("network", "");
  if (root.has("nccl")) {
    const ObjectReader nccl = root.child("nccl");
    nccl.allow_only({"algo", "proto", "channels", "min_ctas", "max_ctas",
                     "tuner_ring_from_bytes_per_rank", "note"});
    topology.nccl.algorithms = nccl.text("algo", "");
    topology.nccl.protocols = nccl.text("proto", "");
    topology.nccl.channels = nccl.integer("channels", 1, 0);
    topology.nccl.min_ctas = nccl.integer("min_ctas", 1, 0);
    topology.nccl.max_ctas = nccl.integer("max_ctas", 1, 0);
    if (topology.nccl.min_ctas > 0 && topology.nccl.max_ctas > 0 &&
        topology.nccl.min_ctas > topology.nccl.max_ctas)
      nccl.fail(nccl.at("min_ctas"), "min_ctas exceeds max_ctas");
    topology.nccl.tuner_ring_from_bytes_per_rank =
        nccl.number("tuner_ring_from_bytes_per_rank", 0.0);
    if (!(topology.nccl.tuner_ring_from_bytes_per_rank >= 0.0))
      nccl.fail(nccl.at("tuner_ring_from_bytes_per_rank"), "expected a size in bytes >= 0");
  }

  const ObjectReader node = root.child("node");
  topology.node = [&] {
    node.allow_only({"gpus", "gpu_model", "cpu", "fabric", "pcie", "nics"});
    NodeSpec spec;
    spec.gpus = node.integer("gpus", 1);
    spec.gpu_model = node.text("gpu_model", "");
    spec.cpu = node.text("cpu", "");
    read_fabric(node.child("fabric"), spec);
    read_pcie(node.child("pcie"), spec);
    if (node.has("nics"))
      read_nics(node.child("nics"), spec);
    return spec;
  }();

  if (root.has("leaf_spine"))
    topology.leaf_spine = read_leaf_spine(root.child("leaf_spine"), topology.node);

  const ObjectReader classes = root.child("link_classes");
  for (const auto& [name, value] : classes.object().items())
    topology.link_classes.emplace(name, read_link_class(classes.child(name), name));

  const NodeSpec& spec = topology.node;
  check_gpu_total(topology, "/nodes");
  if (spec.fabric == IntraNodeFabric::kNvSwitch)
    check_class_defined(topology, spec.nvswitch_link_class, "/node/fabric/link_class");
  for (const auto& [links, name] : spec.ring_link_classes)
    check_class_defined(topology, name, "/node/fabric/ring_link_classes/" + std::to_string(links));
  check_class_defined(topology, spec.pcie_link_class, "/node/pcie/link_class");
  if (spec.nics)
    check_class_defined(topology, spec.nics->link_class, "/node/nics/link_class");
  if (topology.nodes > 1) {
    if (!spec.nics)
      throw InputError(source, "/node/nics",
                       "a cluster of " + std::to_string(topology.nodes) + " nodes needs NICs");
    for (int gpu = 0; gpu < spec.gpus; ++gpu) {
      if (topology.nic_of(gpu) < 0)
        throw InputError(source, "/node/nics/rails",
                         "GPU " + std::to_string(gpu) + " is served by no NIC");
    }
  }
  return topology;
}

Topology load_topology(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw InputError(path, "", "cannot open topology file");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_topology(text.str(), path);
}

Topology with_node_count(Topology topology, int nodes) {
  if (nodes < 1)
    throw InputError(topology.source, "/nodes", "node count must be at least 1");
  if (nodes > 1 && !topology.node.nics)
    throw InputError(topology.source, "/node/nics",
                     "cannot make a " + std::to_string(nodes) + "-node cluster: no NICs");
  if (nodes > 1) {
    for (int gpu = 0; gpu < topology.node.gpus; ++gpu) {
      if (topology.nic_of(gpu) < 0)
        throw InputError(topology.source, "/node/nics/rails",
                         "GPU " + std::to_string(gpu) + " is served by no NIC");
    }
  }
  topology.nodes = nodes;
  check_gpu_total(topology, "/nodes");
  return topology;
}

}  // namespace perfsim::topology

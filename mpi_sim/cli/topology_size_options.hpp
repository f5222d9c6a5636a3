#pragma once
// `--nodes N` and `--gpus-per-node G` for every command that takes a topology: the cluster
// is the topology file's node description times N (topology/node_resize.hpp).
#include <CLI/CLI.hpp>

namespace perfsim::cli {

struct TopologySize {
  int nodes = 0;          // 0: the file's node count
  int gpus_per_node = 0;  // 0: the file's node
};

void add_topology_size_options(CLI::App& sub, TopologySize& size);

}  // namespace perfsim::cli

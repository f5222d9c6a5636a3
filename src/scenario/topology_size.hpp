#pragma once
// The cluster a command asks for: the topology file's node description times `nodes`
// (topology/node_resize.hpp); `--nodes` and `--gpus-per-node` on the command line.

namespace perfsim::scenario {

struct TopologySize {
  int nodes = 0;          // 0: the file's node count
  int gpus_per_node = 0;  // 0: the file's node
};

}  // namespace perfsim::scenario

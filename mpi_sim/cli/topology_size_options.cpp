#include "mpi_sim/cli/topology_size_options.hpp"

namespace perfsim::cli {

void add_topology_size_options(CLI::App& sub, scenario::TopologySize& size) {
  sub.add_option("--nodes", size.nodes,
                 "nodes of the cluster: the topology file's node description repeated (default: "
                 "the file's node count)")
      ->check(CLI::PositiveNumber);
  sub.add_option("--gpus-per-node", size.gpus_per_node,
                 "GPUs per node: local GPUs 0 .. G-1 of the file's node with their links and "
                 "NICs (at most the file's; default: all of them)")
      ->check(CLI::PositiveNumber);
}

}  // namespace perfsim::cli

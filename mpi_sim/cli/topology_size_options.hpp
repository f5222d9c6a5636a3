#pragma once
// `--nodes N` and `--gpus-per-node G` for every command that takes a topology: the cluster
// is the topology file's node description times N (topology/node_resize.hpp).
#include <CLI/CLI.hpp>

#include "scenario/topology_size.hpp"

namespace perfsim::cli {

void add_topology_size_options(CLI::App& sub, scenario::TopologySize& size);

}  // namespace perfsim::cli

#pragma once
// The bus bandwidth an LLM job's TP, DP and CP collectives reach on a cluster, for the HBM
// traffic of the collectives that overlap compute (kernels/comm_hbm_traffic.hpp). A group in one
// node reaches kNominalBusEfficiency of its NVLink (or PCIe) class's nominal per-GPU bandwidth;
// a group across nodes is held to its NICs' share per GPU (a ring runs at its slowest hop).
// Rank 0's groups stand for all: every rank generates from the same ParallelConfig (stage
// templates are shared by a stage's ranks), and Megatron's layouts place every group of a kind
// alike.
#include "generators/llm/llm_parallel_config.hpp"
#include "topology/topology.hpp"

namespace perfsim::generators::llm {

CollectiveBusRates collective_bus_rates(const ParallelConfig& parallel,
                                        const topology::Topology& topology);

// `parallel` with ep_ranks_per_node set from where `topology` places rank 0's EP group (the
// flex dispatcher's node count). InputError when flex meets an EP group spread unevenly.
ParallelConfig with_expert_node_layout(ParallelConfig parallel, const topology::Topology& topology);

// `parallel` with the bus rates of `topology` filled in.
ParallelConfig with_collective_bus_rates(ParallelConfig parallel,
                                         const topology::Topology& topology);

}  // namespace perfsim::generators::llm

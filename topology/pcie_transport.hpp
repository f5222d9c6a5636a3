#pragma once
// How GPUs of a PCIe-only node reach each other (topology file: node/pcie/transport). NCCL moves
// data between two GPUs of a node either peer to peer over PCIe (P2P: one GPU writes straight
// into the other's memory through the switches and root complexes between them) or, when P2P
// is unavailable, through pinned host memory (SHM: the sender writes into a host buffer, the
// receiver reads it back, both across their own PCIe links and every switch uplink above).
// Which one runs follows NCCL's path rule (collectives/pcie_path.hpp); this says what the rule
// cannot see: whether the GPUs and driver allow P2P at all, and one fitted term of the fabric.
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace perfsim::topology {

struct PcieTransport {
  // false: no PCIe peer-to-peer between these GPUs (GeForce boards under current drivers,
  // "nvidia-smi topo -p2p p" printing NS, or NCCL_P2P_DISABLE=1): every pair goes through SHM.
  bool p2p_supported = true;
  // Fraction of the one-way SHM rate each GPU keeps when it writes to and reads from host
  // memory at once (ring all-reduce, all-gather, all-to-all) rather than only one of the two
  // (a two-GPU broadcast). Fitted per fabric from measured sweeps; 1 = nominal (no data).
  double shm_duplex_efficiency = 1.0;
  // Latency SHM adds to each of NCCL's PCIe hops (the flag and data round trip through host
  // memory that P2P does not make). Fitted per fabric; 0 = NCCL's PCIe hop (no data).
  double shm_hop_extra_latency_us = 0.0;
  // The topology file of the box the PCIe class's curves were measured on, when not this one
  // (relative to this file's folder): the model calibrates that box's fabric on them and
  // carries them to this one (its PCIe generation, switches, sockets and transport).
  std::string curves_topology;
  std::string json_pointer;  // where the topology gives it, for errors
};

// Parses node/pcie/transport: {"p2p_supported": bool, "shm_duplex_efficiency": (0, 1],
// "shm_hop_extra_latency_us": [0, 1000], "curves_topology": "file.json"}.
// Throws InputError(source, pointer/..., ...) for unknown fields, wrong types and values out of
// range.
PcieTransport parse_pcie_transport(const nlohmann::json& object, const std::string& source,
                                   const std::string& pointer);

}  // namespace perfsim::topology

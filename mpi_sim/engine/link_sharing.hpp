#pragma once
// Which of a rank's links carries a collective's transfer, for bandwidth sharing between
// concurrent collectives (link_occupancy.hpp, the rule; rank_simulator.cpp applies it).
//
// A rank's traffic leaves and enters its GPU through two shared ports: the node's fabric
// (NVLink/NVSwitch, or PCIe where the topology has no NVLink) and its NIC (the one the
// topology's rails give its GPU). Each is full duplex: what the rank sends and what it receives
// use different directions. A collective whose group spans nodes is bound by the NIC (400 Gb/s
// against 450 GB/s of NVLink on an HGX H100: its NVLink legs use a ninth of the port, ignored);
// a group inside one node by the fabric; a one-rank group uses neither. Where GPUs share a NIC
// the NIC also carries the other GPUs' copies of a group's traffic (LinkDemand::nic_copies).
#include <cstddef>
#include <cstdint>
#include <span>

#include "perfsim/comm.hpp"

namespace perfsim::engine {

// One direction of one port of a GPU.
enum class SharedLink : std::uint8_t {
  kFabricSend,
  kFabricReceive,
  kNicSend,
  kNicReceive,
};
inline constexpr std::size_t kSharedLinkCount = 4;

struct LinkDemand {
  bool sends = false;     // its transfer uses the send direction of `nic ? NIC : fabric`
  bool receives = false;  // ... and the receive direction
  bool nic = false;
  // The share of the collective's duration that is latency (synchronization, protocol
  // overhead): not stretched when the link is shared.
  double latency_fraction = 0;
  // On the NIC: how many copies of this transfer cross it at once, this rank's and those of the
  // other GPUs behind the same NIC running the same collective in their own groups
  // (topology/nic_sharing.hpp); each copy moves at the NIC's shared rate, so the transfer's
  // work there is `nic_copies` times its time alone. 1 when every GPU has its own NIC.
  double nic_copies = 1;
  // Behind an oversubscribed leaf/spine (topology/leaf_spine.hpp), the copies of the other GPUs
  // of the group's nodes (on their own rails, in their own groups) also load the leaf uplinks.
  // Then the transfer's work on the NIC is `network_stretch` times its time alone instead of
  // nic_copies: max(nic_copies, spine slowdown with those copies) / the slowdown of the group
  // alone (already in its duration). 0 when the topology has no such spine.
  double network_stretch = 0;
  double nic_work() const { return network_stretch > 0 ? network_stretch : nic_copies; }
  bool uses_links() const { return sends || receives; }
};

// Decides LinkDemand from the topology (topology_link_sharing.hpp) or, in tests, by hand.
class LinkSharingRule {
 public:
  virtual ~LinkSharingRule() = default;
  // `members`: the group's global simulated ranks, ascending (a MemberList's storage, which
  // lives as long as the program: implementations may key caches on its address).
  virtual LinkDemand demand(const CommInfo& comm, std::span<const int> members) const = 0;
};

}  // namespace perfsim::engine

#pragma once
// The sharing rule: the transfers one rank has in flight on one direction of one link share it
// by processor sharing (k transfers in flight each move at 1/k of the rate they would have
// alone). A collective's duration is latency + transfer; only the transfer is shared.
//
// The rule is applied once, when a rank posts a collective, from what that rank alone knows
// then: the transfers it posted before on the same link, each arriving when this rank was
// ready for it. The new collective's candidate duration (CollectivePost::duration_us) is its
// latency plus the time processor sharing takes to move its transfer among those; the members'
// candidates combine as any model duration does (the longest: a ring is as slow as its most
// loaded member). Nothing else crosses ranks, so every ClockSync (in-process, MPI, folded,
// symmetric) resolves bit-identical timings.
//
// What this approximates:
//  - An earlier collective is not stretched retroactively: its duration was already posted.
//    The bandwidth it yields stays on this link's books (its transfer finishes later there), so
//    the transfers posted after it on the link pay that delay instead; a burst of transfers
//    still ends when its total work is done.
//  - A transfer arrives when this member is ready, not when the last member is (the start the
//    clock sync decides later); the last member to arrive sees its exact start.
//  - Only the rank's own transfers share its fabric port, and its own plus their copies share
//    its NIC: other GPUs behind the same NIC run the same program in the symmetric layouts
//    simulated, so when the rank's group leaves some of them out, each of those moves a copy of
//    the transfer through the NIC at the same moment (LinkDemand::nic_copies: a DP group of one
//    GPU per node on nodes of 2 GPUs per NIC moves 2 copies, its transfer takes 2x). Copies of
//    GPUs inside the group are one collective, priced by the model over the NICs it crosses.
//    The fitted curves were measured with every GPU of the node communicating at once, each on
//    its NIC, so that share is already in each duration.
//  - Transfers posted later never slow an earlier one down (they are unknown when it posts).
//
// State: per link, the transfers not finished by the horizon the caller gives (the rank's
// compute-stream clock: no later collective is ready before it), so O(collectives in flight).
#include <array>
#include <limits>
#include <vector>

#include "mpi_sim/engine/link_sharing.hpp"
#include "perfsim/units.hpp"

namespace perfsim::engine {

class LinkOccupancy {
 public:
  // Records a transfer of `transfer_us` (its time alone) arriving at `ready_us` on each link
  // `demand` names and returns the time from `ready_us` until the last of them is done.
  // `horizon_us` (at most `ready_us`): no transfer posted from now on arrives before it; one
  // that does is taken to arrive at the horizon.
  DurationUs share(const LinkDemand& demand, TimestampUs ready_us, DurationUs transfer_us,
                   TimestampUs horizon_us);

  // Processor sharing on one link.
  struct Transfer {
    TimestampUs arrival_us = 0;
    DurationUs remaining_us = 0;  // of its time alone, still to move at the link's clock
  };
  struct Link {
    // Transfers are known up to here (their remaining_us is as of it).
    TimestampUs clock_us = -std::numeric_limits<TimestampUs>::infinity();
    std::vector<Transfer> transfers;
  };
  // Moves `link` to `until_us`, dropping the transfers finished by then.
  static void advance(Link& link, TimestampUs until_us);
  // Adds a transfer and returns when it finishes among those recorded (none added later). The
  // sharing runs on `scratch` (a copy of the link's transfers), one buffer reused from
  // transfer to transfer instead of one allocated per transfer.
  static TimestampUs add(Link& link, Transfer transfer, std::vector<Transfer>& scratch);

  std::size_t transfers_in_flight() const;

 private:
  std::array<Link, kSharedLinkCount> links_{};
  std::vector<Transfer> scratch_;  // add()'s run of the sharing, reused
};

}  // namespace perfsim::engine

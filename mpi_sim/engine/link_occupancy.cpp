#include "mpi_sim/engine/link_occupancy.hpp"

#include <algorithm>
#include <limits>
#include <optional>

namespace perfsim::engine {
namespace {

constexpr TimestampUs kNever = std::numeric_limits<TimestampUs>::infinity();

// Runs processor sharing over `transfers` from `now_us` until `until_us`, or until transfer
// `watched` finishes (then returns that time); returns `until_us` otherwise. Finished transfers
// keep remaining_us == 0.
TimestampUs run_sharing(std::vector<LinkOccupancy::Transfer>& transfers, TimestampUs now_us,
                        TimestampUs until_us, std::optional<std::size_t> watched) {
  while (now_us < until_us) {
    std::size_t active = 0;
    DurationUs least_remaining_us = kNever;
    TimestampUs next_arrival_us = kNever;
    for (const auto& transfer : transfers) {
      if (transfer.remaining_us <= 0)
        continue;
      if (transfer.arrival_us <= now_us) {
        ++active;
        least_remaining_us = std::min(least_remaining_us, transfer.remaining_us);
      } else {
        next_arrival_us = std::min(next_arrival_us, transfer.arrival_us);
      }
    }
    if (active == 0) {
      if (next_arrival_us == kNever)
        return until_us;
      now_us = std::min(next_arrival_us, until_us);
      continue;
    }
    const auto sharers = static_cast<double>(active);
    const TimestampUs first_done_us = now_us + least_remaining_us * sharers;
    const TimestampUs step_end_us = std::min({first_done_us, next_arrival_us, until_us});
    const bool someone_done = step_end_us == first_done_us;
    const DurationUs moved_us = (step_end_us - now_us) / sharers;
    for (auto& transfer : transfers) {
      if (transfer.remaining_us <= 0 || transfer.arrival_us > now_us)
        continue;
      const bool done = someone_done && transfer.remaining_us == least_remaining_us;
      transfer.remaining_us = done ? 0 : std::max(0.0, transfer.remaining_us - moved_us);
    }
    now_us = step_end_us;
    if (watched && transfers[*watched].remaining_us <= 0)
      return now_us;
  }
  return until_us;
}

}  // namespace

void LinkOccupancy::advance(Link& link, TimestampUs until_us) {
  if (until_us <= link.clock_us)
    return;
  run_sharing(link.transfers, link.clock_us, until_us, std::nullopt);
  std::erase_if(link.transfers,
                [](const Transfer& transfer) { return transfer.remaining_us <= 0; });
  link.clock_us = until_us;
}

TimestampUs LinkOccupancy::add(Link& link, Transfer transfer, std::vector<Transfer>& scratch) {
  if (transfer.remaining_us <= 0)
    return transfer.arrival_us;
  // Callers advance the link no further than the arrival; clamped should one not.
  transfer.arrival_us = std::max(transfer.arrival_us, link.clock_us);
  link.transfers.push_back(transfer);
  scratch.assign(link.transfers.begin(), link.transfers.end());
  return run_sharing(scratch, link.clock_us, kNever, scratch.size() - 1);
}

DurationUs LinkOccupancy::share(const LinkDemand& demand, TimestampUs ready_us,
                                DurationUs transfer_us, TimestampUs horizon_us) {
  const auto link_index = [&](bool send) {
    return static_cast<std::size_t>(
        demand.nic ? (send ? SharedLink::kNicSend : SharedLink::kNicReceive)
                   : (send ? SharedLink::kFabricSend : SharedLink::kFabricReceive));
  };
  TimestampUs done_us = ready_us + transfer_us;
  bool first = true;
  for (const bool send : {true, false}) {
    if (send ? !demand.sends : !demand.receives)
      continue;
    Link& link = links_[link_index(send)];
    advance(link, horizon_us);
    // The copies of other GPUs behind the NIC arrive with this one and are as large: processor
    // sharing over k equal transfers arriving together is one transfer of k times the work.
    const DurationUs work_us = demand.nic ? transfer_us * demand.nic_work() : transfer_us;
    const TimestampUs finished_us = add(link, Transfer{ready_us, work_us}, scratch_);
    done_us = first ? finished_us : std::max(done_us, finished_us);
    first = false;
  }
  return done_us - ready_us;
}

std::size_t LinkOccupancy::transfers_in_flight() const {
  std::size_t count = 0;
  for (const Link& link : links_)
    count += link.transfers.size();
  return count;
}

}  // namespace perfsim::engine

#include "mpi_sim/engine/topology_link_sharing.hpp"

#include <algorithm>
#include <memory>

#include "collectives/bus_factor.hpp"

namespace perfsim::engine {

LinkDemand TopologyLinkSharing::demand(const CommInfo& comm, std::span<const int> members) const {
  const Bytes bytes = collectives::model_message_bytes(comm);
  const Key key{members.data(), members.size(), comm.kind, bytes};
  {
    std::lock_guard lock(mutex_);
    if (const auto found = demands_.find(key); found != demands_.end())
      return found->second;
  }
  LinkDemand demand;
  // A barrier moves no data.
  if (members.size() > 1 && comm.kind != CollectiveKind::kBarrier) {
    const collectives::CollectivePrediction prediction = model_.predict(comm.kind, bytes, members);
    demand.nic = prediction.route.n_nodes > 1;
    demand.sends = comm.kind != CollectiveKind::kRecv;
    demand.receives = comm.kind != CollectiveKind::kSend;
    demand.latency_fraction =
        prediction.nccl.time_us > 0.0
            ? std::clamp(prediction.nccl.latency_us / prediction.nccl.time_us, 0.0, 1.0)
            : 0.0;
  }
  std::lock_guard lock(mutex_);
  demands_.emplace(key, demand);
  return demand;
}

void share_links_by_topology(std::span<RankProgram> programs,
                             const collectives::CollectiveModel& model) {
  const auto rule = std::make_shared<const TopologyLinkSharing>(model);
  for (RankProgram& program : programs)
    program.link_sharing = rule;
}

}  // namespace perfsim::engine

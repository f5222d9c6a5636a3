#include "mpi_sim/engine/topology_link_sharing.hpp"

#include <algorithm>
#include <map>
#include <memory>

#include "collectives/bus_factor.hpp"
#include "collectives/spine_traffic.hpp"
#include "topology/leaf_spine.hpp"
#include "topology/nic_sharing.hpp"

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
    if (demand.nic)
      demand.nic_copies = nic_copies(members);
    if (demand.nic && topology::spine_can_bind(model_.topology())) {
      const auto flows = collectives::collective_flows(
          model_.topology(), comm.kind, prediction.nccl.algorithm, members, true, world_size_);
      const double with_copies = topology::spine_load(model_.topology(), flows).slowdown();
      demand.network_stretch = std::max(demand.nic_copies, with_copies) / prediction.spine_slowdown;
    }
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

double TopologyLinkSharing::nic_copies(std::span<const int> members) const {
  {
    std::lock_guard lock(mutex_);
    if (const auto found = nic_copies_.find(members); found != nic_copies_.end())
      return found->second;
  }
  const double copies = topology::nic_copies(model_.topology(), members, world_size_);
  std::lock_guard lock(mutex_);
  nic_copies_.emplace(std::vector<int>(members.begin(), members.end()), copies);
  return copies;
}

void share_links_by_topology(std::span<RankProgram> programs,
                             const collectives::CollectiveModel& model) {
  std::map<int, std::shared_ptr<const TopologyLinkSharing>> rules;
  for (RankProgram& program : programs) {
    auto& rule = rules[program.world_size];
    if (!rule)
      rule = std::make_shared<const TopologyLinkSharing>(model, program.world_size);
    program.link_sharing = rule;
  }
}

}  // namespace perfsim::engine

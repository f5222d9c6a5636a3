#pragma once
// LinkSharingRule from the collective model's topology: a group that spans nodes loads the
// NIC of every member (the NIC the topology's rails give its GPU), a group inside one node the
// node's fabric (NVLink/NVSwitch, or PCIe), one rank nothing. A send loads the sending
// direction, a receive the receiving one, every other collective both. The latency share is
// the NCCL algorithm model's (latency / time of the chosen algorithm and protocol). Where GPUs
// share a NIC, its copies (topology/nic_sharing.hpp).
#include <algorithm>
#include <map>
#include <mutex>
#include <span>
#include <tuple>
#include <vector>

#include "collectives/collective_model.hpp"
#include "mpi_sim/engine/link_sharing.hpp"
#include "mpi_sim/engine/rank_program.hpp"

namespace perfsim::engine {

class TopologyLinkSharing final : public LinkSharingRule {
 public:
  // `world_size`: the job's ranks (global ranks 0..world_size-1 run it; GPUs beyond are idle);
  // 0: every GPU of the topology.
  explicit TopologyLinkSharing(collectives::CollectiveModel model, int world_size = 0)
      : model_(std::move(model)),
        world_size_(world_size > 0 ? world_size : model_.topology().world_size()) {}
  LinkDemand demand(const CommInfo& comm, std::span<const int> members) const override;

 private:
  collectives::CollectiveModel model_;  // before world_size_, which reads its topology
  int world_size_ = 0;                  // the job's ranks, resolved once
  // By (member list storage, size, kind, bytes): the ranks of a process ask for the same few
  // collectives millions of times. Locked: the planner prices layouts on several threads.
  using Key = std::tuple<const int*, std::size_t, CollectiveKind, Bytes>;
  mutable std::mutex mutex_;
  mutable std::map<Key, LinkDemand> demands_;
  // topology::nic_copies by member list: it depends on the group alone, which many
  // (kind, bytes) of demands_ share.
  struct RanksLess {
    using is_transparent = void;
    bool operator()(std::span<const int> a, std::span<const int> b) const {
      return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
    }
  };
  mutable std::map<std::vector<int>, double, RanksLess> nic_copies_;

  double nic_copies(std::span<const int> members) const;
};

// Sets one TopologyLinkSharing on every program (one per world size the programs name).
void share_links_by_topology(std::span<RankProgram> programs,
                             const collectives::CollectiveModel& model);

}  // namespace perfsim::engine

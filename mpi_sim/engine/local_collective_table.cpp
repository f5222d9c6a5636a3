#include "mpi_sim/engine/local_collective_table.hpp"

#include <algorithm>

#include "perfsim/error.hpp"

namespace perfsim::engine {

std::pair<CollectiveHandle, bool> LocalCollectiveTable::add(const CollectivePost& post) {
  auto key = std::make_pair(post.group, post.index_in_group);
  auto found = by_key_.find(key);
  std::size_t id = 0;
  if (found == by_key_.end()) {
    id = aggregates_.size();
    Aggregate aggregate;
    aggregate.group = post.group;
    aggregate.index_in_group = post.index_in_group;
    aggregate.members.assign(post.members.begin(), post.members.end());
    aggregate.local_members = static_cast<int>(
        std::count_if(aggregate.members.begin(), aggregate.members.end(), is_local_));
    aggregate.max_ready_us = post.ready_us;
    aggregate.duration_us = post.duration_us;
    aggregate.combine = post.combine;
    aggregates_.push_back(std::move(aggregate));
    by_key_.emplace(std::move(key), id);
  } else {
    id = found->second;
    Aggregate& aggregate = aggregates_[id];
    if (!std::equal(aggregate.members.begin(), aggregate.members.end(), post.members.begin(),
                    post.members.end())) {
      throw RuntimeFailure("collective " + post.group + "#" + std::to_string(post.index_in_group) +
                           ": rank " + std::to_string(post.sim_rank) +
                           " names other group members than an earlier member");
    }
    aggregate.max_ready_us = std::max(aggregate.max_ready_us, post.ready_us);
    if (aggregate.combine != post.combine) {
      throw RuntimeFailure("collective " + post.group + "#" + std::to_string(post.index_in_group) +
                           ": members use different duration sources");
    }
    aggregate.duration_us = aggregate.combine == DurationCombine::kShortest
                                ? std::min(aggregate.duration_us, post.duration_us)
                                : std::max(aggregate.duration_us, post.duration_us);
  }
  Aggregate& aggregate = aggregates_[id];
  ++aggregate.posted;
  if (aggregate.posted > aggregate.local_members) {
    throw RuntimeFailure("collective " + post.group + "#" + std::to_string(post.index_in_group) +
                         ": posted more often than it has local members");
  }
  return {CollectiveHandle{id}, aggregate.complete_locally()};
}

std::vector<const LocalCollectiveTable::Aggregate*> LocalCollectiveTable::incomplete() const {
  std::vector<const Aggregate*> result;
  for (const Aggregate& aggregate : aggregates_) {
    if (!aggregate.complete_locally())
      result.push_back(&aggregate);
  }
  return result;
}

}  // namespace perfsim::engine

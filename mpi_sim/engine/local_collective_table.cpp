#include "mpi_sim/engine/local_collective_table.hpp"

#include <algorithm>

#include "perfsim/error.hpp"

namespace perfsim::engine {

std::pair<CollectiveHandle, bool> LocalCollectiveTable::add(const CollectivePost& post) {
  const auto found = by_key_.find(KeyView(post.group, post.index_in_group));
  std::size_t id = 0;
  if (found == by_key_.end()) {
    id = next_id_++;
    Aggregate aggregate;
    aggregate.group = post.group;
    aggregate.index_in_group = post.index_in_group;
    aggregate.members.assign(post.members.begin(), post.members.end());
    aggregate.local_members = static_cast<int>(
        std::count_if(aggregate.members.begin(), aggregate.members.end(), is_local_));
    aggregate.max_ready_us = post.ready_us;
    aggregate.duration_us = post.duration_us;
    aggregate.combine = post.combine;
    aggregates_.emplace(id, std::move(aggregate));
    by_key_.emplace(std::make_pair(post.group, post.index_in_group), id);
  } else {
    id = found->second;
    Aggregate& aggregate = aggregates_.at(id);
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
  Aggregate& aggregate = aggregates_.at(id);
  ++aggregate.posted;
  if (aggregate.posted > aggregate.local_members) {
    throw RuntimeFailure("collective " + post.group + "#" + std::to_string(post.index_in_group) +
                         ": posted more often than it has local members");
  }
  return {CollectiveHandle{id}, aggregate.complete_locally()};
}

LocalCollectiveTable::Aggregate& LocalCollectiveTable::at(CollectiveHandle handle) {
  const auto found = aggregates_.find(handle.id);
  if (found == aggregates_.end())
    throw RuntimeFailure("collective handle " + std::to_string(handle.id) +
                         ": not posted, or its record was freed after every local member took "
                         "its timing");
  return found->second;
}

const LocalCollectiveTable::Aggregate& LocalCollectiveTable::at(CollectiveHandle handle) const {
  return const_cast<LocalCollectiveTable*>(this)->at(handle);
}

std::optional<CollectiveTiming> LocalCollectiveTable::take_timing(CollectiveHandle handle) {
  Aggregate& aggregate = at(handle);
  if (!aggregate.timing)
    return std::nullopt;
  const CollectiveTiming timing = *aggregate.timing;
  if (++aggregate.taken == aggregate.local_members) {
    by_key_.erase(std::make_pair(std::move(aggregate.group), aggregate.index_in_group));
    aggregates_.erase(handle.id);
  }
  return timing;
}

std::vector<const LocalCollectiveTable::Aggregate*> LocalCollectiveTable::incomplete() const {
  std::vector<std::pair<std::size_t, const Aggregate*>> by_id;
  for (const auto& [id, aggregate] : aggregates_) {
    if (!aggregate.complete_locally())
      by_id.emplace_back(id, &aggregate);
  }
  std::sort(by_id.begin(), by_id.end());
  std::vector<const Aggregate*> result;
  for (const auto& [id, aggregate] : by_id)
    result.push_back(aggregate);
  return result;
}

}  // namespace perfsim::engine

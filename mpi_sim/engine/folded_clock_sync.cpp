#include "mpi_sim/engine/folded_clock_sync.hpp"

#include <algorithm>

#include "perfsim/error.hpp"

namespace perfsim::engine {

FoldedClockSync::FoldedClockSync(std::vector<int> representative_of,
                                 std::span<const GroupRenaming> renamings)
    : representative_of_(std::move(representative_of)) {
  for (const GroupRenaming& renaming : renamings) {
    auto& map = renaming_[renaming.rank];
    for (const auto& [own, theirs] : renaming.own_to_representative)
      map[group_id(own)] = group_id(theirs);
  }
}

int FoldedClockSync::group_id(const std::string& name) {
  return group_ids_.emplace(name, static_cast<int>(group_ids_.size())).first->second;
}

const std::vector<std::pair<int, int>>& FoldedClockSync::counterparts(int group,
                                                                      const CollectivePost& post) {
  const auto [found, added] = counterparts_.try_emplace(group);
  if (!added)
    return found->second;
  std::vector<std::pair<int, int>>& distinct = found->second;
  for (int member : post.members) {
    const int representative = representative_of_.at(static_cast<std::size_t>(member));
    int their_group = group;
    if (member != representative) {
      const auto renaming = renaming_.find(member);
      const auto mapped = renaming == renaming_.end()
                              ? std::unordered_map<int, int>::const_iterator{}
                              : renaming->second.find(group);
      if (renaming == renaming_.end() || mapped == renaming->second.end())
        throw RuntimeFailure("folded run: rank " + std::to_string(member) + " of " + post.group +
                             " has no proven counterpart");
      their_group = mapped->second;
    }
    distinct.emplace_back(representative, their_group);
  }
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  return distinct;
}

CollectiveHandle FoldedClockSync::post(const CollectivePost& post) {
  const int group = group_id(post.group);
  const PostKey own{post.sim_rank, group, post.index_in_group};
  if (!posts_.emplace(own, Posted{post.ready_us, post.duration_us, post.combine}).second)
    throw RuntimeFailure("folded run: rank " + std::to_string(post.sim_rank) + " posts " +
                         post.group + "#" + std::to_string(post.index_in_group) + " twice");
  // Resolution is decided here, when the last awaited post arrives, so that the scheduler learns
  // of it (take_resolved) rather than polling the ranks that wait.
  if (const auto waiters = awaiting_.find(own); waiters != awaiting_.end()) {
    for (std::size_t pending_id : waiters->second) {
      if (--pending_[pending_id].missing == 0)
        resolve(pending_id);
    }
    awaiting_.erase(waiters);
  }
  const PostKey collective{0, group, post.index_in_group};
  const auto [found, added] = pending_of_.emplace(collective, pending_.size());
  if (added) {
    const std::size_t pending_id = pending_.size();
    Pending pending;
    for (const auto& [representative, their_group] : counterparts(group, post)) {
      const PostKey awaited{representative, their_group, post.index_in_group};
      pending.awaited.push_back(awaited);
      if (!posts_.contains(awaited)) {
        ++pending.missing;
        awaiting_[awaited].push_back(pending_id);
      }
    }
    pending_.push_back(std::move(pending));
    if (pending_.back().missing == 0)
      resolve(pending_id);
  }
  return CollectiveHandle{found->second};
}

void FoldedClockSync::resolve(std::size_t pending_id) {
  Pending& pending = pending_[pending_id];
  TimestampUs start_us = 0;
  DurationUs duration_us = 0;
  bool first = true;
  for (const PostKey& key : pending.awaited) {
    const Posted& posted = posts_.at(key);
    start_us = first ? posted.ready_us : std::max(start_us, posted.ready_us);
    duration_us = first ? posted.duration_us
                  : posted.combine == DurationCombine::kShortest
                      ? std::min(duration_us, posted.duration_us)
                      : std::max(duration_us, posted.duration_us);
    first = false;
  }
  pending.timing = CollectiveTiming{start_us, start_us + duration_us};
  note_resolved(CollectiveHandle{pending_id});
}

std::optional<CollectiveTiming> FoldedClockSync::poll(CollectiveHandle handle) {
  return pending_.at(handle.id).timing;
}

}  // namespace perfsim::engine

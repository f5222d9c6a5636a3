#include "mpi_sim/engine/folded_clock_sync.hpp"

#include <algorithm>
#include <unordered_set>

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
  count_awaiters(renamings);
}

void FoldedClockSync::count_awaiters(std::span<const GroupRenaming> renamings) {
  const std::size_t ranks = representative_of_.size();
  std::vector<bool> has_renaming(ranks, false);
  std::unordered_set<int> posted_on;  // groups with a representative member
  for (const GroupRenaming& renaming : renamings) {
    const auto rank = static_cast<std::size_t>(renaming.rank);
    if (renaming.rank < 0 || rank >= ranks)
      return;  // a rank outside the world: keep every post
    has_renaming[rank] = true;
    if (representative_of_[rank] == renaming.rank) {
      for (const auto& entry : renaming.own_to_representative)
        posted_on.insert(group_id(entry.first));
    }
  }
  for (std::size_t rank = 0; rank < ranks; ++rank) {
    if (representative_of_[rank] == static_cast<int>(rank) && !has_renaming[rank])
      return;
  }
  std::unordered_map<std::uint64_t, std::vector<int>> awaiting_groups;
  for (const GroupRenaming& renaming : renamings) {
    const int representative = representative_of_[static_cast<std::size_t>(renaming.rank)];
    for (const auto& [own, theirs] : renaming.own_to_representative) {
      const int awaiting = group_id(own);
      if (posted_on.contains(awaiting))
        awaiting_groups[class_group_key(representative, group_id(theirs))].push_back(awaiting);
    }
  }
  for (auto& [key, groups] : awaiting_groups) {
    std::sort(groups.begin(), groups.end());
    awaiters_of_[key] =
        static_cast<int>(std::unique(groups.begin(), groups.end()) - groups.begin());
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
  int& representatives = representatives_in_group_[group];
  for (int member : post.members) {
    const int representative = representative_of_.at(static_cast<std::size_t>(member));
    representatives += member == representative ? 1 : 0;
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
  const auto awaiters = awaiters_of_.find(class_group_key(post.sim_rank, group));
  const int awaiters_left = awaiters == awaiters_of_.end() ? -1 : awaiters->second;
  if (!posts_.emplace(own, Posted{post.ready_us, post.duration_us, post.combine, awaiters_left})
           .second)
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
  const auto [found, added] = pending_of_.emplace(collective, next_pending_id_);
  if (added) {
    const std::size_t pending_id = next_pending_id_++;
    Pending pending;
    pending.key = collective;
    for (const auto& [representative, their_group] : counterparts(group, post)) {
      const PostKey awaited{representative, their_group, post.index_in_group};
      pending.awaited.push_back(awaited);
      if (!posts_.contains(awaited)) {
        ++pending.missing;
        awaiting_[awaited].push_back(pending_id);
      }
    }
    pending.polls_left = representatives_in_group_[group];
    const bool ready = pending.missing == 0;
    pending_.emplace(pending_id, std::move(pending));
    if (ready)
      resolve(pending_id);
  }
  return CollectiveHandle{found->second};
}

void FoldedClockSync::resolve(std::size_t pending_id) {
  Pending& pending = pending_.at(pending_id);
  TimestampUs start_us = 0;
  DurationUs duration_us = 0;
  bool first = true;
  for (const PostKey& key : pending.awaited) {
    const auto found = posts_.find(key);
    if (found == posts_.end())
      throw RuntimeFailure("folded run: a post awaited by group " + std::to_string(key.group) +
                           "#" + std::to_string(key.index) + " was freed before it resolved");
    const Posted& posted = found->second;
    start_us = first ? posted.ready_us : std::max(start_us, posted.ready_us);
    duration_us = first ? posted.duration_us
                  : posted.combine == DurationCombine::kShortest
                      ? std::min(duration_us, posted.duration_us)
                      : std::max(duration_us, posted.duration_us);
    first = false;
    if (found->second.awaiters_left > 0 && --found->second.awaiters_left == 0)
      posts_.erase(found);
  }
  // The awaited list is not needed once resolved; the record waits for its pollers.
  std::vector<PostKey>().swap(pending.awaited);
  pending.timing = CollectiveTiming{start_us, start_us + duration_us};
  note_resolved(CollectiveHandle{pending_id});
}

std::optional<CollectiveTiming> FoldedClockSync::poll(CollectiveHandle handle) {
  const auto found = pending_.find(handle.id);
  if (found == pending_.end())
    throw RuntimeFailure("folded run: collective " + std::to_string(handle.id) +
                         " polled after every representative took its timing");
  const std::optional<CollectiveTiming> timing = found->second.timing;
  if (timing && --found->second.polls_left == 0) {
    pending_of_.erase(found->second.key);
    pending_.erase(found);
  }
  return timing;
}

}  // namespace perfsim::engine

#pragma once
// Clock synchronization for a folded world (rank_folding.hpp): only representatives are
// simulated. A collective (G, k) of a representative waits, for each member m of G, for the
// post of rep(m) on (phi_m(G), k): m's own post is that one, proven identical. This
// generalizes SymmetricClockSync (which takes every unsimulated member to post together with
// the poster) to groups whose members play other roles, such as the ranks of a
// context-parallel ring, where the clone a representative sends to is receiving from
// another clone at the time the representative receives.
//
// Records are freed once resolved, as the other syncs do (clock_sync.hpp): a collective's
// record once every representative in its group took the timing, and a post once every
// collective that awaits it resolved. Which collectives await a post (r, G, k) is known before
// the run from the renamings: the groups H with a representative member (someone posts on H)
// that a rank of r's class maps to G. Without a renaming for every representative that count
// is unknown and posts are kept (a freed post that a later collective awaited would hang it).
#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "mpi_sim/engine/clock_sync.hpp"
#include "mpi_sim/engine/rank_folding.hpp"

namespace perfsim::engine {

class FoldedClockSync final : public ClockSync {
 public:
  // `representative_of[r]` for every rank; the renamings of every rank that is a member of a
  // representative's group (others are ignored).
  FoldedClockSync(std::vector<int> representative_of, std::span<const GroupRenaming> renamings);
  CollectiveHandle post(const CollectivePost& post) override;
  std::optional<CollectiveTiming> poll(CollectiveHandle handle) override;
  // Collective records and posts held: those in flight, not every one of the run.
  std::size_t held_collectives() const { return pending_.size(); }
  std::size_t held_posts() const { return posts_.size(); }
  // Every awaited post comes from a representative simulated in this process.
  bool make_progress() override { return false; }

 private:
  struct PostKey {
    int rank = 0;
    int group = 0;
    std::size_t index = 0;
    bool operator==(const PostKey&) const = default;
  };
  struct PostKeyHash {
    std::size_t operator()(const PostKey& key) const {
      return (static_cast<std::size_t>(key.rank) * 1000003u + static_cast<std::size_t>(key.group)) *
                 1000003u +
             key.index;
    }
  };
  struct Posted {
    TimestampUs ready_us = 0;
    DurationUs duration_us = 0;
    DurationCombine combine = DurationCombine::kLongest;
    int awaiters_left = -1;  // collectives still to resolve from it; -1: kept to the end
  };
  struct Pending {
    std::vector<PostKey> awaited;  // one per distinct (representative, its group) of the members
    std::size_t missing = 0;       // awaited posts not made yet
    std::optional<CollectiveTiming> timing;
    int polls_left = 0;  // representatives in the group that have not taken the timing
    PostKey key;         // its pending_of_ entry: (0, group, index)
  };
  // (representative, group id) as one key.
  static std::uint64_t class_group_key(int representative, int group) {
    return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(representative)) << 32) |
           static_cast<std::uint32_t>(group);
  }
  // Counts, for every (representative, group) a post can come from, the groups whose
  // collectives await it (see above); leaves the map empty when that cannot be known.
  void count_awaiters(std::span<const GroupRenaming> renamings);
  // Sets the timing of a pending collective whose awaited posts have all been made.
  void resolve(std::size_t pending_id);
  int group_id(const std::string& name);
  // The distinct (representative, its group id) the members of `group` stand for, computed once
  // per group: a 128-member group whose members are clones of one representative awaits one
  // post, not 128 (the latest ready time and the min/max duration are the same over either).
  const std::vector<std::pair<int, int>>& counterparts(int group, const CollectivePost& post);

  std::vector<int> representative_of_;
  std::unordered_map<std::string, int> group_ids_;
  // rank -> (own group id -> representative's group id)
  std::unordered_map<int, std::unordered_map<int, int>> renaming_;
  std::unordered_map<PostKey, Posted, PostKeyHash> posts_;
  std::unordered_map<PostKey, std::size_t, PostKeyHash> pending_of_;  // rank field unused (0)
  // A post not made yet -> the pending collectives that await it (erased once it is made).
  std::unordered_map<PostKey, std::vector<std::size_t>, PostKeyHash> awaiting_;
  // By handle id: ids grow with every new collective and are never reused.
  std::unordered_map<std::size_t, Pending> pending_;
  std::size_t next_pending_id_ = 0;
  std::unordered_map<int, std::vector<std::pair<int, int>>> counterparts_;  // by group id
  std::unordered_map<int, int> representatives_in_group_;                   // by group id
  std::unordered_map<std::uint64_t, int> awaiters_of_;                      // by class_group_key
};

}  // namespace perfsim::engine

#pragma once
// Aggregates the posts of the members of each collective that live in this process. Used by
// both ClockSync implementations: in-process it is the whole resolution; under MPI it yields
// the per-process contribution that one MPI reduction combines across processes. A record
// lives only while the collective is in flight: once every local member has taken its timing
// (take_timing) it is freed, so the table holds the collectives outstanding, not every
// collective of the run (an unfolded 1024-rank run resolves millions).
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "mpi_sim/engine/clock_sync.hpp"

namespace perfsim::engine {

class LocalCollectiveTable {
 public:
  // `is_local(rank)` says whether a simulated rank lives in this process.
  template <class IsLocal>
  explicit LocalCollectiveTable(IsLocal is_local) : is_local_(std::move(is_local)) {}

  struct Aggregate {
    std::string group;
    std::size_t index_in_group = 0;
    std::vector<int> members;
    int local_members = 0;
    int posted = 0;
    TimestampUs max_ready_us = 0;
    DurationUs duration_us = 0;  // combined over the posts so far
    DurationCombine combine = DurationCombine::kLongest;
    std::optional<CollectiveTiming> timing;
    int taken = 0;  // local members that have taken the timing
    bool complete_locally() const { return posted == local_members; }
    bool all_members_local() const { return local_members == static_cast<int>(members.size()); }
  };

  // Adds a post; returns the handle and whether this post completed the local aggregate.
  std::pair<CollectiveHandle, bool> add(const CollectivePost& post);
  // A collective in flight (throws once its record was freed).
  Aggregate& at(CollectiveHandle handle);
  const Aggregate& at(CollectiveHandle handle) const;
  // The timing once resolved, for one local member: each posting member takes it once, and the
  // last one frees the record. Nothing (and nothing freed) while unresolved.
  std::optional<CollectiveTiming> take_timing(CollectiveHandle handle);
  // Records held: collectives posted and not yet taken by every local member.
  std::size_t size() const { return aggregates_.size(); }
  // Collectives posted so far (handles are never reused).
  std::size_t posted_collectives() const { return next_id_; }
  // Aggregates still waiting for posts of local members (used for deadlock reports), oldest
  // first.
  std::vector<const Aggregate*> incomplete() const;

 private:
  std::function<bool(int)> is_local_;
  // By handle id: ids grow with every new collective and are never reused, so a handle that a
  // scheduler still holds cannot name a later collective.
  std::unordered_map<std::size_t, Aggregate> aggregates_;
  std::size_t next_id_ = 0;
  // Transparent: a post looks its collective up by a view of its group name, without copying
  // it into a key (std::hash gives a string and its view the same value).
  using KeyView = std::pair<std::string_view, std::size_t>;
  struct KeyHash {
    using is_transparent = void;
    std::size_t operator()(const KeyView& key) const {
      return std::hash<std::string_view>{}(key.first) * 1000003u ^ key.second;
    }
    std::size_t operator()(const std::pair<std::string, std::size_t>& key) const {
      return (*this)(KeyView(key.first, key.second));
    }
  };
  struct KeyEqual {
    using is_transparent = void;
    static KeyView view(const KeyView& key) { return key; }
    static KeyView view(const std::pair<std::string, std::size_t>& key) {
      return {key.first, key.second};
    }
    template <class A, class B>
    bool operator()(const A& a, const B& b) const {
      return view(a) == view(b);
    }
  };
  // (group, index in group) -> aggregate: hashed, as every post looks its collective up.
  std::unordered_map<std::pair<std::string, std::size_t>, std::size_t, KeyHash, KeyEqual> by_key_;
};

}  // namespace perfsim::engine

#include "mpi_sim/engine/rank_folding.hpp"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "perfsim/error.hpp"

namespace perfsim::engine {
namespace {

// Builds the bijection between a rank's group names and its representative's.
class RenamingBuilder {
 public:
  // False when `own` or `representative` is already paired with another name.
  bool pair(const std::string& own, const std::string& representative) {
    const auto [forward, added] = to_representative_.emplace(own, representative);
    if (!added)
      return forward->second == representative;
    const auto [backward, added_back] = to_own_.emplace(representative, own);
    if (!added_back)
      return false;
    pairs_.emplace_back(own, representative);
    return true;
  }
  std::vector<std::pair<std::string, std::string>> take() { return std::move(pairs_); }

 private:
  std::unordered_map<std::string, std::string> to_representative_;
  std::unordered_map<std::string, std::string> to_own_;
  std::vector<std::pair<std::string, std::string>> pairs_;
};

bool same_host_timing(const std::shared_ptr<const RecordedHostTiming>& a,
                      const std::shared_ptr<const RecordedHostTiming>& b) {
  if (!a || !b)
    return !a && !b;
  return a->thread_id == b->thread_id && a->thread_gap_us == b->thread_gap_us &&
         a->start_offset_us == b->start_offset_us && a->cpu_us == b->cpu_us &&
         a->block_offset_us == b->block_offset_us && a->after_block_us == b->after_block_us;
}

bool same_kernel(const SimKernel& a, const SimKernel& b) {
  return a.name == b.name && a.stream == b.stream && a.category == b.category &&
         a.duration_us == b.duration_us && a.launch_api == b.launch_api &&
         a.is_collective == b.is_collective && a.host_waits == b.host_waits &&
         a.recorded_launch_offset_us == b.recorded_launch_offset_us &&
         a.recorded_launch_us == b.recorded_launch_us;
}

// Ranks named by the two programs belong to the same class (or are both absent, -1).
bool same_class(int a, int b, std::span<const int> representative_of) {
  if (a < 0 || b < 0)
    return a == b;
  if (static_cast<std::size_t>(a) >= representative_of.size() ||
      static_cast<std::size_t>(b) >= representative_of.size())
    return false;
  return representative_of[a] == representative_of[b];
}

// "" when the collectives agree; else what differs. Pairs their group names in `renaming`.
std::string compare_collectives(const SimCollective& a, const SimCollective& b,
                                std::span<const int> representative_of, RenamingBuilder& renaming) {
  if (a.comm.kind != b.comm.kind || a.comm.group_size != b.comm.group_size ||
      a.comm.dtype != b.comm.dtype || a.comm.bytes_in != b.comm.bytes_in ||
      a.comm.bytes_out != b.comm.bytes_out ||
      a.comm.in_split_elements != b.comm.in_split_elements ||
      a.comm.out_split_elements != b.comm.out_split_elements || a.comm.tag != b.comm.tag ||
      a.comm.match_tag != b.comm.match_tag)
    return "collective kind or size";
  if (!same_class(a.comm.peer_rank, b.comm.peer_rank, representative_of) ||
      !same_class(a.comm.root_rank, b.comm.root_rank, representative_of))
    return "peer or root in another class";
  if (a.index_in_group != b.index_in_group)
    return "index in group";
  if (a.duration_us != b.duration_us || a.combine != b.combine)
    return "collective duration (topology not symmetric for group " + b.group + ")";
  if (a.stream != b.stream || a.produced_tensor_ids != b.produced_tensor_ids || a.seq != b.seq)
    return "collective stream or buffers";
  if (a.members.size() != b.members.size())
    return "group size";
  for (std::size_t i = 0; i < a.members.size(); ++i) {
    if (!same_class(a.members[i], b.members[i], representative_of))
      return "group " + b.group + " has a member of another class";
  }
  if (!renaming.pair(b.group, a.group) ||
      !renaming.pair(b.comm.process_group, a.comm.process_group))
    return "group " + b.group + " plays two roles";
  return "";
}

std::string compare_ops(const SimOp& a, const SimOp& b, std::span<const int> representative_of,
                        RenamingBuilder& renaming) {
  if (a.name != b.name)
    return "op name";
  if (a.phase != b.phase)
    return "phase";
  if (a.kernels.size() != b.kernels.size() ||
      !std::equal(a.kernels.begin(), a.kernels.end(), b.kernels.begin(), same_kernel))
    return "kernels";
  if (a.waits_for_communication != b.waits_for_communication ||
      a.waits_for_seq != b.waits_for_seq || a.host_sync != b.host_sync ||
      a.queued_before_trace != b.queued_before_trace ||
      a.continues_previous != b.continues_previous || a.continued_by_next != b.continued_by_next ||
      a.measured_start_us != b.measured_start_us ||
      a.consumed_tensor_ids != b.consumed_tensor_ids ||
      !same_host_timing(a.recorded_host, b.recorded_host))
    return "dependencies or host timing";
  if (!a.collective || !b.collective)
    return a.collective || b.collective ? "collective on one side only" : "";
  return compare_collectives(*a.collective, *b.collective, representative_of, renaming);
}

}  // namespace

ProgramComparison compare_with_representative(const RankProgram& representative,
                                              const RankProgram& program,
                                              std::span<const int> representative_of) {
  // A bound program's ops carry another rank's CommInfo (its group names and peers).
  if (representative.binding || program.binding)
    throw RuntimeFailure("compare_with_representative: compare programs compiled in full");
  ProgramComparison comparison;
  auto differs = [&](const std::string& what) {
    comparison.difference = "rank " + std::to_string(program.sim_rank) + " differs from rank " +
                            std::to_string(representative.sim_rank) + ": " + what;
    return comparison;
  };
  if (program.start_us != representative.start_us ||
      program.world_size != representative.world_size)
    return differs("start time or world size");
  if (program.ops.size() != representative.ops.size())
    return differs(std::to_string(program.ops.size()) + " ops against " +
                   std::to_string(representative.ops.size()));
  RenamingBuilder renaming;
  for (std::size_t i = 0; i < program.ops.size(); ++i) {
    const std::string difference =
        representative.ops.trace_position(i) != program.ops.trace_position(i)
            ? "op name"
            : compare_ops(representative.ops[i], program.ops[i], representative_of, renaming);
    if (!difference.empty())
      return differs("op " + std::to_string(i) + " (" + std::string(program.ops[i].name) +
                     "): " + difference);
  }
  comparison.renaming = GroupRenaming{program.sim_rank, renaming.take()};
  return comparison;
}

GroupRenaming identity_renaming(const RankProgram& representative) {
  if (representative.binding)
    throw RuntimeFailure("identity_renaming: a representative is compiled in full");
  GroupRenaming renaming{representative.sim_rank, {}};
  std::map<std::string, bool> seen;
  for (const SimOp& op : representative.ops) {
    if (!op.collective)
      continue;
    for (const std::string* name : {&op.collective->group, &op.collective->comm.process_group}) {
      if (seen.emplace(*name, true).second)
        renaming.own_to_representative.emplace_back(*name, *name);
    }
  }
  return renaming;
}

std::optional<std::string> fold_consistency(std::span<const GroupRenaming> renamings,
                                            std::span<const int> representative_of) {
  std::unordered_map<std::string, int> ids;
  auto id_of = [&](const std::string& name) {
    return ids.emplace(name, static_cast<int>(ids.size())).first->second;
  };
  std::vector<std::vector<std::pair<int, int>>> signature;  // by group id: (rep(m), phi_m(G))
  std::vector<std::pair<int, int>> correspondences;         // (G, phi_c(G)) for every c
  std::vector<std::string> names;
  for (const GroupRenaming& renaming : renamings) {
    const int representative = representative_of[renaming.rank];
    for (const auto& [own, theirs] : renaming.own_to_representative) {
      const int own_id = id_of(own);
      const int their_id = id_of(theirs);
      if (signature.size() < ids.size()) {
        signature.resize(ids.size());
        names.resize(ids.size());
      }
      names[own_id] = own;
      names[their_id] = theirs;
      signature[own_id].emplace_back(representative, their_id);
      correspondences.emplace_back(own_id, their_id);
    }
  }
  for (auto& members : signature)
    std::sort(members.begin(), members.end());
  std::sort(correspondences.begin(), correspondences.end());
  correspondences.erase(std::unique(correspondences.begin(), correspondences.end()),
                        correspondences.end());
  for (const auto& [own, theirs] : correspondences) {
    if (own == theirs)  // the same group on both sides: nothing to compare
      continue;
    if (signature[own] != signature[theirs])
      return "group " + names[own] + " is not congruent with " + names[theirs] +
             " (its members fall into other classes or play other roles)";
  }
  return std::nullopt;
}

RankResult clone_result(const RankResult& representative, const GroupRenaming& renaming) {
  std::unordered_map<std::string, std::string> to_own;
  for (const auto& [own, theirs] : renaming.own_to_representative)
    to_own.emplace(theirs, own);
  RankResult result = representative;
  result.sim_rank = renaming.rank;
  result.groups.clear();
  for (const auto& [group, traffic] : representative.groups) {
    const auto found = to_own.find(group);
    result.groups.emplace(found == to_own.end() ? group : found->second, traffic);
  }
  for (TimelineSlice& slice : result.timeline) {
    const std::size_t hash = slice.collective_key.rfind('#');
    if (hash == std::string::npos)
      continue;
    const auto found = to_own.find(slice.collective_key.substr(0, hash));
    if (found != to_own.end())
      slice.collective_key = found->second + slice.collective_key.substr(hash);
  }
  return result;
}

}  // namespace perfsim::engine

#include "mpi_sim/engine/program_sharing.hpp"

#include <unordered_map>
#include <utility>

#include "mpi_sim/engine/bound_program.hpp"

namespace perfsim::engine {
namespace {

// The CommInfo fields a rank's collective shares with the other ranks of its role: the group
// it names, its peer and root are the rank's own (RankCollective carries them for a bound
// program).
bool same_message(const CommInfo& a, const CommInfo& b) {
  return a.kind == b.kind && a.group_size == b.group_size && a.dtype == b.dtype &&
         a.bytes_in == b.bytes_in && a.bytes_out == b.bytes_out &&
         a.in_split_elements == b.in_split_elements &&
         a.out_split_elements == b.out_split_elements && a.tag == b.tag &&
         a.match_tag == b.match_tag;
}

bool same_collective_op(const SimCollective& a, const SimCollective& b) {
  return same_message(a.comm, b.comm) && a.combine == b.combine && a.stream == b.stream &&
         a.produced_tensor_ids == b.produced_tensor_ids && a.seq == b.seq;
}

bool same_kernel_slot(const SimKernel& a, const SimKernel& b) {
  // A collective's slot carries its rank's duration; the traversal reads the collective's.
  return a.name == b.name && a.stream == b.stream && a.category == b.category &&
         (a.is_collective || a.duration_us == b.duration_us) && a.launch_api == b.launch_api &&
         a.is_collective == b.is_collective && a.host_waits == b.host_waits &&
         a.recorded_launch_offset_us == b.recorded_launch_offset_us &&
         a.recorded_launch_us == b.recorded_launch_us;
}

bool same_op(const SimOp& a, const SimOp& b) {
  if (a.collective_index != b.collective_index || a.name != b.name || a.phase != b.phase ||
      a.waits_for_communication != b.waits_for_communication ||
      a.waits_for_seq != b.waits_for_seq || a.host_sync != b.host_sync ||
      a.queued_before_trace != b.queued_before_trace ||
      a.continues_previous != b.continues_previous || a.continued_by_next != b.continued_by_next ||
      a.measured_start_us != b.measured_start_us ||
      a.consumed_tensor_ids != b.consumed_tensor_ids || a.kernels.size() != b.kernels.size())
    return false;
  // Recorded host timing is each rank's own profile: such ranks are not shared.
  if (a.recorded_host != nullptr || b.recorded_host != nullptr)
    return false;
  if ((a.collective == nullptr) != (b.collective == nullptr))
    return false;
  if (a.collective != nullptr && !same_collective_op(*a.collective, *b.collective))
    return false;
  for (std::size_t i = 0; i < a.kernels.size(); ++i) {
    if (!same_kernel_slot(a.kernels[i], b.kernels[i]))
      return false;
  }
  return true;
}

bool same_steps(const std::vector<ProgramStep>& a, const std::vector<ProgramStep>& b) {
  if (a.size() != b.size())
    return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const StepSpan& x = a[i].label;
    const StepSpan& y = b[i].label;
    if (a[i].first_op != b[i].first_op || a[i].end_op != b[i].end_op || x.phase != y.phase ||
        x.micro_batch != y.micro_batch || x.chunk != y.chunk || x.start_us != y.start_us ||
        x.end_us != y.end_us)
      return false;
  }
  return true;
}

bool same_coverage(const ProgramCoverage& a, const ProgramCoverage& b) {
  return a.top_level_ops == b.top_level_ops && a.ops_without_kernels == b.ops_without_kernels &&
         a.kernels == b.kernels && a.collectives == b.collectives &&
         a.collectives_without_size == b.collectives_without_size &&
         a.comm_kernels_without_collective == b.comm_kernels_without_collective &&
         a.collectives_of_unlisted_groups == b.collectives_of_unlisted_groups &&
         a.unmodelled_ops == b.unmodelled_ops;
}

// Every collective of `bound` as the traversal reads it equals the one `own` compiled.
bool binds_exactly(const RankProgram& bound, const RankProgram& own) {
  for (std::size_t i = 0; i < own.ops.size(); ++i) {
    if (own.ops[i].collective == nullptr)
      continue;
    const RankCollective theirs = own.collective_of(own.ops[i]);
    const RankCollective mine = bound.collective_of(bound.ops[i]);
    if (mine.group != theirs.group || !(mine.members == theirs.members) ||
        mine.index_in_group != theirs.index_in_group || mine.duration_us != theirs.duration_us)
      return false;
  }
  return true;
}

}  // namespace

bool same_ops_but_groups(const RankProgram& a, const RankProgram& b) {
  if (a.binding != nullptr || b.binding != nullptr || a.start_us != b.start_us ||
      a.world_size != b.world_size || a.ops.size() != b.ops.size() ||
      !same_coverage(a.coverage, b.coverage) || !same_steps(a.steps, b.steps))
    return false;
  if (a.ops.shares_with(b.ops))
    return true;
  for (std::size_t i = 0; i < a.ops.size(); ++i) {
    if (a.ops.trace_position(i) != b.ops.trace_position(i) || !same_op(a.ops[i], b.ops[i]))
      return false;
  }
  return true;
}

MemberList ProgramSharing::intern(const MemberList& members) {
  return member_lists_.try_emplace(members.ranks(), members).first->second;
}

RankProgram ProgramSharing::share(RankProgram own) {
  const RankProgram* match = nullptr;
  for (const RankProgram& candidate : templates_) {
    if (same_ops_but_groups(candidate, own)) {
      match = &candidate;
      break;
    }
  }
  if (match == nullptr) {
    if (own.binding == nullptr) {
      // Its member lists serve the ranks bound to it later.
      for (const SimOp& op : own.ops) {
        if (op.collective != nullptr)
          intern(op.collective->members);
      }
      // The most recent few: ranks that repeat each other do so in runs, and ranks that never
      // match (recorded profiles) must not make every later rank compare against them all.
      if (templates_.size() == kTemplates)
        templates_.erase(templates_.begin());
      templates_.push_back(own);
    }
    return own;
  }
  // One role per distinct (group, duration) of the rank's collectives, in order of appearance.
  std::vector<BoundGroup> roles;
  std::unordered_map<std::string, std::vector<std::uint32_t>> roles_of_group;
  auto role_of = std::make_shared<std::vector<std::uint32_t>>(own.coverage.collectives);
  for (const SimOp& op : own.ops) {
    if (op.collective == nullptr)
      continue;
    const SimCollective& collective = *op.collective;
    std::vector<std::uint32_t>& candidates = roles_of_group[collective.group];
    std::uint32_t role = static_cast<std::uint32_t>(roles.size());
    for (std::uint32_t candidate : candidates) {
      if (roles[candidate].duration_us == collective.duration_us &&
          roles[candidate].members == collective.members) {
        role = candidate;
        break;
      }
    }
    if (role == roles.size()) {
      roles.push_back({collective.group, intern(collective.members), collective.duration_us});
      candidates.push_back(role);
    }
    if (op.collective_index >= role_of->size())
      return own;  // not numbered as build_rank_program numbers: keep it whole
    (*role_of)[op.collective_index] = role;
  }
  std::shared_ptr<const std::vector<std::uint32_t>> shared_role_of =
      last_role_of_ != nullptr && *last_role_of_ == *role_of ? last_role_of_ : std::move(role_of);
  RankProgram bound = bind_collectives(*match, own.sim_rank, own.source, std::move(roles),
                                       shared_role_of, last_indices_);
  if (!binds_exactly(bound, own))
    return own;
  last_role_of_ = std::move(shared_role_of);
  last_indices_ = bound.binding->index_in_group;
  ++shared_;
  return bound;
}

}  // namespace perfsim::engine

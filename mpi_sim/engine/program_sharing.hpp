#pragma once
// Shares compiled ops between ranks whose programs differ only in their collectives' groups,
// found by comparing the built programs rather than by knowing the workload: the ranks of a
// synthetic benchmark, or any trace-driven run whose ranks repeat one another. A rank that
// matches an earlier rank's program keeps that program's ops (SimOpList) and a
// CollectiveBinding of its own (bound_program.hpp), a few hundred bytes instead of a few
// hundred bytes per op; its member lists are interned across ranks. Each binding is checked
// collective by collective against the rank's own program before that program is dropped, so
// what the traversal reads (collective_of) is exactly what the rank compiled.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "mpi_sim/engine/rank_program.hpp"

namespace perfsim::engine {

// True when `a` and `b` run the same ops and differ at most in their collectives' group,
// members, index in group, duration and the process group, peer and root their CommInfo names.
bool same_ops_but_groups(const RankProgram& a, const RankProgram& b);

class ProgramSharing {
 public:
  // `own` as built from the rank's trace; returns it bound to an earlier template's ops when
  // they match (the same program as far as the traversal reads it), else `own` itself, which
  // becomes a template for later ranks.
  RankProgram share(RankProgram own);
  // Programs returned bound to another rank's ops.
  std::size_t shared() const { return shared_; }

 private:
  MemberList intern(const MemberList& members);
  static constexpr std::size_t kTemplates = 4;
  std::vector<RankProgram> templates_;  // unbound; their ops are shared, so copies are cheap
  std::map<std::vector<int>, MemberList> member_lists_;
  // The last binding's lists, shared by the next rank when it agrees.
  std::shared_ptr<const std::vector<std::uint32_t>> last_role_of_;
  std::shared_ptr<const std::vector<std::uint32_t>> last_indices_;
  std::size_t shared_ = 0;
};

}  // namespace perfsim::engine

#pragma once
// Exact folding of a simulated world: ranks fall into classes, one representative of each is
// simulated, and every other rank's result is its representative's with its own group names.
// Nothing is assumed: a rank joins its representative's class only when its program is the
// representative's op for op (names, kernels, durations, streams, dependencies, collective
// kinds, sizes and durations) up to a renaming of process groups, with every group member and
// peer in the class of the corresponding member of the representative's group.
//
// Why the results are then identical (with FoldedClockSync): a collective starts at the
// latest ready time of its members and lasts the min/max of their identical candidates. Let
// phi_m map the groups of rank m to those of its representative rep(m). When every group G
// has the same member signature {(rep(m), phi_m(G)) : m in G} as phi_c(G) for each of its
// members c (fold_consistency checks this), induction over collectives in time order shows
// that each rank's k-th collective on G is ready, starts and ends exactly when rep(c)'s k-th
// collective on phi_c(G) does; FoldedClockSync resolves a representative's collective on G
// from the posts of rep(m) on (phi_m(G), k) for every member m, i.e. from the same numbers.
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "mpi_sim/engine/rank_program.hpp"
#include "perfsim/rank_result.hpp"

namespace perfsim::engine {

// A rank's groups and the representative's group each corresponds to (own name, its name).
struct GroupRenaming {
  int rank = 0;
  std::vector<std::pair<std::string, std::string>> own_to_representative;
};

// Compares `program` with its representative's. `representative_of[r]` is the class of every
// rank. Returns the renaming, or the first difference (for the "falls back because" line).
struct ProgramComparison {
  std::optional<GroupRenaming> renaming;
  std::string difference;
};
ProgramComparison compare_with_representative(const RankProgram& representative,
                                              const RankProgram& program,
                                              std::span<const int> representative_of);

// The identity renaming of a representative (every group it posts on).
GroupRenaming identity_renaming(const RankProgram& representative);

// Checks the member signatures of every group across the renamings of all ranks (one per
// rank, representatives included). Returns the first violation, or nothing when folding is
// exact.
std::optional<std::string> fold_consistency(std::span<const GroupRenaming> renamings,
                                            std::span<const int> representative_of);

// `rank`'s result from its representative's: the same figures, its rank number, and its own
// group names (traffic per group, timeline collective keys).
RankResult clone_result(const RankResult& representative, const GroupRenaming& renaming);

}  // namespace perfsim::engine

#pragma once
// A rank's program made of ops compiled for another rank: the ranks of one LLM pipeline stage
// run one stage template and differ only in the groups their collectives run on (and so in
// those collectives' durations), so an unfolded run compiles each stage's ops once and gives
// every other rank of the stage the shared ops plus its own collective roles (RankProgram::
// binding), a few kB per rank instead of a few hundred bytes per op.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "mpi_sim/engine/rank_program.hpp"

namespace perfsim::engine {

// `compiled` (an unbound program) run by `sim_rank` under `source`: its k-th collective plays
// role `(*role_of)[k]`, whose group, members and duration for this rank are `roles`; the index
// of each collective in its group counts the earlier collectives on the same group, as
// build_rank_program counts them. `same_indices`, when it holds exactly the indices this rank
// gets, is shared instead of a new copy (ranks of a stage usually agree).
RankProgram bind_collectives(const RankProgram& compiled, int sim_rank, std::string source,
                             std::vector<BoundGroup> roles,
                             std::shared_ptr<const std::vector<std::uint32_t>> role_of,
                             std::shared_ptr<const std::vector<std::uint32_t>> same_indices = {});

}  // namespace perfsim::engine

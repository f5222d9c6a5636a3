#pragma once
// Before simulating, every group's members must agree on their collectives: same count, same
// order, same kind and (where it must agree) the same size. A mismatch would deadlock MPI or
// silently pair unrelated collectives, so it is reported up front, naming the rank, the group,
// the index and both sides.
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "mpi_sim/engine/rank_program.hpp"

namespace perfsim::engine {

struct RankSignatures {
  int sim_rank = 0;
  std::string source;
  std::vector<CollectiveSignature> signatures;
  // Group key -> members, as this rank's program names them.
  std::vector<std::pair<std::string, std::vector<int>>> groups;
};

RankSignatures rank_signatures(const RankProgram& program);

// The first mismatch found, as a one-paragraph message; nullopt when everything matches.
// `world_size` bounds member ranks; a member rank with no signatures entry is a mismatch too.
std::optional<std::string> find_collective_mismatch(std::span<const RankSignatures> ranks,
                                                    int world_size);

// Flat text form used to ship signatures between MPI processes.
std::string serialize_signatures(std::span<const RankSignatures> ranks);
std::vector<RankSignatures> deserialize_signatures(const std::string& text);

}  // namespace perfsim::engine

#pragma once
// Before simulating, every group's members must agree on their collectives: same count, same
// order, same kind and (where it must agree) the same size. A mismatch would deadlock MPI or
// silently pair unrelated collectives, so it is reported up front, naming the rank, the group,
// the index and both sides.
#include <array>
#include <cstdint>
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

// The check without gathering: each member of each group hashes what it runs there (its
// member list, then every collective's kind and size in order, sends and receives of a
// point-to-point channel taken from the first member's side) to h, and adds
// F(group, i, h) - F(group, i + 1 mod n, h) for its position i of n. Summed over every rank of
// every process (one MPI reduction), each group's terms telescope to zero when its members'
// hashes agree, and a member that differs, is missing or is not simulated leaves a nonzero sum
// (two independent 64-bit lanes: a mismatch goes unseen with probability about 2^-128).
// Everything find_collective_mismatch reports makes some member's hash differ, so a zero sum
// means it would find nothing; a nonzero one is confirmed and described by it.
using MatchResidue = std::array<std::uint64_t, 2>;
MatchResidue collective_match_residue(std::span<const RankSignatures> ranks);
// The same from the programs themselves, without copying their member lists.
MatchResidue collective_match_residue(std::span<const RankProgram> programs);

// Flat text form used to ship signatures between MPI processes.
std::string serialize_signatures(std::span<const RankSignatures> ranks);
std::vector<RankSignatures> deserialize_signatures(const std::string& text);

}  // namespace perfsim::engine

#include "mpi_sim/engine/collective_matching.hpp"

#include <cereal/archives/binary.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/utility.hpp>
#include <cereal/types/vector.hpp>

#include <algorithm>
#include <map>
#include <sstream>

#include "perfsim/error.hpp"

namespace perfsim::engine {

template <class Archive>
void serialize(Archive& archive, CollectiveSignature& signature) {
  archive(signature.group, signature.index_in_group, signature.kind, signature.bytes,
          signature.op_position, signature.op_name);
}

template <class Archive>
void serialize(Archive& archive, RankSignatures& rank) {
  archive(rank.sim_rank, rank.source, rank.signatures, rank.groups);
}

namespace {

std::string group_label(const std::string& group) {
  return group.empty() ? std::string("world") : group;
}

std::string describe(const RankSignatures& rank, const CollectiveSignature& signature) {
  std::string text = "rank " + std::to_string(rank.sim_rank) + " runs " +
                     std::string(collective_name(signature.kind));
  if (signature.bytes > 0)
    text += " of " + std::to_string(signature.bytes) + " bytes";
  text += " (op '" + signature.op_name + "' at position " + std::to_string(signature.op_position) +
          " of " + rank.source + ")";
  return text;
}

bool same_kind(CollectiveKind a, CollectiveKind b) {
  // A send on one side of a channel is a receive on the other.
  if (is_point_to_point(a) && is_point_to_point(b))
    return a != b;
  return a == b;
}

}  // namespace

RankSignatures rank_signatures(const RankProgram& program) {
  RankSignatures rank;
  rank.sim_rank = program.sim_rank;
  rank.source = program.source;
  rank.signatures = collective_signatures(program);
  std::map<std::string, std::vector<int>> groups;
  for (const SimOp& op : program.ops) {
    if (op.collective) {
      const RankCollective collective = program.collective_of(op);
      groups.emplace(collective.group, collective.members.ranks());
    }
  }
  rank.groups.assign(groups.begin(), groups.end());
  return rank;
}

std::optional<std::string> find_collective_mismatch(std::span<const RankSignatures> ranks,
                                                    int world_size) {
  std::map<int, const RankSignatures*> by_rank;
  for (const RankSignatures& rank : ranks)
    by_rank[rank.sim_rank] = &rank;

  // Group -> (members, per member its signatures in order).
  struct GroupView {
    std::vector<int> members;
    int named_by = -1;
    std::map<int, std::vector<const CollectiveSignature*>> sequences;
  };
  std::map<std::string, GroupView> groups;
  for (const RankSignatures& rank : ranks) {
    for (const auto& [group, members] : rank.groups) {
      GroupView& view = groups[group];
      if (view.named_by < 0) {
        view.members = members;
        view.named_by = rank.sim_rank;
      } else if (view.members != members) {
        return "process group '" + group_label(group) + "' has different members on rank " +
               std::to_string(view.named_by) + " and rank " + std::to_string(rank.sim_rank);
      }
    }
    for (const CollectiveSignature& signature : rank.signatures) {
      groups[signature.group].sequences[rank.sim_rank].push_back(&signature);
    }
  }

  for (const auto& [group, view] : groups) {
    for (int member : view.members) {
      if (member < 0 || member >= world_size) {
        return "process group '" + group_label(group) + "' names rank " + std::to_string(member) +
               ", outside the " + std::to_string(world_size) + " simulated ranks";
      }
      if (by_rank.count(member) == 0) {
        return "rank " + std::to_string(member) + " is a member of process group '" +
               group_label(group) + "' but no trace was given for it";
      }
    }
    const int reference_rank = view.members.front();
    static const std::vector<const CollectiveSignature*> kNone;
    auto sequence_of = [&](int rank) -> const std::vector<const CollectiveSignature*>& {
      auto found = view.sequences.find(rank);
      return found == view.sequences.end() ? kNone : found->second;
    };
    const auto& reference = sequence_of(reference_rank);
    for (int member : view.members) {
      if (member == reference_rank)
        continue;
      const auto& other = sequence_of(member);
      const std::size_t common = std::min(reference.size(), other.size());
      for (std::size_t i = 0; i < common; ++i) {
        const CollectiveSignature& a = *reference[i];
        const CollectiveSignature& b = *other[i];
        if (!same_kind(a.kind, b.kind) || a.bytes != b.bytes) {
          return "collective mismatch in process group '" + group_label(group) + "' at index " +
                 std::to_string(i) + ": " + describe(*by_rank.at(reference_rank), a) + ", but " +
                 describe(*by_rank.at(member), b);
        }
      }
      if (reference.size() != other.size()) {
        const bool reference_longer = reference.size() > other.size();
        const int longer = reference_longer ? reference_rank : member;
        const int shorter = reference_longer ? member : reference_rank;
        const auto& longer_sequence = reference_longer ? reference : other;
        return "collective count mismatch in process group '" + group_label(group) + "': rank " +
               std::to_string(longer) + " runs " + std::to_string(longer_sequence.size()) +
               " collectives, rank " + std::to_string(shorter) + " runs " + std::to_string(common) +
               "; the first unmatched, at index " + std::to_string(common) + ": " +
               describe(*by_rank.at(longer), *longer_sequence[common]) + ", but rank " +
               std::to_string(shorter) + " has none";
      }
    }
  }
  return std::nullopt;
}

std::string serialize_signatures(std::span<const RankSignatures> ranks) {
  std::ostringstream stream;
  {
    cereal::BinaryOutputArchive archive(stream);
    std::vector<RankSignatures> copy(ranks.begin(), ranks.end());
    archive(copy);
  }
  return std::move(stream).str();
}

std::vector<RankSignatures> deserialize_signatures(const std::string& text) {
  std::istringstream stream(text);
  std::vector<RankSignatures> ranks;
  try {
    cereal::BinaryInputArchive archive(stream);
    archive(ranks);
  } catch (const cereal::Exception& error) {
    throw RuntimeFailure(std::string("collective signatures could not be decoded: ") +
                         error.what());
  }
  return ranks;
}

}  // namespace perfsim::engine

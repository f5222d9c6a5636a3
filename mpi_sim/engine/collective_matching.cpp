#include "mpi_sim/engine/collective_matching.hpp"

#include <cereal/archives/binary.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/utility.hpp>
#include <cereal/types/vector.hpp>

#include <algorithm>
#include <map>
#include <sstream>
#include <string_view>
#include <unordered_map>

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

// splitmix64's finalizer: a bijection of 64-bit words that spreads every input bit.
std::uint64_t mix(std::uint64_t value) {
  value ^= value >> 30;
  value *= 0xbf58476d1ce4e5b9ULL;
  value ^= value >> 27;
  value *= 0x94d049bb133111ebULL;
  value ^= value >> 31;
  return value;
}

std::uint64_t combine(std::uint64_t state, std::uint64_t value) {
  return mix(state ^ mix(value + 0x9e3779b97f4a7c15ULL));
}

std::uint64_t hash_text(std::string_view text) {
  std::uint64_t hash = 0xcbf29ce484222325ULL;  // FNV-1a: the same on every process and build
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

// The kind as the group's first member would see it: a receive on the other side of a channel
// counts as the send it pairs with (same_kind's rule).
CollectiveKind kind_seen_from_first(CollectiveKind kind, bool first_member) {
  if (first_member || !is_point_to_point(kind))
    return kind;
  return kind == CollectiveKind::kSend ? CollectiveKind::kRecv : CollectiveKind::kSend;
}

// What the residue hashes of one collective (CollectiveSignature less what only a message
// names): its group, kind and compared size.
struct SignatureKey {
  std::string_view group;
  CollectiveKind kind;
  Bytes bytes;
};

// One rank's share of the residue. `groups`: each group key the rank uses -> its members.
void add_rank_residue(int sim_rank,
                      const std::unordered_map<std::string_view, const std::vector<int>*>& groups,
                      std::span<const SignatureKey> signatures, MatchResidue& residue) {
  constexpr std::uint64_t kLaneSeeds[2] = {0x243f6a8885a308d3ULL, 0x13198a2e03707344ULL};
  struct Sequence {
    const std::vector<int>* members = nullptr;
    std::uint64_t hash = 0;
    std::uint64_t count = 0;
  };
  std::unordered_map<std::string_view, Sequence> sequences;
  for (const auto& [group, members] : groups) {
    Sequence& sequence = sequences[group];
    sequence.members = members;
    sequence.hash = members->size();
    for (int member : *members)
      sequence.hash = combine(sequence.hash, static_cast<std::uint64_t>(member));
  }
  // Consecutive collectives mostly name the same group (often the same string): looked up
  // again only when the name changes (unordered_map nodes do not move).
  Sequence* last = nullptr;
  std::string_view last_group;
  for (const SignatureKey& signature : signatures) {
    if (last == nullptr || signature.group.data() != last_group.data() ||
        signature.group.size() != last_group.size()) {
      last = &sequences[signature.group];
      last_group = signature.group;
    }
    Sequence& sequence = *last;
    const bool first =
        sequence.members && !sequence.members->empty() && sequence.members->front() == sim_rank;
    const auto kind = kind_seen_from_first(signature.kind, first);
    sequence.hash = combine(sequence.hash, static_cast<std::uint64_t>(kind));
    sequence.hash = combine(sequence.hash, static_cast<std::uint64_t>(signature.bytes));
    ++sequence.count;
  }
  for (const auto& [group, sequence] : sequences) {
    if (!sequence.members)
      continue;
    const std::vector<int>& members = *sequence.members;
    const auto position = std::find(members.begin(), members.end(), sim_rank);
    if (position == members.end())
      continue;  // as find_collective_mismatch: only listed members are compared
    const auto index = static_cast<std::uint64_t>(position - members.begin());
    const std::uint64_t next = (index + 1) % members.size();
    const std::uint64_t hash = combine(sequence.hash, sequence.count);
    const std::uint64_t group_hash = hash_text(group);
    for (std::size_t lane = 0; lane < 2; ++lane) {
      const std::uint64_t keyed = combine(kLaneSeeds[lane], group_hash);
      // Unsigned arithmetic wraps: the sum is taken modulo 2^64.
      residue[lane] += combine(combine(keyed, index), hash);
      residue[lane] -= combine(combine(keyed, next), hash);
    }
  }
}

}  // namespace

MatchResidue collective_match_residue(std::span<const RankSignatures> ranks) {
  MatchResidue residue{0, 0};
  for (const RankSignatures& rank : ranks) {
    std::unordered_map<std::string_view, const std::vector<int>*> groups;
    for (const auto& [group, members] : rank.groups)
      groups.try_emplace(group, &members);
    std::vector<SignatureKey> keys;
    keys.reserve(rank.signatures.size());
    for (const CollectiveSignature& signature : rank.signatures)
      keys.push_back({signature.group, signature.kind, signature.bytes});
    add_rank_residue(rank.sim_rank, groups, keys, residue);
  }
  return residue;
}

MatchResidue collective_match_residue(std::span<const RankProgram> programs) {
  MatchResidue residue{0, 0};
  for (const RankProgram& program : programs) {
    // The programs' own member lists, not copies (a group of 1024 members on every rank).
    std::unordered_map<std::string_view, const std::vector<int>*> groups;
    for_each_collective_group(program, [&](const std::string& group, const MemberList& members) {
      groups.try_emplace(group, &members.ranks());
    });
    // What collective_signatures would give, without its op names and strings (the residue
    // hashes neither).
    std::vector<SignatureKey> keys;
    for (const SimOp& op : program.ops) {
      if (op.collective) {
        const RankCollective collective = program.collective_of(op);
        keys.push_back({collective.group, collective.shared.comm.kind,
                        signature_bytes(collective.shared.comm)});
      }
    }
    add_rank_residue(program.sim_rank, groups, keys, residue);
  }
  return residue;
}

RankSignatures rank_signatures(const RankProgram& program) {
  RankSignatures rank;
  rank.sim_rank = program.sim_rank;
  rank.source = program.source;
  rank.signatures = collective_signatures(program);
  std::map<std::string, std::vector<int>> groups;
  for (const SimOp& op : program.ops) {
    if (op.collective) {
      const RankCollective collective = program.collective_of(op);
      groups.try_emplace(collective.group, collective.members.ranks());
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

// The distributed collective check's hashes (collective_match_residue) against the exact check
// (find_collective_mismatch): zero summed over every rank exactly when nothing mismatches,
// whichever process holds which rank.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "mpi_sim/engine/collective_matching.hpp"
#include "mpi_sim/engine/measured_durations.hpp"
#include "support/trace_builder.hpp"

namespace perfsim::engine {
namespace {

CollectiveSignature signature(const std::string& group, std::size_t index, CollectiveKind kind,
                              Bytes bytes) {
  CollectiveSignature made;
  made.group = group;
  made.index_in_group = index;
  made.kind = kind;
  made.bytes = bytes;
  made.op_position = index;
  made.op_name = std::string(collective_name(kind));
  return made;
}

// Four ranks: a world all-reduce, a data-parallel pair {0, 2} / {1, 3} all-gather and a
// point-to-point channel 0 -> 1 (0 sends, 1 receives).
std::vector<RankSignatures> matching_world() {
  std::vector<RankSignatures> ranks(4);
  for (int rank = 0; rank < 4; ++rank) {
    RankSignatures& signatures = ranks[static_cast<std::size_t>(rank)];
    signatures.sim_rank = rank;
    signatures.source = "rank" + std::to_string(rank);
    const std::string pair = rank % 2 == 0 ? "dp0" : "dp1";
    signatures.groups = {{"", {0, 1, 2, 3}}, {pair, {rank % 2, rank % 2 + 2}}};
    signatures.signatures.push_back(signature("", 0, CollectiveKind::kAllReduce, 4096));
    signatures.signatures.push_back(signature(pair, 0, CollectiveKind::kAllGather, 1024));
    signatures.signatures.push_back(signature("", 1, CollectiveKind::kAllReduce, 8192));
  }
  ranks[0].groups.push_back({"p2p:0->1", {0, 1}});
  ranks[0].signatures.push_back(signature("p2p:0->1", 0, CollectiveKind::kSend, 0));
  ranks[1].groups.push_back({"p2p:0->1", {0, 1}});
  ranks[1].signatures.push_back(signature("p2p:0->1", 0, CollectiveKind::kRecv, 0));
  return ranks;
}

// The sum over processes holding ranks [0, split) and [split, 4), as MPI_SUM forms it.
MatchResidue summed_over_two_processes(const std::vector<RankSignatures>& ranks,
                                       std::size_t split) {
  const std::span<const RankSignatures> all(ranks);
  const MatchResidue first = collective_match_residue(all.first(split));
  const MatchResidue second = collective_match_residue(all.subspan(split));
  return {first[0] + second[0], first[1] + second[1]};
}

void expect_agreement(const std::vector<RankSignatures>& ranks, bool should_match) {
  EXPECT_EQ(find_collective_mismatch(ranks, 4).has_value(), !should_match);
  for (std::size_t split = 0; split <= ranks.size(); ++split) {
    const bool zero = summed_over_two_processes(ranks, split) == MatchResidue{0, 0};
    EXPECT_EQ(zero, should_match) << "ranks split at " << split;
  }
}

TEST(CollectiveMatchResidue, MatchingRanksSumToZeroOnAnySplit) {
  expect_agreement(matching_world(), true);
}

TEST(CollectiveMatchResidue, DifferentSizeIsSeen) {
  auto ranks = matching_world();
  ranks[2].signatures[2].bytes = 4096;
  expect_agreement(ranks, false);
}

TEST(CollectiveMatchResidue, DifferentKindIsSeen) {
  auto ranks = matching_world();
  ranks[3].signatures[1].kind = CollectiveKind::kReduceScatter;
  expect_agreement(ranks, false);
}

TEST(CollectiveMatchResidue, SwappedOrderIsSeen) {
  auto ranks = matching_world();
  std::swap(ranks[1].signatures[0].bytes, ranks[1].signatures[2].bytes);
  expect_agreement(ranks, false);
}

TEST(CollectiveMatchResidue, MissingCollectiveIsSeen) {
  auto ranks = matching_world();
  ranks[3].signatures.pop_back();
  expect_agreement(ranks, false);
}

TEST(CollectiveMatchResidue, SendMatchesReceiveButNotSend) {
  auto ranks = matching_world();
  ranks[1].signatures.back().kind = CollectiveKind::kSend;
  expect_agreement(ranks, false);
}

TEST(CollectiveMatchResidue, OtherMemberListIsSeen) {
  auto ranks = matching_world();
  ranks[2].groups[0].second = {0, 1, 2};
  expect_agreement(ranks, false);
}

TEST(CollectiveMatchResidue, RankWithoutTraceIsSeen) {
  auto ranks = matching_world();
  ranks.pop_back();  // rank 3 is a member of the world and of dp1 but has no signatures
  EXPECT_TRUE(find_collective_mismatch(ranks, 4).has_value());
  EXPECT_NE(collective_match_residue(ranks), (MatchResidue{0, 0}));
}

// The residue MPI runs compute from the programs equals the one from their signatures.
TEST(CollectiveMatchResidue, ProgramsGiveTheSignaturesResidue) {
  const MeasuredKernelDurations kernels;
  const MeasuredCommDurations communication;
  for (const Bytes odd_size : {Bytes{1024}, Bytes{2048}}) {
    std::vector<RankProgram> programs;
    std::vector<RankSignatures> signatures;
    for (int rank = 0; rank < 4; ++rank) {
      testing::TraceBuilder builder(rank, 4);
      const std::string pair = rank % 2 == 0 ? "even" : "odd";
      builder.group(pair, {rank % 2, rank % 2 + 2});
      builder.collective(CollectiveKind::kAllReduce, 4096, 10);
      builder.collective(CollectiveKind::kAllGather, rank == 3 ? odd_size : 1024, 10, -1, pair);
      programs.push_back(
          build_rank_program(builder.build(), rank, 4, {&kernels, &communication, {}}));
      signatures.push_back(rank_signatures(programs.back()));
    }
    const MatchResidue from_programs = collective_match_residue(std::span(programs));
    EXPECT_EQ(from_programs, collective_match_residue(std::span(signatures)));
    EXPECT_EQ(from_programs == (MatchResidue{0, 0}), odd_size == 1024);
    EXPECT_EQ(find_collective_mismatch(signatures, 4).has_value(), odd_size != 1024);
  }
}

}  // namespace
}  // namespace perfsim::engine

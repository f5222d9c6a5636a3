// The sharders of seed 001 Table III on hand-built tables: the cost functions as the table
// defines them (size_greedy E, lookup_greedy L D, norm_lookup_greedy L / E,
// size_lookup_greedy L D log10 E), the greedy placement (largest cost first, onto the least
// loaded rank), the indexing sharders (naive idx % ngpus, random) and the per-rank memory cap.
#include <gtest/gtest.h>

#include <cmath>

#include "generators/dlrm/dlrm_sharders.hpp"
#include "perfsim/error.hpp"

namespace perfsim::generators::dlrm {
namespace {

// name, E, D, L
std::vector<EmbeddingTable> hand_built_tables() {
  return {{"t0", 1000, 16, 10},     {"t1", 100000, 16, 8}, {"t2", 10, 64, 2},
          {"t3", 1000000, 16, 0.5}, {"t4", 100, 32, 20},   {"t5", 5000, 16, 30}};
}

ShardingPlan shard(Sharder sharder, int ranks, Bytes cap = 0, std::uint64_t seed = 0) {
  return shard_tables(hand_built_tables(), sharder, {ranks, DType::kFloat32, cap, seed});
}

TEST(DlrmSharders, CostFunctionsOfTableThree) {
  const EmbeddingTable table{"x", 1000, 16, 10};
  EXPECT_DOUBLE_EQ(sharder_cost(Sharder::kSizeGreedy, table), 1000);
  EXPECT_DOUBLE_EQ(sharder_cost(Sharder::kLookupGreedy, table), 160);
  EXPECT_DOUBLE_EQ(sharder_cost(Sharder::kNormLookupGreedy, table), 0.01);
  EXPECT_DOUBLE_EQ(sharder_cost(Sharder::kSizeLookupGreedy, table), 480);  // 10 * 16 * log10(1000)
  EXPECT_THROW(sharder_cost(Sharder::kNaive, table), RuntimeFailure);
  ASSERT_EQ(all_sharders().size(), 6u);
  for (Sharder sharder : all_sharders())
    EXPECT_EQ(parse_sharder(sharder_name(sharder)), sharder);
  EXPECT_FALSE(parse_sharder("greedy").has_value());
}

TEST(DlrmSharders, NaiveIsIndexModuloRanks) {
  EXPECT_EQ(shard(Sharder::kNaive, 3).rank_of_table, (std::vector<int>{0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(shard(Sharder::kNaive, 4).rank_of_table, (std::vector<int>{0, 1, 2, 3, 0, 1}));
}

// Costs E = [1000, 1e5, 10, 1e6, 100, 5000]: t3 -> r0, t1 -> r1, t5 -> r2, then every other
// table goes to r2, the least loaded (6000 < 1e5 < 1e6).
TEST(DlrmSharders, SizeGreedyBalancesRows) {
  EXPECT_EQ(shard(Sharder::kSizeGreedy, 3).rank_of_table, (std::vector<int>{2, 1, 2, 0, 2, 2}));
}

// Costs L D = [160, 128, 128, 8, 640, 480]: t4 -> r0 (640), t5 -> r1 (480), t0 -> r2 (160),
// t1 (tie with t2, larger) -> r2 (288), t2 -> r2 (416), t3 -> r2 (424).
TEST(DlrmSharders, LookupGreedyBalancesLookupsTimesDim) {
  EXPECT_EQ(shard(Sharder::kLookupGreedy, 3).rank_of_table, (std::vector<int>{2, 2, 2, 2, 0, 1}));
}

// Costs L / E = [0.01, 8e-5, 0.2, 5e-7, 0.2, 0.006]: t4 (tie with t2, larger) -> r0, t2 -> r1,
// t0 -> r2, t5 -> r2 (0.016), t1 -> r2, t3 -> r2.
TEST(DlrmSharders, NormLookupGreedyBalancesLookupsPerRow) {
  EXPECT_EQ(shard(Sharder::kNormLookupGreedy, 3).rank_of_table,
            (std::vector<int>{2, 2, 1, 2, 0, 2}));
}

// Costs L D log10 E = [480, 640, 128, 48, 1280, 1775.5]: t5 -> r0, t4 -> r1, t1 -> r2 (640),
// t0 -> r2 (1120), t2 -> r2 (1248), t3 -> r2 (1296 > 1280 but r2 was the least loaded).
TEST(DlrmSharders, SizeLookupGreedyWeighsLookupsByLogRows) {
  const ShardingPlan plan = shard(Sharder::kSizeLookupGreedy, 3);
  EXPECT_EQ(plan.rank_of_table, (std::vector<int>{2, 2, 2, 2, 1, 0}));
  EXPECT_EQ(plan.tables_of_rank[2], (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(plan.bytes_of_rank[0], 5000 * 16 * 4);
}

TEST(DlrmSharders, RandomIsSeededAndPlacesEveryTable) {
  const ShardingPlan a = shard(Sharder::kRandom, 3, 0, 42);
  const ShardingPlan b = shard(Sharder::kRandom, 3, 0, 42);
  EXPECT_EQ(a.rank_of_table, b.rank_of_table);
  std::vector<EmbeddingTable> many(300, EmbeddingTable{"t", 10, 4, 1});
  const ShardingPlan spread = shard_tables(many, Sharder::kRandom, {3, DType::kFloat32, 0, 7});
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_GT(spread.tables_of_rank[rank].size(), 70u) << "rank " << rank;
  }
  const ShardingPlan other = shard_tables(many, Sharder::kRandom, {3, DType::kFloat32, 0, 8});
  EXPECT_NE(spread.rank_of_table, other.rank_of_table);
}

// Bytes (fp32): t0 64 kB, t1 6.4 MB, t2 2.56 kB, t3 64 MB, t4 12.8 kB, t5 320 kB.
TEST(DlrmSharders, MemoryCapMovesTablesAndNamesOneThatFitsNowhere) {
  const Bytes t3_bytes = 1'000'000LL * 16 * 4;
  // Rank 0 (t0) and rank 1 (t1) cannot take t3 next to what they hold; rank 2 (t2) can.
  // Then t4 -> 4 % 3 = r1, t5 -> r2 is full -> r0.
  const Bytes cap = t3_bytes + 64'000 - 1;
  const ShardingPlan naive = shard(Sharder::kNaive, 3, cap);
  EXPECT_EQ(naive.rank_of_table, (std::vector<int>{0, 1, 2, 2, 1, 0}));
  for (Bytes bytes : naive.bytes_of_rank)
    EXPECT_LE(bytes, cap);
  for (Sharder sharder : all_sharders()) {
    try {
      shard(sharder, 3, t3_bytes - 1);
      ADD_FAILURE() << sharder_name(sharder) << " placed a table larger than the cap";
    } catch (const InputError& error) {
      EXPECT_EQ(error.location(), "/tables/3") << sharder_name(sharder);
      EXPECT_NE(error.problem().find("'t3'"), std::string::npos) << error.what();
    }
  }
}

// Lookup costs L D: a 40, b 20, c 4. Without a cap a -> r0, b -> r1, c -> r1 (20 < 40); with
// 90 kB per rank c does not fit next to b (80 kB + 16 kB) and goes to r0.
TEST(DlrmSharders, GreedySkipsTheCheapestRankWhenItIsFull) {
  const std::vector<EmbeddingTable> tables{
      {"a", 1000, 4, 10}, {"b", 5000, 4, 5}, {"c", 1000, 4, 1}};
  EXPECT_EQ(shard_tables(tables, Sharder::kLookupGreedy, {2, DType::kFloat32, 0, 0}).rank_of_table,
            (std::vector<int>{0, 1, 1}));
  const ShardingPlan capped =
      shard_tables(tables, Sharder::kLookupGreedy, {2, DType::kFloat32, 90'000, 0});
  EXPECT_EQ(capped.rank_of_table, (std::vector<int>{0, 1, 0}));
  EXPECT_EQ(capped.bytes_of_rank, (std::vector<Bytes>{32'000, 80'000}));
}

}  // namespace
}  // namespace perfsim::generators::dlrm

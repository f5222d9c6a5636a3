#pragma once
// The embedding-table sharders of seed 001 Table III: two indexing functions (naive, random)
// and four cost functions for a greedy placement (size_greedy E, lookup_greedy L D,
// norm_lookup_greedy L / E, size_lookup_greedy L D log10 E). Whole tables are placed
// (table-wise sharding), each rank holding at most `memory_cap_bytes` of embedding weights.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "generators/dlrm/dlrm_config.hpp"

namespace perfsim::generators::dlrm {

enum class Sharder {
  kNaive,
  kRandom,
  kSizeGreedy,
  kLookupGreedy,
  kNormLookupGreedy,
  kSizeLookupGreedy,
};

// The six, in Table III order.
std::vector<Sharder> all_sharders();
std::string_view sharder_name(Sharder sharder);
// Table III spellings ("size_lookup_greedy", ...); nullopt for an unknown name.
std::optional<Sharder> parse_sharder(std::string_view name);

// The greedy cost of a table (seed 001 Table III); throws for the indexing sharders.
double sharder_cost(Sharder sharder, const EmbeddingTable& table);

struct ShardingPlan {
  Sharder sharder = Sharder::kNaive;
  std::vector<int> rank_of_table;                // per table, in config order
  std::vector<std::vector<int>> tables_of_rank;  // table indices, ascending
  std::vector<Bytes> bytes_of_rank;              // embedding weight bytes per rank
};

struct ShardingOptions {
  int ranks = 0;
  DType dtype = DType::kFloat32;
  Bytes memory_cap_bytes = 0;  // 0 = no cap
  std::uint64_t seed = 0;      // random sharder
};

// Places every table. Indexing sharders take the indexed rank, or the next ranks in turn
// when it is full; greedy sharders take tables by decreasing cost (ties: larger table, then
// lower index) and give each to the rank with the least cost so far among those it fits on
// (ties: lowest rank). Throws InputError(`file`, "/tables/i", ...) naming a table that fits
// on no rank under the cap.
ShardingPlan shard_tables(const std::vector<EmbeddingTable>& tables, Sharder sharder,
                          const ShardingOptions& options, const std::string& file = "<config>");

}  // namespace perfsim::generators::dlrm

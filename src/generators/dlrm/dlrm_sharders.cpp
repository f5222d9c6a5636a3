#include "generators/dlrm/dlrm_sharders.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "generators/dlrm/dlrm_table_sampler.hpp"
#include "perfsim/error.hpp"

namespace perfsim::generators::dlrm {
namespace {

bool is_greedy(Sharder sharder) {
  return sharder != Sharder::kNaive && sharder != Sharder::kRandom;
}

std::string gigabytes(Bytes bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.3f GB", static_cast<double>(bytes) / 1e9);
  return text;
}

[[noreturn]] void fits_nowhere(const std::vector<EmbeddingTable>& tables, std::size_t index,
                               const ShardingOptions& options, const std::vector<Bytes>& used,
                               const std::string& file) {
  const Bytes size = table_bytes(tables[index], options.dtype);
  const Bytes most_free = options.memory_cap_bytes - *std::min_element(used.begin(), used.end());
  throw InputError(file, "/tables/" + std::to_string(index),
                   "table '" + tables[index].name + "' (" + gigabytes(size) +
                       ") fits on no rank under the memory cap of " +
                       gigabytes(options.memory_cap_bytes) +
                       " per rank (most free: " + gigabytes(most_free) + ")");
}

}  // namespace

std::vector<Sharder> all_sharders() {
  return {Sharder::kNaive,        Sharder::kRandom,           Sharder::kSizeGreedy,
          Sharder::kLookupGreedy, Sharder::kNormLookupGreedy, Sharder::kSizeLookupGreedy};
}

std::string_view sharder_name(Sharder sharder) {
  switch (sharder) {
    case Sharder::kNaive:
      return "naive";
    case Sharder::kRandom:
      return "random";
    case Sharder::kSizeGreedy:
      return "size_greedy";
    case Sharder::kLookupGreedy:
      return "lookup_greedy";
    case Sharder::kNormLookupGreedy:
      return "norm_lookup_greedy";
    case Sharder::kSizeLookupGreedy:
      return "size_lookup_greedy";
  }
  return "naive";
}

std::optional<Sharder> parse_sharder(std::string_view name) {
  for (Sharder sharder : all_sharders()) {
    if (sharder_name(sharder) == name)
      return sharder;
  }
  return std::nullopt;
}

double sharder_cost(Sharder sharder, const EmbeddingTable& table) {
  const double rows = static_cast<double>(table.rows);
  const double dim = static_cast<double>(table.dim);
  switch (sharder) {
    case Sharder::kSizeGreedy:
      return rows;
    case Sharder::kLookupGreedy:
      return table.pooling_factor * dim;
    case Sharder::kNormLookupGreedy:
      return table.pooling_factor / rows;
    case Sharder::kSizeLookupGreedy:
      return table.pooling_factor * dim * std::log10(rows);
    case Sharder::kNaive:
    case Sharder::kRandom:
      break;
  }
  throw RuntimeFailure("sharder_cost: " + std::string(sharder_name(sharder)) +
                       " is an indexing sharder, it has no cost function");
}

ShardingPlan shard_tables(const std::vector<EmbeddingTable>& tables, Sharder sharder,
                          const ShardingOptions& options, const std::string& file) {
  if (options.ranks <= 0)
    throw InputError(file, "/ranks", "sharding needs at least one rank");
  const int ranks = options.ranks;
  const bool capped = options.memory_cap_bytes > 0;
  ShardingPlan plan;
  plan.sharder = sharder;
  plan.rank_of_table.assign(tables.size(), -1);
  plan.tables_of_rank.assign(static_cast<std::size_t>(ranks), {});
  plan.bytes_of_rank.assign(static_cast<std::size_t>(ranks), 0);
  auto fits = [&](std::size_t table, int rank) {
    return !capped || plan.bytes_of_rank[rank] + table_bytes(tables[table], options.dtype) <=
                          options.memory_cap_bytes;
  };
  auto place = [&](std::size_t table, int rank) {
    plan.rank_of_table[table] = rank;
    plan.bytes_of_rank[rank] += table_bytes(tables[table], options.dtype);
  };

  if (!is_greedy(sharder)) {
    std::uint64_t state = options.seed;
    for (std::size_t t = 0; t < tables.size(); ++t) {
      // naive: x.idx % ngpus; random: random(ngpus) (seed 001 Table III).
      const int indexed = sharder == Sharder::kNaive
                              ? static_cast<int>(t % static_cast<std::size_t>(ranks))
                              : std::min(ranks - 1, static_cast<int>(next_unit(state) * ranks));
      int chosen = -1;
      for (int step = 0; step < ranks && chosen < 0; ++step) {
        if (fits(t, (indexed + step) % ranks))
          chosen = (indexed + step) % ranks;
      }
      if (chosen < 0)
        fits_nowhere(tables, t, options, plan.bytes_of_rank, file);
      place(t, chosen);
    }
  } else {
    std::vector<double> cost(tables.size());
    for (std::size_t t = 0; t < tables.size(); ++t)
      cost[t] = sharder_cost(sharder, tables[t]);
    std::vector<std::size_t> order(tables.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      if (cost[a] != cost[b])
        return cost[a] > cost[b];
      return tables[a].rows * tables[a].dim > tables[b].rows * tables[b].dim;
    });
    std::vector<double> load(static_cast<std::size_t>(ranks), 0.0);
    for (std::size_t t : order) {
      int chosen = -1;
      for (int rank = 0; rank < ranks; ++rank) {
        if (fits(t, rank) && (chosen < 0 || load[rank] < load[chosen]))
          chosen = rank;
      }
      if (chosen < 0)
        fits_nowhere(tables, t, options, plan.bytes_of_rank, file);
      load[chosen] += cost[t];
      place(t, chosen);
    }
  }
  for (std::size_t t = 0; t < tables.size(); ++t)
    plan.tables_of_rank[plan.rank_of_table[t]].push_back(static_cast<int>(t));
  return plan;
}

}  // namespace perfsim::generators::dlrm

#pragma once
// Index batches for an embedding-bag lookup that hit a requested reuse-factor histogram
// (seed 001 Sec. IV-C, Fig. 6; bins of kernels/reuse_factor.hpp: a row looked up c times
// falls in bin 0 for c = 0, bin b for 2^(b-1) <= c < 2^b, bin 16 for c >= 2^15).
//
// A request gives the share of the table's E rows per bin and the batch's lookups; the
// generator picks whole row counts per bin (each within one of share * E), gives every row a
// lookup count inside its bin so that the counts add up to the lookups, places the rows at
// random distinct ids and shuffles the lookups into B bags. The batch's histogram,
// kernels::reuse_factor_histogram(indices, E), is then the chosen counts / E exactly.
#include <array>
#include <cstdint>
#include <vector>

#include "kernels/reuse_factor.hpp"

namespace perfsim::microbench {

using ReuseBinCounts = std::array<std::int64_t, kernels::kReuseFactorBins>;

struct IndexBatchRequest {
  std::int64_t table_rows = 0;     // E
  std::int64_t batch_size = 0;     // B bags
  std::int64_t total_lookups = 0;  // B * L for a pooling factor L
  kernels::ReuseFactors shares{};  // requested histogram: shares of E per bin, summing to 1
  std::uint64_t seed = 1;
};

struct IndexBatch {
  std::vector<std::int64_t> indices;  // total_lookups row ids in [0, E)
  std::vector<std::int64_t> offsets;  // batch_size + 1 bag boundaries into indices
  ReuseBinCounts rows_per_bin{};      // the histogram realised, in rows
};

// Smallest and largest lookup count of a row in `bin` (bin 16's largest is unbounded:
// INT64_MAX).
std::int64_t bin_min_lookups(std::size_t bin);
std::int64_t bin_max_lookups(std::size_t bin);

// Whole rows per bin: each bin is floor or ceil of share * E, they sum to E, and the lookups
// they allow contain total_lookups (tried in this order: largest remainders, the remainders
// given to the highest bins, to the lowest bins). Throws InputError("<index batch request>",
// field or bin, problem) for shares outside [0, 1] or not summing to 1 (within 1e-6), a
// non-positive E or B, negative lookups, and for a histogram no batch of total_lookups can
// have, naming the range of lookups it allows.
ReuseBinCounts plan_reuse_bin_counts(const IndexBatchRequest& request);

// The batch for the request (same request and seed, same batch). Bags hold
// floor(total_lookups / B) or one more lookup. Throws as plan_reuse_bin_counts.
IndexBatch generate_index_batch(const IndexBatchRequest& request);

}  // namespace perfsim::microbench

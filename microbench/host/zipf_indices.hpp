#pragma once
// Lookups drawn from a Zipf law over the rows of a table: row r (0-based) is drawn with
// probability proportional to (r + 1)^-exponent; exponent 0 is uniform. Real embedding
// traffic is skewed like this; the embedding sweep uses the reuse-factor histograms of such
// draws as the targets that generate_index_batch then realises.
#include <cstdint>
#include <vector>

namespace perfsim::microbench {

// `count` row ids in [0, rows), by rejection-inversion sampling (constant memory, so tables of
// 10^8 rows cost nothing). Same seed, same draws. Throws InputError("<zipf indices>", ...)
// for rows <= 0, a negative count or a negative exponent.
std::vector<std::int64_t> zipf_indices(std::int64_t rows, std::int64_t count, double exponent,
                                       std::uint64_t seed);

}  // namespace perfsim::microbench

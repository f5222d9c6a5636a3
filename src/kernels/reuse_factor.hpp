#pragma once
// Reuse factors of an embedding lookup batch (seed 001 Sec. IV-C, Fig. 6): count how often
// each row of a table is looked up in the batch, then histogram those counts into 17 bins of
// power-of-two width, [0,1), [1,2), [2,4), ..., [2^14, 2^15), [2^15, inf), and normalize by
// the number of rows so that bin b is the probability that a row is hit that many times.
// Rows never looked up fall in bin 0. (Meta's DLRM dataset gives 17 bins; the last one is
// closed to infinity here so that no count is dropped.)
#include <array>
#include <cstdint>
#include <span>

namespace perfsim::kernels {

inline constexpr std::size_t kReuseFactorBins = 17;
using ReuseFactors = std::array<double, kReuseFactorBins>;

// Bin of a per-row lookup count: 0 -> 0, 1 -> 1, 2..3 -> 2, 4..7 -> 3, ..., >= 2^15 -> 16.
std::size_t reuse_factor_bin(std::int64_t lookups_of_row);

// indices: row ids of one table in one batch; table_rows: E. Throws InputError on an index
// outside [0, table_rows).
ReuseFactors reuse_factor_histogram(std::span<const std::int64_t> indices, std::int64_t table_rows);

}  // namespace perfsim::kernels

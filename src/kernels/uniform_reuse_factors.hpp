#pragma once
// The reuse-factor histogram (kernels/reuse_factor.hpp) to expect when a batch's indices are
// not known: the embedding MLP needs one, and traces carry tensor shapes, not indices. The
// assumption is that the N lookups of the batch fall on the E rows uniformly at random, so a
// row's lookup count is Binomial(N, 1/E), here its Poisson(N / E) limit. Small batches on large
// tables then put almost every row in bin 0 and the looked-up ones in bin 1 (no reuse);
// production data is skewed (seed 001 Fig. 7) and reuses more, so this default errs towards
// more DRAM traffic.
#include <cstdint>

#include "kernels/reuse_factor.hpp"

namespace perfsim::kernels {

// lookups: N = B x L on one table; table_rows: E. Throws RuntimeFailure unless E > 0, N >= 0.
ReuseFactors uniform_reuse_factors(double lookups, std::int64_t table_rows);

}  // namespace perfsim::kernels

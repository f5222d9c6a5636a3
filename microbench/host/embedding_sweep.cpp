#include "microbench/host/embedding_sweep.hpp"

#include <map>
#include <string>
#include <tuple>

#include "microbench/host/require_positive.hpp"
#include "microbench/host/zipf_indices.hpp"
#include "perfsim/error.hpp"

namespace perfsim::microbench {
namespace {

constexpr char kEmbeddingSweepSource[] = "<embedding sweep>";

}  // namespace

Bytes embedding_footprint_bytes(const EmbeddingSweepPoint& point) {
  const Bytes element = element_bytes(point.dtype);
  const Bytes weights = point.tables * point.table_rows * point.dim * element;
  const Bytes indices = point.tables * point.batch_size * point.pooling * Bytes{8};
  const Bytes offsets = point.tables * (point.batch_size + 1) * Bytes{8};
  const Bytes outputs = point.tables * point.batch_size * point.dim * element;
  return 2 * weights + indices + offsets + outputs;
}

std::vector<EmbeddingSweepPoint> embedding_sweep(const EmbeddingSweepOptions& options) {
  require_positive(options.batch_sizes, kEmbeddingSweepSource, "batch_sizes");
  require_positive(options.table_rows, kEmbeddingSweepSource, "table_rows");
  require_positive(options.poolings, kEmbeddingSweepSource, "poolings");
  require_positive(options.dims, kEmbeddingSweepSource, "dims");
  if (options.tables < 1)
    throw InputError(kEmbeddingSweepSource, "tables", "must be at least 1");
  if (options.dtypes.empty())
    throw InputError(kEmbeddingSweepSource, "dtypes", "is empty");
  if (options.zipf_exponents.empty())
    throw InputError(kEmbeddingSweepSource, "zipf_exponents", "is empty");
  for (double exponent : options.zipf_exponents) {
    if (!(exponent >= 0))
      throw InputError(kEmbeddingSweepSource, "zipf_exponents", "must not be negative");
  }
  std::vector<EmbeddingSweepPoint> points;
  // A target depends on (B, E, L, skew) only: drawn once, shared by every D and dtype.
  std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t, std::size_t>, kernels::ReuseFactors>
      targets;
  std::uint64_t point_seed = options.seed;
  for (DType dtype : options.dtypes)
    for (std::int64_t b : options.batch_sizes)
      for (std::int64_t e : options.table_rows)
        for (std::int64_t l : options.poolings)
          for (std::int64_t d : options.dims)
            for (std::size_t skew = 0; skew < options.zipf_exponents.size(); ++skew) {
              const double exponent = options.zipf_exponents[skew];
              EmbeddingSweepPoint point{b, e, l, d, options.tables, dtype, exponent, {}, 0};
              point.seed = ++point_seed;
              if (embedding_footprint_bytes(point) > options.memory_cap_bytes)
                continue;
              const auto key = std::make_tuple(b, e, l, skew);
              auto it = targets.find(key);
              if (it == targets.end()) {
                const std::uint64_t target_seed =
                    options.seed ^ (0x9E3779B97F4A7C15ULL * (targets.size() + 1));
                it = targets
                         .emplace(key, kernels::reuse_factor_histogram(
                                           zipf_indices(e, b * l, exponent, target_seed), e))
                         .first;
              }
              point.target = it->second;
              points.push_back(point);
            }
  return points;
}

}  // namespace perfsim::microbench

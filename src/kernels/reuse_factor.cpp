#include "kernels/reuse_factor.hpp"

#include <bit>
#include <string>
#include <unordered_map>

#include "perfsim/error.hpp"

namespace perfsim::kernels {

std::size_t reuse_factor_bin(std::int64_t lookups_of_row) {
  if (lookups_of_row <= 0)
    return 0;
  const auto width =
      static_cast<std::size_t>(std::bit_width(static_cast<std::uint64_t>(lookups_of_row)));
  return width < kReuseFactorBins ? width : kReuseFactorBins - 1;
}

ReuseFactors reuse_factor_histogram(std::span<const std::int64_t> indices,
                                    std::int64_t table_rows) {
  if (table_rows <= 0)
    throw InputError("<embedding batch>", "table_rows", "must be positive");
  std::unordered_map<std::int64_t, std::int64_t> lookups_per_row;
  for (std::size_t i = 0; i < indices.size(); ++i) {
    if (indices[i] < 0 || indices[i] >= table_rows)
      throw InputError("<embedding batch>", "index " + std::to_string(i),
                       "row " + std::to_string(indices[i]) + " outside a table of " +
                           std::to_string(table_rows) + " rows");
    ++lookups_per_row[indices[i]];
  }
  ReuseFactors histogram{};
  histogram[0] =
      static_cast<double>(table_rows - static_cast<std::int64_t>(lookups_per_row.size()));
  for (const auto& [row, lookups] : lookups_per_row)
    histogram[reuse_factor_bin(lookups)] += 1;
  for (double& bin : histogram)
    bin /= static_cast<double>(table_rows);
  return histogram;
}

}  // namespace perfsim::kernels

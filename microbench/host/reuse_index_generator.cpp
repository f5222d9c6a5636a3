#include "microbench/host/reuse_index_generator.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <unordered_set>

#include "microbench/host/sweep_random.hpp"
#include "perfsim/error.hpp"

namespace perfsim::microbench {
namespace {

constexpr char kIndexBatchSource[] = "<index batch request>";
constexpr double kShareSumTolerance = 1e-6;
constexpr std::int64_t kUnbounded = std::numeric_limits<std::int64_t>::max();
constexpr std::size_t kBins = kernels::kReuseFactorBins;

void validate(const IndexBatchRequest& request) {
  if (request.table_rows <= 0)
    throw InputError(kIndexBatchSource, "table_rows", "must be positive");
  if (request.batch_size <= 0)
    throw InputError(kIndexBatchSource, "batch_size", "must be positive");
  if (request.total_lookups < 0)
    throw InputError(kIndexBatchSource, "total_lookups", "must not be negative");
  double sum = 0;
  for (std::size_t bin = 0; bin < kBins; ++bin) {
    const double share = request.shares[bin];
    if (!(share >= 0 && share <= 1))
      throw InputError(kIndexBatchSource, "bin " + std::to_string(bin),
                       "a share must lie in [0, 1], got " + std::to_string(share));
    sum += share;
  }
  if (std::abs(sum - 1) > kShareSumTolerance)
    throw InputError(kIndexBatchSource, "shares", "sum to " + std::to_string(sum) + ", not 1");
}

struct LookupRange {
  std::int64_t min = 0;
  std::int64_t max = 0;  // kUnbounded when bin 16 holds a row
};

LookupRange lookup_range(const ReuseBinCounts& counts) {
  LookupRange range;
  for (std::size_t bin = 0; bin < kBins; ++bin) {
    range.min += counts[bin] * bin_min_lookups(bin);
    if (counts[bin] > 0 && bin_max_lookups(bin) == kUnbounded)
      range.max = kUnbounded;
    else if (range.max != kUnbounded)
      range.max += counts[bin] * bin_max_lookups(bin);
  }
  return range;
}

// floor(share * E) per bin, plus one for the first `extra` bins of `order`.
ReuseBinCounts rounded_counts(const std::array<std::int64_t, kBins>& floors,
                              const std::vector<std::size_t>& order, std::int64_t extra) {
  ReuseBinCounts counts = floors;
  for (std::size_t i = 0; i < order.size() && extra > 0; ++i, --extra)
    ++counts[order[i]];
  return counts;
}

std::string describe(const LookupRange& range) {
  return "[" + std::to_string(range.min) + ", " +
         (range.max == kUnbounded ? std::string("unbounded") : std::to_string(range.max)) + "]";
}

// Distinct ids in [0, rows), in random order (Floyd's sampling: memory grows with `count`,
// not with the table).
std::vector<std::int64_t> distinct_rows(std::int64_t count, std::int64_t rows,
                                        SweepRandom& random) {
  std::unordered_set<std::int64_t> chosen;
  std::vector<std::int64_t> ids;
  ids.reserve(static_cast<std::size_t>(count));
  for (std::int64_t j = rows - count; j < rows; ++j) {
    const std::int64_t candidate = random.uniform_int(0, j);
    const std::int64_t id = chosen.contains(candidate) ? j : candidate;
    chosen.insert(id);
    ids.push_back(id);
  }
  random.shuffle(std::span<std::int64_t>(ids));
  return ids;
}

}  // namespace

std::int64_t bin_min_lookups(std::size_t bin) {
  return bin == 0 ? 0 : std::int64_t{1} << (bin - 1);
}

std::int64_t bin_max_lookups(std::size_t bin) {
  if (bin == 0)
    return 0;
  return bin + 1 < kBins ? (std::int64_t{1} << bin) - 1 : kUnbounded;
}

ReuseBinCounts plan_reuse_bin_counts(const IndexBatchRequest& request) {
  validate(request);
  const double share_sum = std::accumulate(request.shares.begin(), request.shares.end(), 0.0);
  std::array<std::int64_t, kBins> floors{};
  std::array<double, kBins> remainders{};
  std::int64_t floor_sum = 0;
  for (std::size_t bin = 0; bin < kBins; ++bin) {
    const double exact = request.shares[bin] / share_sum * static_cast<double>(request.table_rows);
    floors[bin] = static_cast<std::int64_t>(std::floor(exact));
    remainders[bin] = exact - static_cast<double>(floors[bin]);
    floor_sum += floors[bin];
  }
  const std::int64_t extra = request.table_rows - floor_sum;
  // Bins with a fractional part may round up; the others only if rounding error left more
  // rows to place than fractional bins (then they are off by one count, still within one).
  std::vector<std::size_t> fractional, whole;
  for (std::size_t bin = 0; bin < kBins; ++bin)
    (remainders[bin] > 1e-9 ? fractional : whole).push_back(bin);
  std::vector<std::size_t> by_remainder = fractional;
  std::stable_sort(by_remainder.begin(), by_remainder.end(),
                   [&](std::size_t a, std::size_t b) { return remainders[a] > remainders[b]; });
  std::vector<std::size_t> highest(fractional.rbegin(), fractional.rend());
  std::vector<std::size_t> lowest = fractional;
  for (auto* order : {&by_remainder, &highest, &lowest})
    order->insert(order->end(), whole.begin(), whole.end());

  for (const auto* order : {&by_remainder, &highest, &lowest}) {
    const ReuseBinCounts counts = rounded_counts(floors, *order, extra);
    const LookupRange range = lookup_range(counts);
    if (request.total_lookups >= range.min && request.total_lookups <= range.max)
      return counts;
  }
  LookupRange widest{lookup_range(rounded_counts(floors, lowest, extra)).min,
                     lookup_range(rounded_counts(floors, highest, extra)).max};
  throw InputError(kIndexBatchSource, "total_lookups",
                   "a batch with the requested reuse-factor histogram on " +
                       std::to_string(request.table_rows) + " rows makes " + describe(widest) +
                       " lookups, but the request asks for " +
                       std::to_string(request.total_lookups));
}

IndexBatch generate_index_batch(const IndexBatchRequest& request) {
  const ReuseBinCounts counts = plan_reuse_bin_counts(request);
  SweepRandom random(request.seed);

  // Every looked-up row starts at its bin's least count; the remaining lookups are poured
  // over the rows in order of growing headroom, each taking an equal share of what is left
  // (water filling), which places all of them because the plan's range holds the total.
  struct Row {
    std::int64_t lookups = 0;
    std::int64_t headroom = 0;
  };
  std::vector<Row> rows;
  std::int64_t remaining = request.total_lookups;
  for (std::size_t bin = 1; bin < kBins; ++bin) {
    for (std::int64_t i = 0; i < counts[bin]; ++i) {
      const std::int64_t least = bin_min_lookups(bin);
      const std::int64_t most = bin_max_lookups(bin);
      rows.push_back({least, most == kUnbounded ? kUnbounded : most - least});
      remaining -= least;
    }
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const Row& a, const Row& b) { return a.headroom < b.headroom; });
  for (std::size_t i = 0; i < rows.size() && remaining > 0; ++i) {
    const auto rows_left = static_cast<std::int64_t>(rows.size() - i);
    const std::int64_t fair_share = (remaining + rows_left - 1) / rows_left;
    const std::int64_t added = std::min(rows[i].headroom, fair_share);
    rows[i].lookups += added;
    remaining -= added;
  }
  if (remaining != 0)
    throw RuntimeFailure("generate_index_batch: " + std::to_string(remaining) +
                         " lookups left after filling the planned rows");

  IndexBatch batch;
  batch.rows_per_bin = counts;
  const std::vector<std::int64_t> ids =
      distinct_rows(static_cast<std::int64_t>(rows.size()), request.table_rows, random);
  batch.indices.reserve(static_cast<std::size_t>(request.total_lookups));
  for (std::size_t i = 0; i < rows.size(); ++i)
    batch.indices.insert(batch.indices.end(), static_cast<std::size_t>(rows[i].lookups), ids[i]);
  random.shuffle(std::span<std::int64_t>(batch.indices));
  for (std::int64_t bag = 0; bag <= request.batch_size; ++bag)
    batch.offsets.push_back(bag * request.total_lookups / request.batch_size);
  return batch;
}

}  // namespace perfsim::microbench

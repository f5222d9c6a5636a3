#pragma once
// Embedding tables sampled like the tasks of seed 001 Sec. V-B1: pooling factors from a
// histogram shaped like seed 001 Fig. 3 (average L of the tables of Meta's open-source DLRM
// dataset), row counts log-uniform in a range. Deterministic for a seed on every platform
// (splitmix64 bits mapped to [0, 1) by hand, no std:: distributions).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "generators/dlrm/embedding_table.hpp"

namespace perfsim::generators::dlrm {

// Which year of the dataset the pooling factors resemble. Seed 001 Sec. III-A: 103 of 856
// tables (2021) and 166 of 788 tables (2022) are heavy (average L >= 20); the rest concentrate
// in [0, 10), especially [0, 1].
enum class PoolingProfile { kDlrm2021, kDlrm2022 };
std::string_view pooling_profile_name(PoolingProfile profile);

struct TableSamplerSpec {
  int count = 0;
  std::uint64_t seed = 0;
  std::int64_t dim = 0;
  std::int64_t rows_min = 1000;
  std::int64_t rows_max = 10'000'000;
  PoolingProfile profile = PoolingProfile::kDlrm2021;
  bool heavy_only = false;  // the "heavy tasks" of seed 001 Sec. V-B1: every table has L >= 20
};

// One histogram bin of average L: [low, high) drawn uniformly, chosen with `weight`.
struct PoolingBin {
  double low = 0;
  double high = 0;
  double weight = 0;
};
// The bins the sampler draws from (weights sum to 1).
std::vector<PoolingBin> pooling_histogram(PoolingProfile profile, bool heavy_only);

// Tables named "<prefix><i>".
std::vector<EmbeddingTable> sample_tables(const TableSamplerSpec& spec,
                                          const std::string& prefix = "t");

// A reproducible uniform draw in [0, 1) from a 64-bit generator state (splitmix64 step).
double next_unit(std::uint64_t& state);

}  // namespace perfsim::generators::dlrm

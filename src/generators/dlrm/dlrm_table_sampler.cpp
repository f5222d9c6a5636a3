#include "generators/dlrm/dlrm_table_sampler.hpp"

#include <cmath>

namespace perfsim::generators::dlrm {

std::string_view pooling_profile_name(PoolingProfile profile) {
  return profile == PoolingProfile::kDlrm2021 ? "dlrm-2021" : "dlrm-2022";
}

std::vector<PoolingBin> pooling_histogram(PoolingProfile profile, bool heavy_only) {
  // Heavy shares are the paper's counts (Sec. III-A). The split inside the light and heavy
  // ranges is an assumption read from the text of Fig. 3 ("concentrate in [0, 10), especially
  // [0, 1]", "some ... spreading to a few hundred"): the figure's bar heights are not in the
  // text we have.
  const double heavy = heavy_only                             ? 1.0
                       : profile == PoolingProfile::kDlrm2021 ? 103.0 / 856.0
                                                              : 166.0 / 788.0;
  const double light = 1.0 - heavy;
  std::vector<PoolingBin> bins;
  if (light > 0) {
    bins.push_back({0.0, 1.0, 0.50 * light});
    bins.push_back({1.0, 10.0, 0.38 * light});
    bins.push_back({10.0, 20.0, 0.12 * light});
  }
  bins.push_back({20.0, 50.0, 0.50 * heavy});
  bins.push_back({50.0, 100.0, 0.30 * heavy});
  bins.push_back({100.0, 200.0, 0.15 * heavy});
  bins.push_back({200.0, 400.0, 0.05 * heavy});
  return bins;
}

double next_unit(std::uint64_t& state) {
  state += 0x9E3779B97F4A7C15ULL;
  std::uint64_t z = state;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53;
}

std::vector<EmbeddingTable> sample_tables(const TableSamplerSpec& spec, const std::string& prefix) {
  const std::vector<PoolingBin> bins = pooling_histogram(spec.profile, spec.heavy_only);
  std::uint64_t state = spec.seed;
  const double log_min = std::log10(static_cast<double>(spec.rows_min));
  const double log_max = std::log10(static_cast<double>(spec.rows_max));
  std::vector<EmbeddingTable> tables;
  tables.reserve(static_cast<std::size_t>(spec.count));
  for (int i = 0; i < spec.count; ++i) {
    EmbeddingTable table;
    table.name = prefix + std::to_string(i);
    table.dim = spec.dim;
    table.rows = static_cast<std::int64_t>(
        std::llround(std::pow(10.0, log_min + (log_max - log_min) * next_unit(state))));
    double pick = next_unit(state);
    const PoolingBin* bin = &bins.back();
    for (const PoolingBin& candidate : bins) {
      if (pick < candidate.weight) {
        bin = &candidate;
        break;
      }
      pick -= candidate.weight;
    }
    table.pooling_factor = bin->low + (bin->high - bin->low) * next_unit(state);
    tables.push_back(std::move(table));
  }
  return tables;
}

}  // namespace perfsim::generators::dlrm

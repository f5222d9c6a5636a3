#include "kernels/embedding_heuristic.hpp"

#include <algorithm>
#include <cmath>

namespace perfsim::kernels {
namespace {

// The kernels of seed 000 work on fp32 weights and int32 indices: 4 bytes per element, and
// global memory is fetched in 32-byte sectors.
constexpr double kElementBytes = 4;
constexpr double kSectorBytes = 32;

double sectors_bytes(double bytes) {
  return std::ceil(bytes / kSectorBytes) * kSectorBytes;
}

// ln C(n, k) for real n >= k >= 0.
double log_binomial(double n, double k) {
  return std::lgamma(n + 1) - std::lgamma(k + 1) - std::lgamma(n - k + 1);
}

}  // namespace

EmbeddingWarpTraffic embedding_warp_traffic(const EmbeddingWork& work) {
  const double lookups = work.pooling_factor;
  const double dim = static_cast<double>(work.dim);
  EmbeddingWarpTraffic traffic;
  traffic.table_offsets_bytes = 32;
  traffic.offsets_bytes = 64;
  traffic.indices_bytes = sectors_bytes(kElementBytes * lookups);
  traffic.outputs_bytes = sectors_bytes(kElementBytes * dim);
  // Seed 000 prints the forward weight traffic as ceil(4 D / 32) * 32, the size of ONE row; a
  // warp reads L rows to pool them (the backward formula carries the L), so we count L rows.
  traffic.weights_bytes = work.backward ? sectors_bytes(2 * kElementBytes * lookups * dim)
                                        : lookups * sectors_bytes(kElementBytes * dim);
  return traffic;
}

double embedding_l2_hit_rate(const EmbeddingWork& work, const devices::DeviceSpec& device) {
  const double batch = static_cast<double>(work.batch_size);
  const double rows = static_cast<double>(work.rows);
  const double lookups = work.pooling_factor;
  const double tables_in_l2 =
      std::max(1.0, work.rows_per_block * device.sm_count.value / std::max(batch, 1.0));
  // The seed divides the L2 size by num_tables x D; D stands for the row size, so we divide
  // by the row's bytes.
  const double row_bytes = kElementBytes * static_cast<double>(work.dim);
  const double cached_rows =
      std::min(device.l2_size_bytes.value / (tables_in_l2 * row_bytes), rows);
  if (cached_rows < lookups || rows <= 0)
    return 0.0;
  return std::exp(log_binomial(cached_rows, lookups) - log_binomial(rows, lookups));
}

DurationUs embedding_dram_only_duration_us(const EmbeddingWork& work,
                                           const devices::DeviceSpec& device) {
  const EmbeddingWarpTraffic traffic = embedding_warp_traffic(work);
  const double per_warp = traffic.table_offsets_bytes + traffic.offsets_bytes +
                          traffic.indices_bytes + traffic.weights_bytes + traffic.outputs_bytes;
  const double warps = static_cast<double>(work.batch_size) * static_cast<double>(work.tables);
  return transfer_time_us(warps * per_warp, device.hbm_bandwidth_GBps.value);
}

DurationUs embedding_heuristic_duration_us(const EmbeddingWork& work,
                                           const devices::DeviceSpec& device) {
  const EmbeddingWarpTraffic traffic = embedding_warp_traffic(work);
  const double hit_rate = embedding_l2_hit_rate(work, device);
  const double l2_bytes =
      traffic.table_offsets_bytes + traffic.offsets_bytes + hit_rate * traffic.weights_bytes;
  const double dram_bytes =
      traffic.indices_bytes + traffic.outputs_bytes + (1 - hit_rate) * traffic.weights_bytes;
  const double warps = static_cast<double>(work.batch_size) * static_cast<double>(work.tables);
  return transfer_time_us(warps * dram_bytes, device.hbm_bandwidth_GBps.value) +
         transfer_time_us(warps * l2_bytes, device.l2_bandwidth_GBps.value);
}

}  // namespace perfsim::kernels

#pragma once
// Heuristic model of the batched embedding-lookup kernels (seed 000 Sec. 4.3.2.1.1): per-warp
// DRAM traffic over the peak DRAM bandwidth, enhanced with an L2 hit-rate estimate that moves
// part of the weight traffic to L2. One warp computes one pooled output vector, so there are
// B x T warps.
#include "devices/device_spec.hpp"
#include "kernels/kernel_work.hpp"

namespace perfsim::kernels {

// Per-warp traffic in bytes, the terms of seed 000's equations.
struct EmbeddingWarpTraffic {
  double table_offsets_bytes = 0;  // 32
  double offsets_bytes = 0;        // 64
  double indices_bytes = 0;        // ceil(4 L / 32) * 32
  double weights_bytes = 0;  // forward: L * ceil(4 D / 32) * 32; backward: ceil(8 L D / 32) * 32
  double outputs_bytes = 0;  // ceil(4 D / 32) * 32
};
EmbeddingWarpTraffic embedding_warp_traffic(const EmbeddingWork& work);

// num_tables = rows_per_block * #SM / B (at least 1);
// avg_cached_rows_per_table = min(L2_size / (num_tables * row_bytes), E);
// p = C(avg_cached_rows_per_table, L) / C(E, L)  (0 when fewer rows are cached than looked up).
double embedding_l2_hit_rate(const EmbeddingWork& work, const devices::DeviceSpec& device);

// Without hit rate: t = B T (sum of per-warp traffic) / peak_DRAM_BW.
DurationUs embedding_dram_only_duration_us(const EmbeddingWork& work,
                                           const devices::DeviceSpec& device);
// With hit rate: t = B T (tr_DRAM / peak_DRAM_BW + tr_L2 / peak_L2_BW), where
// tr_L2 = table_offsets + offsets + p weights and tr_DRAM = indices + outputs + (1 - p) weights.
DurationUs embedding_heuristic_duration_us(const EmbeddingWork& work,
                                           const devices::DeviceSpec& device);

}  // namespace perfsim::kernels

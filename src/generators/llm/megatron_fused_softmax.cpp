#include "generators/llm/megatron_fused_softmax.hpp"

namespace perfsim::generators::llm {
namespace {

constexpr std::int64_t kThreadsPerBlock = 128;
constexpr std::int64_t kWarpSize = 32;
constexpr std::int64_t kMinKeys = 16;  // exclusive
constexpr std::int64_t kMaxKeys = 4096;

std::int64_t next_power_of_two(std::int64_t value) {
  std::int64_t power = 1;
  while (power < value)
    power *= 2;
  return power;
}

}  // namespace

std::int64_t megatron_fused_softmax_batches_per_block(std::int64_t seq) {
  const std::int64_t padded = next_power_of_two(seq);
  const std::int64_t warp_size = padded < kWarpSize ? padded : kWarpSize;
  const std::int64_t rows_per_warp = padded <= 128 ? 2 : 1;
  return kThreadsPerBlock / warp_size * rows_per_warp;
}

bool megatron_fused_causal_softmax_available(std::int64_t attention_batches, std::int64_t seq) {
  if (seq <= kMinKeys || seq > kMaxKeys || seq % 4 != 0 || attention_batches % 4 != 0)
    return false;
  return attention_batches % megatron_fused_softmax_batches_per_block(seq) == 0;
}

}  // namespace perfsim::generators::llm

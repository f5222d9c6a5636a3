#include "kernels/attention_model.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace perfsim::kernels {
namespace {

double interpolate_log2(const std::vector<double>& lengths, const std::vector<double>& values,
                        double length) {
  if (length <= lengths.front())
    return values.front();
  if (length >= lengths.back())
    return values.back();
  const auto upper = std::upper_bound(lengths.begin(), lengths.end(), length);
  const std::size_t hi = static_cast<std::size_t>(upper - lengths.begin());
  const std::size_t lo = hi - 1;
  const double t = (std::log2(length) - std::log2(lengths[lo])) /
                   (std::log2(lengths[hi]) - std::log2(lengths[lo]));
  return values[lo] + t * (values[hi] - values[lo]);
}

}  // namespace

double measured_attention_tflops(const AttentionWork& work, const devices::DeviceSpec& device) {
  if (!device.attention)
    return 0;
  const devices::AttentionThroughput& table = *device.attention;
  if (std::find(table.dtypes.begin(), table.dtypes.end(), work.dtype) == table.dtypes.end())
    return 0;
  const std::vector<double>& lengths = table.sequence_lengths;
  double length = static_cast<double>(work.backward ? work.q_len : work.kv_len);
  // A windowed kernel's blocks stream about `window` keys (forward) or queries (backward).
  if (work.windowed())
    length = std::min(length, static_cast<double>(work.window));
  if (!work.backward)
    return interpolate_log2(
        lengths, work.causal ? table.forward_causal_tflops : table.forward_tflops, length);
  const double backward = interpolate_log2(lengths, table.backward_tflops, length);
  if (!work.causal)
    return backward;
  if (!table.backward_causal_tflops.empty())
    return interpolate_log2(lengths, table.backward_causal_tflops, length);
  return backward * interpolate_log2(lengths, table.forward_causal_tflops, length) /
         interpolate_log2(lengths, table.forward_tflops, length);
}

GemmWork attention_as_gemm(const AttentionWork& work) {
  // The mean keys per query: the band's over the queries for a sliding window.
  const std::int64_t keys =
      work.windowed() ? static_cast<std::int64_t>(
                            std::ceil(work.band_pairs() / static_cast<double>(work.q_len)))
                      : (work.causal ? (work.kv_len + 1) / 2 : work.kv_len);
  // k = flops per query-key pair / 2: 2 d forward, 5 d backward (d_qk + d_v and
  // 3 d_qk + 2 d_v when the value's head dimension differs).
  const std::int64_t d_v = work.value_dim();
  const std::int64_t k =
      work.backward ? (d_v == work.head_dim ? 5 * work.head_dim : 3 * work.head_dim + 2 * d_v)
                    : work.head_dim + d_v;
  return GemmWork{work.q_len, keys, k, work.batch_heads, work.dtype};
}

}  // namespace perfsim::kernels

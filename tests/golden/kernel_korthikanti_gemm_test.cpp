// Golden: the analytical A100 GEMM model against the 22B transformer layer of Korthikanti et
// al. 2022 (shared/data/llm/korthikanti2022.csv, Table 4 row "Baseline no recompute": forward
// + backward of ONE layer = 19.6 ms on A100 80GB, TP = 8, micro-batch b = 4, s = 2048,
// h = 6144, a = 64 heads, mixed precision).
//
// The csv gives the layer's total time, not its GEMM time, so the GEMM share is derived by
// removing from 19.6 ms the two other kinds of work the layer does:
//  1. Tensor-parallel communication (Megatron, Korthikanti Sec. 4.2.2): 4 all-reduces per layer
//     (2 forward, 2 backward) of b s h fp16 = 100663296 bytes over 8 GPUs. Time =
//     bytes * 2 (n - 1) / n / busbw, busbw read from the measured A100-SXM4-80GB 8-GPU
//     nccl-tests curve (shared/data/nccl-tests/azure-nda100v4-1node-allreduce-busbw.txt),
//     interpolated in log2(size) between 64 MiB and 128 MiB: about 171 GB/s -> 1.03 ms each.
//  2. Memory-bound element-wise work at the roofline (seed 000 Sec. 4.3.2.1.2) with the A100
//     80GB HBM bandwidth of configs/devices. Forward bytes per GPU (no sequence parallelism,
//     fp16 = 2 bytes, dropout masks 1 byte):
//       2 layer norms (read + write s b h)                         8 sbh
//       2 bias + dropout + residual adds (read 2, write 1, mask)  14 sbh
//       bias + GeLU on the 4h/t slice (read + write)              16 sbh / t
//       softmax over (a/t) s^2 b scores (read + write)             4 a s^2 b / t
//       attention dropout (read + write + mask)                    5 a s^2 b / t
//     = 24 sbh + 9 a s^2 b / t = 2415919104 bytes; the backward of these ops reads the
//     gradient and the saved input and writes a gradient: twice the forward bytes.
//     Total 3 x 2415919104 bytes / 2039 GB/s = 3.55 ms.
//  GEMM time implied = 19.6 - 4 x 1.03 - 3.55 = about 11.9 ms (61% of the layer).
//
// The model side: the six per-GPU GEMMs of the layer's forward pass (QKV, QK^T, attention x V,
// projection, two MLP GEMMs; Korthikanti Sec. 3 / Megatron Sec. 3 shapes divided by t = 8) and
// two GEMMs per forward GEMM in the backward pass (dA = dC B^T and dB = A^T dC).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "devices/device_spec.hpp"
#include "kernels/analytical_gemm.hpp"
#include "support/csv_rows.hpp"

namespace perfsim::kernels {
namespace {

const std::string kShared = PERFSIM_SHARED_DATA_DIR;

std::map<std::string, std::string> baseline_row() {
  const std::string path = kShared + "/llm/korthikanti2022.csv";
  for (const auto& row : testing::read_csv_rows(path)) {
    if (row.count("record") && row.at("record") == "table4_layer" && row.count("experiment") &&
        row.at("experiment") == "Baseline no recompute")
      return row;
  }
  ADD_FAILURE() << "no 'Baseline no recompute' table4_layer row in " << path;
  return {};
}

// Measured bus bandwidth at `bytes`, interpolated in log2(size).
double allreduce_busbw_GBps(double bytes) {
  const std::string path = kShared + "/nccl-tests/azure-nda100v4-1node-allreduce-busbw.txt";
  std::ifstream in(path);
  if (!in)
    ADD_FAILURE() << "missing fixture " << path;
  std::vector<std::pair<double, double>> points;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#')
      continue;
    std::istringstream fields(line);
    std::string label;
    double size = 0, busbw = 0;
    if (fields >> label >> size >> busbw)
      points.emplace_back(size, busbw);
  }
  for (std::size_t i = 1; i < points.size(); ++i) {
    if (points[i].first >= bytes) {
      const double f = (std::log2(bytes) - std::log2(points[i - 1].first)) /
                       (std::log2(points[i].first) - std::log2(points[i - 1].first));
      return points[i - 1].second + f * (points[i].second - points[i - 1].second);
    }
  }
  ADD_FAILURE() << "size " << bytes << " outside the nccl-tests curve";
  return 1;
}

TEST(KernelKorthikantiGemm, A100ModelReproducesTheGemmShareOfA22BLayer) {
  const auto row = baseline_row();
  const double b = std::stod(row.at("micro_batch_size"));
  const double s = std::stod(row.at("seq_len"));
  const double h = std::stod(row.at("hidden_size"));
  const double a = std::stod(row.at("attention_heads"));
  const double t = std::stod(row.at("tensor_parallel"));
  const double layer_us = std::stod(row.at("layer_combined_ms")) * 1000;
  ASSERT_EQ(layer_us, 19600);

  const auto a100 =
      devices::find_device(std::string(PERFSIM_SOURCE_DIR) + "/configs/devices", "A100-80GB");
  const double fp16_bytes = 2;
  const double allreduce_bytes = b * s * h * fp16_bytes;
  const double allreduce_us =
      allreduce_bytes * 2 * (t - 1) / t / (allreduce_busbw_GBps(allreduce_bytes) * 1e3);
  const double sbh = s * b * h;
  const double scores = a * s * s * b / t;
  const double forward_bytes = 24 * sbh + 9 * scores;
  ASSERT_EQ(forward_bytes, 2415919104.0);
  const double elementwise_us = 3 * forward_bytes / (a100.hbm_bandwidth_GBps.value * 1e3);
  const double implied_gemm_us = layer_us - 4 * allreduce_us - elementwise_us;

  const auto i = [](double value) { return static_cast<std::int64_t>(value); };
  const std::int64_t heads = i(a / t);
  const std::vector<GemmWork> forward{
      {i(s * b), i(3 * h / t), i(h), 1, DType::kFloat16},     // QKV
      {i(s), i(s), i(h / a), i(b) * heads, DType::kFloat16},  // Q K^T
      {i(s), i(h / a), i(s), i(b) * heads, DType::kFloat16},  // scores x V
      {i(s * b), i(h), i(h / t), 1, DType::kFloat16},         // projection
      {i(s * b), i(4 * h / t), i(h), 1, DType::kFloat16},     // MLP h -> 4h
      {i(s * b), i(h), i(4 * h / t), 1, DType::kFloat16}};    // MLP 4h -> h
  double model_us = 0;
  for (const GemmWork& gemm : forward) {
    model_us += analytical_gemm_duration_us(gemm, a100);
    model_us += analytical_gemm_duration_us({gemm.m, gemm.k, gemm.n, gemm.batch, gemm.dtype}, a100);
    model_us += analytical_gemm_duration_us({gemm.k, gemm.n, gemm.m, gemm.batch, gemm.dtype}, a100);
  }
  std::cout << "22B layer on A100: all-reduce " << allreduce_us << " us each, element-wise "
            << elementwise_us << " us, implied GEMM " << implied_gemm_us << " us ("
            << 100 * implied_gemm_us / layer_us << "% of the layer); analytical GEMM model "
            << model_us << " us (" << 100 * model_us / layer_us << "%), error "
            << 100 * (model_us - implied_gemm_us) / implied_gemm_us << "%\n";
  EXPECT_NEAR(model_us / implied_gemm_us, 1.0, 0.15);
}

}  // namespace
}  // namespace perfsim::kernels

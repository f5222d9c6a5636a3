// FP8 experts: with --dtype fp8 Megatron-Core runs the experts through Transformer Engine's
// grouped linear layers, so the expert GEMMs read E4M3 inputs and weights (E5M2 gradients in
// backward) like every other linear layer, each input and output gradient cast by a fused
// cast-transpose kernel and each expert weight cast once per iteration; the router stays bf16.
// A 2-layer case small enough to count every cast, and the FP8 weight copies it holds.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <utility>

#include "devices/device_spec.hpp"
#include "generators/llm/llm_rank_generator.hpp"
#include "kernels/analytical_gemm.hpp"
#include "kernels/op_kernel_registry.hpp"
#include "memory/llm_memory.hpp"
#include "support/tiny_llm.hpp"

namespace perfsim::generators::llm {
namespace {

TransformerConfig tiny_moe(DType dtype) {
  TransformerConfig model = test_support::tiny_moe();
  model.dtype = dtype;
  return model;
}

struct ExpertOps {
  int grouped_gemms = 0;
  int fp8_grouped_gemms = 0;
  int bf16_routers = 0;                        // router GEMMs reading bf16 operands
  std::map<std::pair<long, long>, int> casts;  // cast-transpose input [rows, cols] -> count
};

ExpertOps expert_ops(DType dtype) {
  // DP 4, EP 2: 2 local experts, 64 routed rows received at balance, 32 per expert.
  const ParallelConfig parallel{.dp = 4, .ep = 2};
  ExpertOps ops;
  for (const Op& op : generate_llm_rank(tiny_moe(dtype), parallel, 0).ops) {
    if (op.name == "te::grouped_gemm") {
      ++ops.grouped_gemms;
      ops.fp8_grouped_gemms += op.inputs.at(0).dtype == DType::kFloat8 ? 1 : 0;
      EXPECT_EQ(op.inputs.at(0).dtype == DType::kFloat8, op.inputs.at(1).dtype == DType::kFloat8)
          << "op " << op.id;
    }
    if (op.name == "aten::mm" && op.inputs.at(1).shape.size() == 2 &&
        (op.inputs.at(1).shape == std::vector<std::int64_t>{64, 4} ||
         op.inputs.at(0).shape == std::vector<std::int64_t>{32, 4}))
      ops.bf16_routers += op.inputs.at(0).dtype == DType::kBFloat16 ? 1 : 0;
    if (op.name == "te::cast_transpose") {
      const auto& shape = op.inputs.at(0).shape;
      ++ops.casts[{static_cast<long>(shape.at(0)), static_cast<long>(shape.at(1))}];
    }
  }
  return ops;
}

TEST(LlmMoeFp8, ExpertGemmsReadFp8OperandsAndEveryCastIsCounted) {
  const ExpertOps bf16 = expert_ops(DType::kBFloat16);
  EXPECT_EQ(bf16.grouped_gemms, 2 * 6);
  EXPECT_EQ(bf16.fp8_grouped_gemms, 0);
  EXPECT_TRUE(bf16.casts.empty());

  const ExpertOps fp8 = expert_ops(DType::kFloat8);
  EXPECT_EQ(fp8.grouped_gemms, 2 * 6);
  EXPECT_EQ(fp8.fp8_grouped_gemms, 2 * 6);
  // Per layer and micro-batch: the FC1 input [64 rows, h 64] and FC2 input [64, ffn 128]
  // forward, the FC2 output gradient [64, 64] and FC1 output gradient [64, 128] backward;
  // [64, 64] also counts the attention projection weight's cast, one per layer.
  EXPECT_EQ(fp8.casts.at({64, 64}), 2 * 2 + 2);
  EXPECT_EQ(fp8.casts.at({64, 128}), 2 * 2);
  // Per layer and iteration: the local experts' FC1 [2 x 64, 128] and FC2 [2 x 128, 64].
  EXPECT_EQ(fp8.casts.at({128, 128}), 2);
  EXPECT_EQ(fp8.casts.at({256, 64}), 2);
  // No shared experts: their empty FC1 [64, 0] and FC2 [0, 64] are no modules, nothing cast.
  EXPECT_EQ(fp8.casts.count({64, 0}), 0u);
  EXPECT_EQ(fp8.casts.count({0, 64}), 0u);
  for (const auto& [shape, count] : fp8.casts)
    EXPECT_GT(shape.first * shape.second, 0) << count << " casts of an empty tensor";
  // The router's forward GEMM and its two backward GEMMs stay bf16 in both.
  EXPECT_EQ(bf16.bf16_routers, fp8.bf16_routers);
  EXPECT_GT(fp8.bf16_routers, 0);
}

// The analytical model's time of every grouped GEMM of rank 0 on an H100 (configs/devices).
double grouped_gemm_us(DType dtype) {
  const devices::DeviceSpec h100 =
      devices::load_device_file(std::string(PERFSIM_SOURCE_DIR) + "/configs/devices/H100-SXM.json");
  // Experts big enough to be compute bound: h 2048, 4 experts of 4096, s 2048, DP 4, EP 2.
  TransformerConfig model = tiny_moe(dtype);
  model.hidden = 2048;
  model.heads = 16;
  model.kv_heads = 16;
  model.ffn_hidden = 8192;
  model.seq_len = 2048;
  model.moe.expert_ffn_hidden = 4096;
  double total_us = 0;
  for (const Op& op : generate_llm_rank(model, {.dp = 4, .ep = 2}, 0).ops) {
    if (op.name != "te::grouped_gemm")
      continue;
    for (const kernels::KernelSpec& kernel : kernels::expand_op(op).kernels)
      total_us +=
          kernels::analytical_gemm_duration_us(std::get<kernels::GemmWork>(kernel.work), h100);
  }
  return total_us;
}

TEST(LlmMoeFp8, ExpertGemmsRunFasterButNotBeyondTheFp8Peak) {
  // H100 SXM: FP8 tensor-core peak 2x bf16's, so the same GEMMs take at least half the time.
  const double bf16_us = grouped_gemm_us(DType::kBFloat16);
  const double fp8_us = grouped_gemm_us(DType::kFloat8);
  EXPECT_LT(fp8_us, bf16_us);
  EXPECT_GE(fp8_us, bf16_us / 2);
  std::printf("grouped GEMMs of rank 0: bf16 %.1f us, fp8 %.1f us (%.2fx)\n", bf16_us, fp8_us,
              bf16_us / fp8_us);
}

TEST(LlmMoeFp8, ClosedFormHoldsFp8CopiesOfTheLocalExperts) {
  memory::DeviceMemory device;
  device.capacity_bytes = Bytes{80} << 30;
  for (int ep : {1, 2, 4}) {
    const ParallelConfig parallel{.dp = 4, .ep = ep};
    const memory::StageMemory stage =
        memory::estimate_llm_memory(tiny_moe(DType::kFloat8), parallel, device).stages.at(0);
    // Weight and transpose, one byte each, per linear parameter of the 2 layers: QKV 64 x 192,
    // projection 64 x 64, and 4 / EP local experts of 64 x 128 + 128 x 64 (no dense MLP).
    const double linear = 64.0 * 192 + 64 * 64 + 4.0 / ep * (64 * 128 + 128 * 64);
    EXPECT_DOUBLE_EQ(static_cast<double>(stage.fp8_weight_bytes), 2 * 2 * linear) << "EP " << ep;
    EXPECT_EQ(memory::estimate_llm_memory(tiny_moe(DType::kBFloat16), parallel, device)
                  .stages.at(0)
                  .fp8_weight_bytes,
              0);
  }
}

}  // namespace
}  // namespace perfsim::generators::llm

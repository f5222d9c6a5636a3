// FP8 (Transformer Engine recipe) and overlapped TP collectives beside GEMMs: exact op counts
// and bytes of small generated cases, the contention model's direction and size, and the FP8
// memory closed form.
#include <gtest/gtest.h>

#include "devices/device_spec.hpp"
#include "generators/llm/llm_rank_generator.hpp"
#include "kernels/analytical_gemm.hpp"
#include "kernels/comm_contention.hpp"
#include "memory/llm_memory.hpp"
#include "support/tiny_llm.hpp"

namespace perfsim::generators::llm {
namespace {

// 8 layers, h 256, FFN 1024, s 128, micro-batch 2, 16 micro-batches per iteration at DP 1.
TransformerConfig tiny_gpt(DType dtype) {
  TransformerConfig model = test_support::tiny_gpt();
  model.dtype = dtype;
  return model;
}

struct Fp8Counts {
  int casts = 0;
  int fp8_gemms = 0;
  int bf16_gemms = 0;
};

Fp8Counts count(const Trace& trace) {
  Fp8Counts counts;
  for (const Op& op : trace.ops) {
    if (op.name == "te::cast_transpose")
      ++counts.casts;
    if (op.name == "aten::mm")
      (op.inputs.at(0).dtype == DType::kFloat8 ? counts.fp8_gemms : counts.bf16_gemms)++;
  }
  return counts;
}

TEST(LlmFp8Trace, LinearGemmsInFp8WithCastTransposes) {
  const ParallelConfig parallel{.tp = 1, .pp = 1, .dp = 1};
  const Trace trace = generate_llm_rank(tiny_gpt(DType::kFloat8), parallel, 0);
  const Fp8Counts counts = count(trace);
  // Per layer and micro-batch: 4 input casts forward, 4 gradient casts backward; per layer
  // once per iteration: 4 weight casts.  16 x 8 x 8 + 8 x 4.
  EXPECT_EQ(counts.casts, 16 * 8 * 8 + 8 * 4);
  // 4 forward, 4 data-gradient, 4 weight-gradient GEMMs per layer and micro-batch in FP8; the
  // LM head's logits, data and weight gradient stay bf16.
  EXPECT_EQ(counts.fp8_gemms, 16 * 8 * 12);
  EXPECT_EQ(counts.bf16_gemms, 16 * 3);
  // The QKV input cast reads s b h bf16 and writes the FP8 copy and its transpose.
  for (const Op& op : trace.ops) {
    if (op.name != "te::cast_transpose" || op.inputs.at(0).numel != 128 * 2 * 256)
      continue;
    EXPECT_EQ(op.inputs.at(0).bytes(), 128 * 2 * 256 * 2);
    ASSERT_EQ(op.outputs.size(), 2u);
    EXPECT_EQ(op.outputs[0].bytes() + op.outputs[1].bytes(), 2 * 128 * 2 * 256);
    break;
  }
  // Activations stay bf16: every element-wise op writes bf16 or fp32.
  for (const Op& op : trace.ops) {
    if (op.name == "aten::native_layer_norm") {
      EXPECT_EQ(op.outputs.at(0).dtype, DType::kBFloat16);
    }
  }
}

TEST(LlmFp8Trace, Bf16HasNoCasts) {
  const Trace trace =
      generate_llm_rank(tiny_gpt(DType::kBFloat16), ParallelConfig{.tp = 1, .pp = 1, .dp = 1}, 0);
  const Fp8Counts counts = count(trace);
  EXPECT_EQ(counts.casts, 0);
  EXPECT_EQ(counts.fp8_gemms, 0);
  EXPECT_EQ(counts.bf16_gemms, 16 * 8 * 12 + 16 * 3);
}

int contended_ops(const Trace& trace) {
  int contended = 0;
  for (const Op& op : trace.ops)
    if (kernels::contention_sms_of(op) > 0)
      ++contended;
  return contended;
}

TEST(LlmOverlap, OverlappedGemmsCarryTheCommKernelsSms) {
  for (bool sequence_parallel : {false, true}) {
    ParallelConfig parallel{.tp = 2, .pp = 1, .dp = 1};
    parallel.sequence_parallel = sequence_parallel;
    parallel.overlap_tp_backward = true;
    parallel.comm_sms = 24;
    const Trace trace = generate_llm_rank(tiny_gpt(DType::kBFloat16), parallel, 0);
    // Per layer and micro-batch two column-parallel backward passes (QKV, FC1) plus the LM
    // head's once per micro-batch: the weight-gradient GEMM beside the data-gradient
    // reduction, with SP also the data-gradient GEMM beside the input all-gather.
    const int per_pass = sequence_parallel ? 2 : 1;
    EXPECT_EQ(contended_ops(trace), (16 * 8 * 2 + 16) * per_pass) << sequence_parallel;
    for (const Op& op : trace.ops) {
      if (kernels::contention_sms_of(op) > 0) {
        EXPECT_EQ(op.name, "aten::mm");
      }
    }
    parallel.overlap_tp_backward = false;
    EXPECT_EQ(contended_ops(generate_llm_rank(tiny_gpt(DType::kBFloat16), parallel, 0)), 0);
    parallel.overlap_tp_backward = true;
    parallel.comm_sms = 0;
    EXPECT_EQ(contended_ops(generate_llm_rank(tiny_gpt(DType::kBFloat16), parallel, 0)), 0);
  }
}

devices::DeviceSpec small_gpu() {
  devices::DeviceSpec device;
  device.name = "test-gpu";
  device.sm_count.value = 100;
  device.hbm_bandwidth_GBps.value = 2000;
  device.min_kernel_duration_us.value = 1;
  device.tensor_core_tflops[DType::kBFloat16].value = 300;
  return device;
}

TEST(CommContention, GemmBesideACollectiveRunsOnTheSmsLeft) {
  const devices::DeviceSpec device = small_gpu();
  // 256 x 128 tiles: 100 x 40 = 4000 tiles; 40 waves on 100 SMs, 50 waves on 80 SMs.
  const kernels::KernelSpec gemm{"mm", KernelCategory::kGemm,
                                 kernels::GemmWork{25600, 5120, 4096, 1, DType::kBFloat16}};
  const double alone =
      kernels::analytical_gemm_duration_us(std::get<kernels::GemmWork>(gemm.work), device);
  EXPECT_DOUBLE_EQ(kernels::contended_duration_us(gemm, alone, 0, device), alone);
  const double contended = kernels::contended_duration_us(gemm, alone, 20, device);
  EXPECT_NEAR(contended / alone, 50.0 / 40.0, 1e-9);
  // A memory-bound kernel keeps its HBM bandwidth with 20 SMs fewer.
  const kernels::KernelSpec add{"add", KernelCategory::kOther,
                                kernels::ElementwiseWork{1e6, 2e6, 2e6, DType::kBFloat16}};
  EXPECT_DOUBLE_EQ(kernels::contended_duration_us(add, 7.0, 20, device), 7.0);
  // Attention-like compute kernels without GEMM work: the SM share, 100 / 80.
  const kernels::KernelSpec attention{"flash", KernelCategory::kGemm,
                                      kernels::ElementwiseWork{1e9, 1e6, 1e6, DType::kBFloat16}};
  EXPECT_NEAR(kernels::contended_duration_us(attention, 8.0, 20, device), 10.0, 1e-12);
}

TEST(LlmFp8Memory, KeepsBf16StatePlusFp8WeightCopies) {
  const ParallelConfig parallel{.tp = 2, .pp = 2, .dp = 1};
  memory::DeviceMemory device;
  device.capacity_bytes = 80'000'000'000;
  const auto bf16 = memory::estimate_llm_memory(tiny_gpt(DType::kBFloat16), parallel, device);
  const auto fp8 = memory::estimate_llm_memory(tiny_gpt(DType::kFloat8), parallel, device);
  // Linear parameters per layer and TP rank: (h 3h + h h + 2 h f) / t = (4 x 65536 + 524288)/2.
  const double linear = memory::fp8_linear_parameters_per_layer(tiny_gpt(DType::kFloat8), parallel);
  EXPECT_DOUBLE_EQ(linear, (4.0 * 256 * 256 + 2.0 * 256 * 1024) / 2);
  // The linear layers' inputs saved in FP8 (Transformer Engine), per layer and micro-batch at
  // TP 2 without SP (s 128, b 2, h 256, f 1024, 8 heads of 32): QKV's and FC1's inputs, whole
  // on each rank, 1 byte per element instead of 2 (-s b h each), FC2's (-s b f / t), and the
  // projection's FP8 copy beside the context the flash attention keeps (+s b h / t):
  // 256 x (-256 - 256 - 512 + 128) = -229376 bytes.
  constexpr double kFp8MinusBf16PerLayer = -229376;
  for (std::size_t stage = 0; stage < 2; ++stage) {
    const auto& a = bf16.stages[stage];
    const auto& b = fp8.stages[stage];
    EXPECT_EQ(b.parameter_bytes, a.parameter_bytes);
    EXPECT_EQ(b.gradient_bytes, a.gradient_bytes);
    EXPECT_EQ(b.optimizer_bytes, a.optimizer_bytes);
    // 4 layers a stage; 2 micro-batches in flight on stage 0, 1 on stage 1.
    const double in_flight = stage == 0 ? 2 : 1;
    EXPECT_EQ(b.microbatches_in_flight, in_flight);
    const auto saved = static_cast<Bytes>(kFp8MinusBf16PerLayer * 4 * in_flight);
    EXPECT_EQ(b.activation_bytes, a.activation_bytes + saved);
    EXPECT_EQ(a.fp8_weight_bytes, 0);
    EXPECT_EQ(b.fp8_weight_bytes, static_cast<Bytes>(2 * linear * 4));  // 4 layers a stage
    EXPECT_EQ(b.total_bytes, a.total_bytes + b.fp8_weight_bytes + saved);
  }
}

TEST(LlmMemory, UnevenStagesHoldTheirOwnLayers) {
  ParallelConfig parallel{.tp = 1, .pp = 2, .dp = 1};
  parallel.pp_layers = {3, 5};
  memory::DeviceMemory device;
  device.capacity_bytes = 80'000'000'000;
  const auto estimate = memory::estimate_llm_memory(tiny_gpt(DType::kBFloat16), parallel, device);
  EXPECT_EQ(estimate.stages[0].layers, 3);
  EXPECT_EQ(estimate.stages[1].layers, 5);
  // Stage 1 holds 2 layers' parameters more than an even split's 4 - 1: compare per layer.
  const double per_layer = memory::parameters_per_layer(tiny_gpt(DType::kBFloat16), parallel);
  ParallelConfig even = parallel;
  even.pp_layers.clear();
  const auto even_estimate = memory::estimate_llm_memory(tiny_gpt(DType::kBFloat16), even, device);
  EXPECT_NEAR(estimate.stages[1].parameter_count - even_estimate.stages[1].parameter_count,
              per_layer, 1e-6);
}

TEST(LlmMemory, ContextParallelSplitsActivationsAndShards) {
  memory::DeviceMemory device;
  device.capacity_bytes = 80'000'000'000;
  TransformerConfig model = tiny_gpt(DType::kBFloat16);
  ParallelConfig parallel{.tp = 2, .pp = 1, .dp = 2, .zero_stage = 1};
  const auto without = memory::estimate_llm_memory(model, parallel, device);
  parallel.cp = 2;
  const auto with = memory::estimate_llm_memory(model, parallel, device);
  EXPECT_DOUBLE_EQ(with.activation_bytes_per_layer, without.activation_bytes_per_layer / 2);
  EXPECT_EQ(with.worst().parameter_bytes, without.worst().parameter_bytes);
  // ZeRO-1 shards the optimizer state over DP x CP = 4 ranks instead of 2.
  EXPECT_NEAR(static_cast<double>(with.worst().optimizer_bytes),
              static_cast<double>(without.worst().optimizer_bytes) / 2, 1.0);
}

TEST(LlmFp8Trace, Fp8AllGatherHalvesTheLinearInputGathers) {
  ParallelConfig parallel{.tp = 2, .pp = 1, .dp = 1, .sequence_parallel = true};
  auto all_gather_bytes = [&](bool fp8_all_gather) {
    parallel.fp8_all_gather = fp8_all_gather;
    Bytes bytes = 0;
    for (const Op& op : generate_llm_rank(tiny_gpt(DType::kFloat8), parallel, 0).ops)
      if (op.comm && op.comm->kind == CollectiveKind::kAllGather)
        bytes += op.comm->bytes_in;
    return bytes;
  };
  const Bytes bf16_gathers = all_gather_bytes(false);
  const Bytes fp8_gathers = all_gather_bytes(true);
  // Per layer and micro-batch four linear-input gathers (QKV and FC1, forward and again for
  // the weight gradient) of s/t b h = 64 x 2 x 256 elements move 1 byte instead of 2.
  EXPECT_EQ(bf16_gathers - fp8_gathers, 16 * 8 * 4 * (64 * 2 * 256));
}

}  // namespace
}  // namespace perfsim::generators::llm

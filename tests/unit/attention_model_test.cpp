// Fused attention kernels (kernels/attention_model.hpp): the causal mask halves the work, the
// measured H100 table sets the throughput by mask, direction and length, and a device without
// a table prices the unmasked work as a GEMM.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "devices/device_spec.hpp"
#include "kernels/analytical_gemm.hpp"
#include "kernels/attention_model.hpp"
#include "kernels/kernel_predictor.hpp"
#include "kernels/op_kernel_registry.hpp"
#include "perfsim/error.hpp"

namespace perfsim::kernels {
namespace {

const std::string kDeviceFolder = std::string(PERFSIM_SOURCE_DIR) + "/configs/devices";

AttentionWork square(std::int64_t length, bool causal, bool backward) {
  return AttentionWork{16, length, length, 128, causal, backward, DType::kBFloat16};
}

double predicted_us(const KernelPredictor& predictor, const AttentionWork& work) {
  return predictor.predict({"attention", KernelCategory::kGemm, work}).duration_us;
}

TEST(AttentionModel, CausalMaskHalvesTheWork) {
  const AttentionWork full = square(4096, false, false);
  const AttentionWork causal = square(4096, true, false);
  EXPECT_DOUBLE_EQ(full.flops(), 4.0 * 16 * 4096 * 4096 * 128);
  EXPECT_DOUBLE_EQ(causal.flops(), full.flops() / 2);
  EXPECT_DOUBLE_EQ(square(4096, false, true).flops(), 2.5 * full.flops());
}

TEST(AttentionModel, ValueHeadDimensionOfItsOwn) {
  // Multi-latent attention (DeepSeek-V3): q/k head 192, v head 128. Forward 2 (192 + 128) flops
  // per query-key pair, backward 6 x 192 + 4 x 128; the analytical fallback's GEMM k follows.
  AttentionWork mla{128, 4096, 4096, 192, false, false, DType::kBFloat16, 0, 128};
  const double pairs = 128.0 * 4096 * 4096;
  EXPECT_DOUBLE_EQ(mla.flops(), 2.0 * (192 + 128) * pairs);
  GemmWork gemm = attention_as_gemm(mla);
  EXPECT_EQ(gemm.k, 192 + 128);
  EXPECT_DOUBLE_EQ(2.0 * gemm.m * gemm.n * gemm.k * gemm.batch, mla.flops());
  mla.backward = true;
  EXPECT_DOUBLE_EQ(mla.flops(), (6.0 * 192 + 4.0 * 128) * pairs);
  gemm = attention_as_gemm(mla);
  EXPECT_EQ(gemm.k, 3 * 192 + 2 * 128);
  EXPECT_DOUBLE_EQ(2.0 * gemm.m * gemm.n * gemm.k * gemm.batch, mla.flops());
  // Equal dimensions stay 4 d and 10 d (v_head_dim 0 or the same).
  AttentionWork equal{16, 4096, 4096, 128, false, true, DType::kBFloat16, 0, 128};
  EXPECT_DOUBLE_EQ(equal.flops(), square(4096, false, true).flops());
  EXPECT_EQ(attention_as_gemm(equal).k, 5 * 128);
}

TEST(AttentionModel, H100RunsAtTheMeasuredThroughput) {
  const devices::DeviceSpec h100 = devices::find_device(kDeviceFolder, "H100-SXM");
  ASSERT_TRUE(h100.attention.has_value());
  const KernelPredictor predictor(h100);
  // At a measured length the table's figure (529 TFLOP/s causal forward at 8k, 518 backward)
  // at the sustained clock fraction: the table is a short benchmark at the boost clock.
  const double clock = h100.tensor_core_clock_fraction();
  const AttentionWork forward = square(8192, true, false);
  EXPECT_NEAR(predicted_us(predictor, forward), forward.flops() / (529e12 * clock) * 1e6, 1e-6);
  const AttentionWork backward = square(8192, false, true);
  EXPECT_NEAR(predicted_us(predictor, backward), backward.flops() / (518e12 * clock) * 1e6, 1e-6);
  // Causal backward: the backward's figure times the forward's causal / unmasked ratio.
  EXPECT_NEAR(measured_attention_tflops(square(8192, true, true), h100), 518.0 * 529 / 600, 1e-9);
  // Between measured lengths: linear in log2 of the length; beyond them the end points.
  EXPECT_NEAR(
      measured_attention_tflops(square(std::llround(std::sqrt(2048.0 * 4096)), true, false), h100),
      (484.0 + 518) / 2, 0.05);
  EXPECT_DOUBLE_EQ(measured_attention_tflops(square(131072, true, false), h100), 539);
  EXPECT_DOUBLE_EQ(measured_attention_tflops(square(128, false, false), h100), 497);
  // Forward loops over keys, backward over queries.
  AttentionWork half_keys = square(8192, false, false);
  half_keys.kv_len = 4096;
  EXPECT_DOUBLE_EQ(measured_attention_tflops(half_keys, h100), 609);
  half_keys.backward = true;
  EXPECT_DOUBLE_EQ(measured_attention_tflops(half_keys, h100), 518);
  // A dtype the table does not cover: no measured figure.
  AttentionWork fp32 = forward;
  fp32.dtype = DType::kFloat32;
  EXPECT_EQ(measured_attention_tflops(fp32, h100), 0);
}

TEST(AttentionModel, WithoutATableTheUnmaskedWorkIsAGemm) {
  const devices::DeviceSpec a100 = devices::find_device(kDeviceFolder, "A100-80GB");
  ASSERT_FALSE(a100.attention.has_value());
  const KernelPredictor predictor(a100);
  const AttentionWork causal = square(4096, true, false);
  const GemmWork gemm = attention_as_gemm(causal);
  EXPECT_EQ(gemm.m, 4096);
  EXPECT_EQ(gemm.n, 2048);
  EXPECT_EQ(gemm.k, 256);
  EXPECT_EQ(gemm.batch, 16);
  EXPECT_DOUBLE_EQ(predicted_us(predictor, causal), analytical_gemm_duration_us(gemm, a100));
  EXPECT_EQ(attention_as_gemm(square(4096, false, true)).k, 5 * 128);
}

TEST(AttentionModel, RegistryReadsTheCausalAttribute) {
  auto flash_op = [](bool with_attribute, std::int64_t causal) {
    Op op;
    op.id = 1;
    op.name = "aten::_scaled_dot_product_flash_attention";
    TensorRef q;
    q.shape = {2, 8, 1024, 64};
    q.dtype = DType::kBFloat16;
    q.element_bytes = 2;
    TensorRef k = q;
    k.shape = {2, 8, 512, 64};
    op.inputs = {q, k, k};
    if (with_attribute)
      op.attributes.push_back({"is_causal", causal});
    return op;
  };
  for (const auto& [with_attribute, flag, expected] :
       {std::tuple{true, std::int64_t{1}, true}, std::tuple{true, std::int64_t{0}, false},
        std::tuple{false, std::int64_t{0}, false}}) {
    const OpExpansion expansion = expand_op(flash_op(with_attribute, flag));
    ASSERT_EQ(expansion.status, ExpansionStatus::kModeled);
    ASSERT_EQ(expansion.kernels.size(), 1u);
    const auto* work = std::get_if<AttentionWork>(&expansion.kernels[0].work);
    ASSERT_NE(work, nullptr);
    EXPECT_EQ(work->causal, expected);
    EXPECT_EQ(work->batch_heads, 16);
    EXPECT_EQ(work->q_len, 1024);
    EXPECT_EQ(work->kv_len, 512);
    EXPECT_EQ(work->head_dim, 64);
    EXPECT_FALSE(work->backward);
  }
}

TEST(AttentionModel, MalformedTableIsAnInputErrorNamingTheField) {
  const std::string path = kDeviceFolder + "/H100-SXM.json";
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  const std::string good = text.str();
  auto with = [&](const std::string& from, const std::string& to) {
    std::string bad = good;
    const std::size_t at = bad.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return bad.replace(at, from.size(), to);
  };
  auto error_of = [&](const std::string& json) -> std::string {
    try {
      devices::parse_device_json(json, path);
    } catch (const InputError& error) {
      return error.what();
    }
    return "";
  };
  EXPECT_NE(error_of(with("\"forward\": [\n      497,", "\"forward\": [\n"))
                .find("/attention_tflops/forward"),
            std::string::npos);
  EXPECT_NE(
      error_of(with("\"sequence_lengths\": [\n      512,", "\"sequence_lengths\": [\n      2048,"))
          .find("/attention_tflops/sequence_lengths/1"),
      std::string::npos);
  EXPECT_NE(error_of(with("\"dtypes\": [\n      \"bf16\"", "\"dtypes\": [\n      \"bf17\""))
                .find("/attention_tflops/dtypes/0"),
            std::string::npos);
}

}  // namespace
}  // namespace perfsim::kernels

// Roofline (seed 000 Sec. 4.3.2.1.2, t = max(FLOP / peak, (bytes_read + bytes_write) / BW))
// for three ops worked out by hand, each going through the op registry and the predictor.
#include <gtest/gtest.h>

#include "devices/device_spec.hpp"
#include "kernels/kernel_predictor.hpp"
#include "kernels/op_kernel_registry.hpp"
#include "kernels/roofline.hpp"

namespace perfsim::kernels {
namespace {

const std::string kDeviceFolder = std::string(PERFSIM_SOURCE_DIR) + "/configs/devices";

TensorRef tensor(std::vector<std::int64_t> shape, DType dtype, std::string device = "cuda:0") {
  TensorRef ref;
  ref.shape = std::move(shape);
  ref.dtype = dtype;
  ref.element_bytes = element_bytes(dtype);
  ref.device = std::move(device);
  return ref;
}

KernelPrediction predict_single(const Op& op, const devices::DeviceSpec& device) {
  const OpExpansion expansion = expand_op(op);
  EXPECT_EQ(expansion.status, ExpansionStatus::kModeled);
  EXPECT_EQ(expansion.kernels.size(), 1u);
  return KernelPredictor(device).predict(expansion.kernels.at(0));
}

TEST(KernelRoofline, ReluOnV100IsMemoryBound) {
  // aten::relu on a [1024, 1024] fp32 tensor, V100 (900 GB/s, 15.7 fp32 TFLOP/s):
  // bytes = 2 * 1048576 * 4 = 8388608; memory = 8388608 / 900e9 s = 9.3207 us;
  // compute = 1048576 flops / 15.7e12 = 0.0668 us  ->  9.3207 us.
  Op op;
  op.name = "aten::relu";
  op.inputs = {tensor({1024, 1024}, DType::kFloat32)};
  const auto v100 = devices::find_device(kDeviceFolder, "V100-SXM2");
  const KernelPrediction prediction = predict_single(op, v100);
  EXPECT_NEAR(prediction.duration_us, 9.3207, 1e-3);
  EXPECT_EQ(prediction.model, "roofline");
}

TEST(KernelRoofline, GeluOnA100Fp16) {
  // aten::gelu on [8192, 3072] fp16, A100-80GB (2039 GB/s): 25165824 elements,
  // bytes = 2 * 25165824 * 2 = 100663296; memory = 100663296 / 2039e9 s = 49.3689 us;
  // compute = 8 flops * 25165824 / 78e12 (fp16 CUDA cores) = 2.581 us  ->  49.3689 us.
  Op op;
  op.name = "aten::gelu";
  op.inputs = {tensor({8192, 3072}, DType::kFloat16)};
  const auto a100 = devices::find_device(kDeviceFolder, "A100-80GB");
  EXPECT_NEAR(predict_single(op, a100).duration_us, 49.3689, 1e-3);
}

TEST(KernelRoofline, HostToDeviceCopyUsesPcie) {
  // aten::copy_(dst cuda [256, 1024, 64] fp32, src cpu same): 67108864 bytes over PCIe 3.0
  // x16 (15.75 GB/s) = 67108864 / 15.75e9 s = 4260.880 us.
  Op op;
  op.name = "aten::copy_";
  op.inputs = {tensor({256, 1024, 64}, DType::kFloat32),
               tensor({256, 1024, 64}, DType::kFloat32, "cpu")};
  const auto v100 = devices::find_device(kDeviceFolder, "V100-SXM2");
  const KernelPrediction prediction = predict_single(op, v100);
  EXPECT_NEAR(prediction.duration_us, 4260.880, 1e-3);
  EXPECT_EQ(prediction.model, "pcie-transfer");
}

TEST(KernelRoofline, ComputeBoundWorkUsesThePeak) {
  // 1e9 fp32 flops over 1 MB on V100: compute 1e9 / 15.7e12 s = 63.694 us > memory 1.111 us.
  const auto v100 = devices::find_device(kDeviceFolder, "V100-SXM2");
  EXPECT_NEAR(roofline_duration_us({1e9, 5e5, 5e5, DType::kFloat32}, v100), 63.694, 1e-3);
}

TEST(KernelRoofline, TinyKernelsGetTheDeviceFloor) {
  // 16 elements: roofline says 0.00014 us; the V100 floor measured in the DLRM traces is 2 us.
  Op op;
  op.name = "aten::sigmoid";
  op.inputs = {tensor({16}, DType::kFloat32)};
  const auto v100 = devices::find_device(kDeviceFolder, "V100-SXM2");
  const KernelPrediction prediction = predict_single(op, v100);
  EXPECT_DOUBLE_EQ(prediction.duration_us, 2.0);
  EXPECT_EQ(prediction.model, "roofline+floor");
}

}  // namespace
}  // namespace perfsim::kernels

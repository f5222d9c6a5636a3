#include "kernels/conv_geometry.hpp"

#include <algorithm>

#include "kernels/ceil_div.hpp"

namespace perfsim::kernels {

std::string_view conv_pass_name(ConvPass pass) {
  switch (pass) {
    case ConvPass::kForward:
      return "fprop";
    case ConvPass::kBackwardData:
      return "dgrad";
    case ConvPass::kBackwardFilter:
      return "wgrad";
  }
  return "fprop";
}

std::int64_t conv_output_extent(std::int64_t in, std::int64_t filter, std::int64_t stride,
                                std::int64_t pad, std::int64_t dilation) {
  const std::int64_t span = in + 2 * pad - dilation * (filter - 1) - 1;
  if (span < 0 || stride <= 0)
    return 0;
  return span / stride + 1;
}

std::int64_t conv_stride_from_extents(std::int64_t in, std::int64_t filter, std::int64_t out) {
  if (out <= 0 || in <= 0 || filter <= 0)
    return 1;
  for (std::int64_t stride = 1; stride <= in; ++stride) {
    const std::int64_t smallest = conv_output_extent(in, filter, stride, 0, 1);
    const std::int64_t largest = conv_output_extent(in, filter, stride, filter / 2, 1);
    if (smallest <= out && out <= largest)
      return stride;
    if (largest < out)
      break;  // larger strides only shrink the output further
  }
  return 1;
}

ImplicitGemm implicit_gemm(const ConvShape& shape, ConvPass pass) {
  const std::int64_t groups = std::max<std::int64_t>(1, shape.groups);
  const std::int64_t c = shape.in_channels / groups;
  const std::int64_t k = shape.out_channels / groups;
  const std::int64_t taps = shape.filter_h * shape.filter_w;
  switch (pass) {
    case ConvPass::kForward:
      return {shape.batch * shape.out_h * shape.out_w, k, c * taps, groups};
    case ConvPass::kBackwardData:
      return {
          shape.batch * shape.in_h * shape.in_w, c,
          k * ceil_div(shape.filter_h, shape.stride_h) * ceil_div(shape.filter_w, shape.stride_w),
          groups};
    case ConvPass::kBackwardFilter:
      return {k, c * taps, shape.batch * shape.out_h * shape.out_w, groups};
  }
  return {};
}

double conv_flops(const ConvShape& shape) {
  const std::int64_t groups = std::max<std::int64_t>(1, shape.groups);
  return 2.0 * static_cast<double>(shape.batch) * static_cast<double>(shape.out_channels) *
         static_cast<double>(shape.out_h * shape.out_w) *
         static_cast<double>(shape.in_channels / groups) *
         static_cast<double>(shape.filter_h * shape.filter_w);
}

double conv_min_bytes(const ConvShape& shape, int element_bytes) {
  const std::int64_t groups = std::max<std::int64_t>(1, shape.groups);
  const double input =
      static_cast<double>(shape.batch * shape.in_channels * shape.in_h * shape.in_w);
  const double output =
      static_cast<double>(shape.batch * shape.out_channels * shape.out_h * shape.out_w);
  const double filter = static_cast<double>(shape.out_channels * (shape.in_channels / groups) *
                                            shape.filter_h * shape.filter_w);
  return (input + output + filter) * element_bytes;
}

bool fast_algorithm_applies(const ConvShape& shape) {
  return shape.stride_h == 1 && shape.stride_w == 1 && shape.filter_h >= 3 && shape.filter_w >= 3;
}

}  // namespace perfsim::kernels

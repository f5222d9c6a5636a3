#pragma once
// Op rules for CNN layers: convolutions (cuDNN forward, backward data and filter), batch-norm
// and pooling, from the tensor shapes traces record. Execution traces record inputs and
// outputs; Kineto records inputs only, so a forward convolution or pooling there lacks the
// output extents (the stride and padding arguments are not tensors) and is reported as
// missing shapes, as is any layout these rules cannot read (3-D convolutions, transposed
// convolutions).
#include <string_view>
#include <utility>
#include <vector>

#include "kernels/op_kernel_registry.hpp"

namespace perfsim::kernels {

using CnnOpRule = OpExpansion (*)(const Op&);

// Every CNN op name with its rule (registered by op_kernel_registry.cpp).
const std::vector<std::pair<std::string_view, CnnOpRule>>& cnn_op_rules();

// The convolution an op's (input [N, C, H, W] or [N, C, L], weight [K, C/g, R, S] or
// [K, C/g, R], output [N, K, P, Q]) describe; false when the shapes are not those of a 1-D or
// 2-D convolution. Exposed for tests.
bool conv_shape_from_tensors(const TensorRef& input, const TensorRef& weight,
                             const TensorRef& output, ConvShape& shape);

}  // namespace perfsim::kernels

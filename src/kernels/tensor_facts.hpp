#pragma once
// Small facts about a traced tensor that the op rules need: element count, size, dtype, and
// where it lives. Traces fill TensorRef unevenly (Kineto: shape and dtype only; execution
// traces: everything), so each fact has a fallback.
#include <cstdint>

#include "perfsim/tensor.hpp"

namespace perfsim::kernels {

// Product of the shape; for an empty shape numel, or 1 for a 0-dim tensor with a dtype, or 0
// for a scalar argument (no dtype).
std::int64_t tensor_elements(const TensorRef& tensor);
// The dtype, or one guessed from the element size (4 -> fp32, 2 -> fp16, 8 -> int64).
DType tensor_dtype(const TensorRef& tensor);
int tensor_element_bytes(const TensorRef& tensor);
double tensor_bytes(const TensorRef& tensor);
// A tensor is on the host only when its device says so; an unknown device counts as GPU.
bool tensor_on_host(const TensorRef& tensor);
bool is_floating(DType dtype);

}  // namespace perfsim::kernels

#include "kernels/tensor_facts.hpp"

namespace perfsim::kernels {

std::int64_t tensor_elements(const TensorRef& tensor) {
  if (tensor.shape.empty())  // a 0-dim tensor has one element; a scalar argument none
    return tensor.numel > 0 ? tensor.numel : (tensor.dtype != DType::kUnknown ? 1 : 0);
  std::int64_t elements = 1;
  for (std::int64_t extent : tensor.shape)
    elements *= extent;
  return elements;
}

DType tensor_dtype(const TensorRef& tensor) {
  if (tensor.dtype != DType::kUnknown)
    return tensor.dtype;
  switch (tensor.element_bytes) {
    case 2:
      return DType::kFloat16;
    case 8:
      return DType::kInt64;
    case 1:
      return DType::kUInt8;
    default:
      return DType::kFloat32;
  }
}

int tensor_element_bytes(const TensorRef& tensor) {
  if (tensor.element_bytes > 0)
    return tensor.element_bytes;
  const int bytes = element_bytes(tensor_dtype(tensor));
  return bytes > 0 ? bytes : 4;
}

double tensor_bytes(const TensorRef& tensor) {
  return static_cast<double>(tensor_elements(tensor)) * tensor_element_bytes(tensor);
}

bool tensor_on_host(const TensorRef& tensor) {
  return tensor.device == "cpu";
}

bool is_floating(DType dtype) {
  switch (dtype) {
    case DType::kFloat64:
    case DType::kFloat32:
    case DType::kTFloat32:
    case DType::kFloat16:
    case DType::kBFloat16:
    case DType::kFloat8:
      return true;
    default:
      return false;
  }
}

}  // namespace perfsim::kernels

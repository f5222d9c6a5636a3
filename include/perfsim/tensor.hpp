#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "perfsim/dtype.hpp"
#include "perfsim/units.hpp"

namespace perfsim {

// A tensor as a trace references it. PyTorch execution traces write tensors as
// [tensor_id, storage_id, offset, numel, element_bytes, device].
struct TensorRef {
  std::int64_t tensor_id = -1;
  std::int64_t storage_id = -1;
  std::int64_t offset_elements = 0;
  std::int64_t numel = 0;
  int element_bytes = 0;
  std::string device;  // "cuda:0", "cpu"
  DType dtype = DType::kUnknown;
  std::vector<std::int64_t> shape;

  Bytes bytes() const { return numel * element_bytes; }
  bool on_gpu() const { return device.rfind("cuda", 0) == 0; }
};

}  // namespace perfsim

#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace perfsim {

enum class DType : std::uint8_t {
  kUnknown,
  kFloat64,
  kFloat32,
  kTFloat32,  // fp32 storage, tf32 tensor-core math
  kFloat16,
  kBFloat16,
  kFloat8,  // e4m3 / e5m2
  kInt64,
  kInt32,
  kInt16,
  kInt8,
  kUInt8,
  kBool,
};

// Element size in bytes (0 for kUnknown).
int element_bytes(DType dtype);

// Short stable name: "fp32", "bf16", "int64", ...
std::string_view dtype_name(DType dtype);

// Parses names used by PyTorch traces and our configs: "float", "Float", "c10::Half",
// "c10::BFloat16", "long int", "Long", "int", "bool", "fp32", "bf16", ... Also accepts the
// execution-trace wrapper "Tensor(float)". Returns nullopt when the name is not a dtype.
std::optional<DType> parse_dtype(std::string_view name);

}  // namespace perfsim

#include "perfsim/dtype.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <utility>

namespace perfsim {

int element_bytes(DType dtype) {
  switch (dtype) {
    case DType::kFloat64:
    case DType::kInt64:
      return 8;
    case DType::kFloat32:
    case DType::kTFloat32:
    case DType::kInt32:
      return 4;
    case DType::kFloat16:
    case DType::kBFloat16:
    case DType::kInt16:
      return 2;
    case DType::kFloat8:
    case DType::kInt8:
    case DType::kUInt8:
    case DType::kBool:
      return 1;
    case DType::kUnknown:
      return 0;
  }
  return 0;
}

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kFloat64:
      return "fp64";
    case DType::kFloat32:
      return "fp32";
    case DType::kTFloat32:
      return "tf32";
    case DType::kFloat16:
      return "fp16";
    case DType::kBFloat16:
      return "bf16";
    case DType::kFloat8:
      return "fp8";
    case DType::kInt64:
      return "int64";
    case DType::kInt32:
      return "int32";
    case DType::kInt16:
      return "int16";
    case DType::kInt8:
      return "int8";
    case DType::kUInt8:
      return "uint8";
    case DType::kBool:
      return "bool";
    case DType::kUnknown:
      return "unknown";
  }
  return "unknown";
}

std::optional<DType> parse_dtype(std::string_view name) {
  constexpr std::string_view kWrapper = "Tensor(";
  if (name.substr(0, kWrapper.size()) == kWrapper && name.size() > kWrapper.size() &&
      name.back() == ')') {
    name = name.substr(kWrapper.size(), name.size() - kWrapper.size() - 1);
  }
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  static constexpr std::array<std::pair<std::string_view, DType>, 34> kNames{{
      {"float", DType::kFloat32},
      {"float32", DType::kFloat32},
      {"fp32", DType::kFloat32},
      {"tf32", DType::kTFloat32},
      {"double", DType::kFloat64},
      {"float64", DType::kFloat64},
      {"fp64", DType::kFloat64},
      {"c10::half", DType::kFloat16},
      {"half", DType::kFloat16},
      {"float16", DType::kFloat16},
      {"fp16", DType::kFloat16},
      {"c10::bfloat16", DType::kBFloat16},
      {"bfloat16", DType::kBFloat16},
      {"bf16", DType::kBFloat16},
      {"fp8", DType::kFloat8},
      {"c10::float8_e4m3fn", DType::kFloat8},
      {"c10::float8_e5m2", DType::kFloat8},
      {"float8", DType::kFloat8},
      {"long int", DType::kInt64},
      {"long", DType::kInt64},
      {"int64", DType::kInt64},
      {"int64_t", DType::kInt64},
      {"int", DType::kInt32},
      {"int32", DType::kInt32},
      {"short", DType::kInt16},
      {"int16", DType::kInt16},
      {"signed char", DType::kInt8},
      {"int8", DType::kInt8},
      {"char", DType::kInt8},
      {"unsigned char", DType::kUInt8},
      {"uint8", DType::kUInt8},
      {"byte", DType::kUInt8},
      {"bool", DType::kBool},
      {"c10::complex<float>", DType::kUnknown},
  }};
  for (const auto& [spelling, dtype] : kNames) {
    if (lower == spelling)
      return dtype;
  }
  return std::nullopt;
}

}  // namespace perfsim

#include "generators/llm/llm_gradient_dtype.hpp"

#include "perfsim/error.hpp"

namespace perfsim::generators::llm {

DType main_gradient_dtype(std::string_view requested, const TransformerConfig& model,
                          const std::string& flag) {
  if (requested.empty() || requested == "auto")
    return model.dtype == DType::kFloat16 ? DType::kFloat16 : DType::kFloat32;
  if (requested == "fp32")
    return DType::kFloat32;
  if (requested == "bf16")
    return DType::kBFloat16;
  if (requested == "fp16")
    return DType::kFloat16;
  throw InputError(flag, "",
                   "must be auto, fp32, bf16 or fp16, got \"" + std::string(requested) + "\"");
}

}  // namespace perfsim::generators::llm

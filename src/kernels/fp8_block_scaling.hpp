#pragma once
#include <string_view>

namespace perfsim {

// An FP8 GEMM whose operands carry a scale per block (Transformer Engine's Float8BlockScaling):
// its main loop applies the two blocks' scales to each 128-deep partial sum and accumulates in
// FP32, forward as backward. Integer op attribute, 1 when set: written by the LLM generator
// (RankTraceBuilder::set_fp8_block_scaling), read by the kernel registry.
inline constexpr std::string_view kFp8BlockScalingAttribute = "fp8_block_scaling";

}  // namespace perfsim

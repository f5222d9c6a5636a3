#pragma once
// The dtype of the main gradients (accumulated over micro-batches, reduced over DP, read by
// the optimizer), chosen as Megatron-LM chooses it: bf16 training forces
// accumulate_allreduce_grads_in_fp32 (megatron/training/arguments.py: "accumulate and
// all-reduce gradients in fp32 for bfloat16 data type"), so fp32 unless --grad-reduce-in-bf16;
// fp16 training keeps fp16 gradients unless --accumulate-allreduce-grads-in-fp32. The FP8
// recipe trains with bf16 parameters, so it follows bf16.
#include <string>
#include <string_view>

#include "generators/llm/llm_model_config.hpp"
#include "perfsim/dtype.hpp"

namespace perfsim::generators::llm {

// `requested` is "fp32", "bf16", "fp16", or "auto" or "" (Megatron's default for the model's
// dtype);
// throws InputError(flag, "", problem) for anything else.
DType main_gradient_dtype(std::string_view requested, const TransformerConfig& model,
                          const std::string& flag);

}  // namespace perfsim::generators::llm

// Megatron-LM's choice of main-gradient dtype (llm_gradient_dtype.hpp): fp32 for bf16 (and the
// FP8 recipe's bf16 parameters), fp16 for fp16, unless the command line names one.
#include <gtest/gtest.h>

#include "generators/llm/llm_gradient_dtype.hpp"
#include "perfsim/error.hpp"

namespace perfsim::generators::llm {
namespace {

TransformerConfig trained_in(DType dtype) {
  TransformerConfig model;
  model.dtype = dtype;
  return model;
}

TEST(LlmGradientDtype, FollowsMegatronsDefaultForTheTrainingDtype) {
  EXPECT_EQ(main_gradient_dtype("auto", trained_in(DType::kBFloat16), "f"), DType::kFloat32);
  EXPECT_EQ(main_gradient_dtype("", trained_in(DType::kFloat8), "f"), DType::kFloat32);
  EXPECT_EQ(main_gradient_dtype("auto", trained_in(DType::kFloat16), "f"), DType::kFloat16);
}

TEST(LlmGradientDtype, ANamedDtypeWins) {
  EXPECT_EQ(main_gradient_dtype("bf16", trained_in(DType::kBFloat16), "f"), DType::kBFloat16);
  EXPECT_EQ(main_gradient_dtype("fp32", trained_in(DType::kFloat16), "f"), DType::kFloat32);
  EXPECT_EQ(main_gradient_dtype("fp16", trained_in(DType::kFloat16), "f"), DType::kFloat16);
  try {
    main_gradient_dtype("int8", trained_in(DType::kBFloat16), "--grad-reduce-dtype");
    FAIL() << "int8 accepted";
  } catch (const InputError& error) {
    EXPECT_EQ(error.file(), "--grad-reduce-dtype");
  }
}

}  // namespace
}  // namespace perfsim::generators::llm

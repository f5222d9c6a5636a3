// The FP8 sequence-parallel all-gather as Transformer Engine runs it (README "The FP8
// sequence-parallel all-gather as Transformer Engine runs it"): on by default; the forward
// casts the local rows and gathers FP8 (half of bf16's bytes); the backward re-gathers the FP8
// rows the forward saved without casting them again. Exact counts and bytes on the tiny GPT at
// TP 2 with SP (8 layers, h 256, s 128, micro-batch 2, 16 micro-batches).
#include <gtest/gtest.h>

#include <string>

#include "generators/llm/llm_rank_generator.hpp"
#include "support/op_phase.hpp"
#include "support/tiny_llm.hpp"

namespace perfsim::generators::llm {
namespace {

using test_support::op_phase;

struct GatherCounts {
  int casts = 0;           // te::cast_transpose, every phase
  int backward_casts = 0;  // of them, in the backward
  Bytes cast_read = 0;     // bytes the casts read
  int gathers = 0;         // TP all-gathers of the micro-batches' activations
  Bytes gather_bytes = 0;  // bytes each rank sends in them
};

GatherCounts count(const Trace& trace) {
  GatherCounts c;
  for (const Op& op : trace.ops) {
    const std::string name = op_phase(op);
    if (op.name == "te::cast_transpose") {
      ++c.casts;
      c.backward_casts += name == "backward" ? 1 : 0;
      c.cast_read += op.inputs.at(0).bytes();
    }
    if (op.comm && op.comm->kind == CollectiveKind::kAllGather &&
        (name == "forward" || name == "backward")) {
      ++c.gathers;
      c.gather_bytes += op.comm->bytes_in;
    }
  }
  return c;
}

Trace generate(bool fp8_all_gather) {
  TransformerConfig model = test_support::tiny_gpt();
  model.dtype = DType::kFloat8;
  ParallelConfig parallel{.tp = 2, .pp = 1, .dp = 1, .sequence_parallel = true};
  parallel.fp8_all_gather = fp8_all_gather;
  return generate_llm_rank(model, parallel, 0);
}

TEST(LlmFp8AllGather, IsTheDefault) {
  EXPECT_TRUE(ParallelConfig{}.fp8_all_gather);
}

TEST(LlmFp8AllGather, GathersFp8RowsAndReGathersThemWithoutASecondCast) {
  const GatherCounts fp8 = count(generate(true)), bf16 = count(generate(false));
  constexpr int kSteps = 16 * 8;  // micro-batches x layers
  // The same gathers: QKV's and FC1's inputs, forward and again for the weight gradients (4
  // per step), beside the row-parallel layers' output gradients and the embedding's (bf16 in
  // both). Each input gather sends its rank's 64 x 2 rows of 256: 1 byte each in FP8, 2 in bf16.
  EXPECT_EQ(fp8.gathers, bf16.gathers);
  EXPECT_EQ(bf16.gather_bytes - fp8.gather_bytes, Bytes{kSteps} * 4 * 64 * 2 * 256 * 1);
  // As many casts either way: the FP8 gather casts the local rows before it (forward) and
  // transposes the gathered FP8 rows (backward, for the weight gradients); the bf16 gather
  // casts the gathered bf16 tensor instead. The backward casts no local rows again.
  EXPECT_EQ(fp8.casts, bf16.casts);
  EXPECT_EQ(fp8.backward_casts, bf16.backward_casts);
  // Bytes the casts read per step: forward, QKV and FC1 read their local bf16 rows (128 x 256
  // x 2) instead of the gathered ones (256 x 256 x 2); backward, the two weight-gradient
  // transposes read the gathered FP8 rows (256 x 256 x 1) instead of bf16.
  EXPECT_EQ(bf16.cast_read - fp8.cast_read,
            Bytes{kSteps} * (2 * (256 * 256 * 2 - 128 * 256 * 2) + 2 * (256 * 256 * 1)));
}

}  // namespace
}  // namespace perfsim::generators::llm

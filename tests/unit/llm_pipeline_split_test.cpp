// Megatron-Core's pipeline split (generators/llm/llm_pipeline_split.hpp) on small cases worked
// out by hand: layers per (stage, chunk) against get_num_layers_to_build and
// get_transformer_layer_offset, the ops each stage's rank runs, the memory closed form per
// stage, the planner and RUNS.csv accepting the switches, and the direction of the effect: with
// an embedding and a loss that each cost a layer, lighter first and last stages balance the
// pipeline and shorten the iteration.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "generators/llm/llm_pipeline_split.hpp"
#include "generators/llm/llm_rank_generator.hpp"
#include "memory/llm_memory.hpp"
#include "mpi_sim/engine/collective_matching.hpp"
#include "mpi_sim/engine/rank_program.hpp"
#include "perfsim/error.hpp"
#include "planner/layout_enumerator.hpp"
#include "support/free_collectives.hpp"
#include "support/generated_llm_iteration.hpp"
#include "support/tiny_llm.hpp"
#include "validation/run_table.hpp"

namespace perfsim::generators::llm {
namespace {

TransformerConfig tiny_gpt(int layers) {
  TransformerConfig model = test_support::tiny_gpt();  // 16 micro-batches at DP 1
  model.layers = layers;
  model.attention = AttentionKernel::kUnfused;
  model.dropout = true;
  return model;
}

ParallelConfig pipeline(int stages, int chunks) {
  ParallelConfig parallel;
  parallel.pp = stages;
  parallel.virtual_stages = chunks;
  return parallel;
}

TEST(PipelineSplit, EmbeddingAndLossCountedAsLayersLlama405bOnPp8Vp8) {
  TransformerConfig model = tiny_gpt(126);
  ParallelConfig parallel = pipeline(8, 8);
  EXPECT_THROW(virtual_stage_layers(model, parallel), InputError);  // 126 % 64
  parallel.account_for_embedding = true;
  parallel.account_for_loss = true;
  const std::vector<int> layers = virtual_stage_layers(model, parallel);
  ASSERT_EQ(layers.size(), 64u);
  EXPECT_EQ(layers.front(), 1);  // the embedding and one layer
  EXPECT_EQ(layers.back(), 1);   // one layer and the loss
  for (std::size_t v = 1; v + 1 < layers.size(); ++v)
    EXPECT_EQ(layers[v], 2) << "virtual stage " << v;
  EXPECT_EQ(layers_of_stage(model, parallel, 0), 15);
  EXPECT_EQ(layers_of_stage(model, parallel, 3), 16);
  EXPECT_EQ(layers_of_stage(model, parallel, 7), 15);
  // Megatron's offset: vp_stage x (128 / 8) + pp_rank x 2, less the embedding after (0, 0).
  EXPECT_EQ(stage_layers(model, parallel, 0, 0).first, 0);
  EXPECT_EQ(stage_layers(model, parallel, 0, 0).last, 1);
  EXPECT_EQ(stage_layers(model, parallel, 1, 0).first, 1);
  EXPECT_EQ(stage_layers(model, parallel, 0, 1).first, 15);
  EXPECT_EQ(stage_layers(model, parallel, 3, 2).first, 2 * 16 + 3 * 2 - 1);
  EXPECT_EQ(stage_layers(model, parallel, 7, 7).first, 7 * 16 + 7 * 2 - 1);
  EXPECT_EQ(stage_layers(model, parallel, 7, 7).last, 126);
  // Without interleaving: 128 / 8 = 16 per stage, 15 on the first and the last.
  parallel.virtual_stages = 1;
  EXPECT_EQ(virtual_stage_layers(model, parallel),
            (std::vector<int>{15, 16, 16, 16, 16, 16, 16, 15}));
  // Only the loss: 127 / 8 does not split.
  parallel.account_for_embedding = false;
  EXPECT_THROW(virtual_stage_layers(model, parallel), InputError);
}

TEST(PipelineSplit, FirstAndLastStageLayersSplitTheRestEvenly) {
  // 12 layers, PP 4, V 2, first 2 and last 2: the middle stages hold (12 - 4) / 2 = 4, each
  // chunk half its stage's.
  TransformerConfig model = tiny_gpt(12);
  ParallelConfig parallel = pipeline(4, 2);
  parallel.first_stage_layers = 2;
  parallel.last_stage_layers = 2;
  EXPECT_EQ(virtual_stage_layers(model, parallel), (std::vector<int>{1, 2, 2, 1, 1, 2, 2, 1}));
  // Megatron's offset for pp_rank 2, vp_stage 1: 1 x (1 + 4 + 1) + 1 + (2 - 1) x 4 / 2 = 9.
  EXPECT_EQ(stage_layers(model, parallel, 2, 1).first, 9);
  EXPECT_EQ(stage_layers(model, parallel, 2, 1).last, 11);
  // Only the first stage given: 7 layers on PP 3, first 1 -> 3 and 3.
  TransformerConfig seven = tiny_gpt(7);
  ParallelConfig first_only = pipeline(3, 1);
  first_only.first_stage_layers = 1;
  EXPECT_EQ(virtual_stage_layers(seven, first_only), (std::vector<int>{1, 3, 3}));
  // Megatron's checks: a stage's layers divide over its chunks, the middle splits evenly, and
  // the uneven split and the embedding/loss accounting exclude each other.
  parallel.first_stage_layers = 3;
  EXPECT_THROW(virtual_stage_layers(model, parallel), InputError);  // 3 over 2 chunks
  parallel.first_stage_layers = 4;                                  // (12 - 6) / 2 = 3 per stage
  EXPECT_THROW(virtual_stage_layers(model, parallel), InputError);
  parallel.first_stage_layers = 2;
  parallel.account_for_loss = true;
  EXPECT_THROW(virtual_stage_layers(model, parallel), InputError);
  EXPECT_THROW(validate(model, parallel), InputError);
}

TEST(PipelineSplit, PpLayersPerStageOrPerVirtualStage) {
  TransformerConfig model = tiny_gpt(12);
  ParallelConfig parallel = pipeline(4, 2);
  parallel.pp_layers = {2, 4, 4, 2};  // per stage, halved over the chunks
  EXPECT_EQ(virtual_stage_layers(model, parallel), (std::vector<int>{1, 2, 2, 1, 1, 2, 2, 1}));
  parallel.pp_layers = {0, 2, 2, 1, 2, 2, 2, 1};  // per virtual stage, chunk-major
  EXPECT_EQ(layers_of_stage(model, parallel, 0), 2);
  EXPECT_EQ(stage_layers(model, parallel, 0, 1).first, 5);
  EXPECT_EQ(stage_layers(model, parallel, 0, 0).first, stage_layers(model, parallel, 0, 0).last);
  parallel.pp_layers = {3, 3, 3, 3};  // 3 does not halve
  EXPECT_THROW(validate(model, parallel), InputError);
  parallel.pp_layers = {0, 2, 2, 2, 0, 2, 2, 2};  // stage 0 would hold nothing
  EXPECT_THROW(validate(model, parallel), InputError);
  parallel.pp_layers = {4, 4, 4};  // three entries for four stages
  EXPECT_THROW(validate(model, parallel), InputError);
}

int count_ops(const Trace& trace, std::string_view name) {
  return static_cast<int>(std::count_if(trace.ops.begin(), trace.ops.end(),
                                        [&](const Op& op) { return op.name == name; }));
}

TEST(PipelineSplit, OpsPerRankFollowTheStageLayers) {
  // 6 layers + embedding + loss = 8 on PP 4: stages hold 1, 2, 2, 1 layers. 16 micro-batches;
  // 12 aten::mm per layer and micro-batch (4 forward, 8 backward), the LM head's 3 (1 + 2) on
  // the last stage.
  TransformerConfig model = tiny_gpt(6);
  ParallelConfig parallel = pipeline(4, 1);
  parallel.account_for_embedding = true;
  parallel.account_for_loss = true;
  const int stage_layer_counts[] = {1, 2, 2, 1};
  for (int stage = 0; stage < 4; ++stage) {
    const Trace trace = generate_llm_rank(model, parallel, stage);
    EXPECT_EQ(count_ops(trace, "aten::mm"),
              16 * (12 * stage_layer_counts[stage] + (stage == 3 ? 3 : 0)))
        << "stage " << stage;
    EXPECT_EQ(count_ops(trace, "aten::embedding"), stage == 0 ? 16 : 0);
  }
  // Interleaved, V 2: 8 virtual stages of one layer, but the first holds only the embedding and
  // the last only the loss. Stage 0: chunks of 0 and 1 layers; stage 3: 1 and 0.
  parallel.virtual_stages = 2;
  const int interleaved_counts[] = {1, 2, 2, 1};
  std::vector<Trace> traces;
  for (int stage = 0; stage < 4; ++stage) {
    traces.push_back(generate_llm_rank(model, parallel, stage));
    EXPECT_EQ(count_ops(traces.back(), "aten::mm"),
              16 * (12 * interleaved_counts[stage] + (stage == 3 ? 3 : 0)))
        << "stage " << stage;
  }
}

// Layer GEMMs cost `gemm_us`; the embedding and the LM head cost one layer's worth each (a
// forward of 6 GEMMs, a backward of 12), everything else nothing: a heavy embedding and loss.
class LayerPricedKernels final : public KernelDurationSource {
 public:
  LayerPricedKernels(DurationUs gemm_us, bool heavy_ends) : gemm_us_(gemm_us), heavy_(heavy_ends) {}
  DurationUs kernel_duration_us(const Op& op, const Kernel& kernel) const override {
    const Attribute* layer = op.find_attribute("layer");
    const bool in_layer = layer && std::get<std::int64_t>(layer->value) >= 0;
    if (kernel.category == KernelCategory::kGemm && in_layer)
      return gemm_us_;
    if (!heavy_)
      return 0;
    if (op.name == "aten::embedding")
      return 6 * gemm_us_;
    if (op.name == "aten::embedding_dense_backward")
      return 12 * gemm_us_;
    if (kernel.category == KernelCategory::kGemm)  // the head: 1 GEMM forward, 2 backward
      return 6 * gemm_us_;
    return 0;
  }
  std::string_view name() const override { return "layer-priced"; }

 private:
  DurationUs gemm_us_;
  bool heavy_;
};

using test_support::FreeCollectives;

double iteration_us(const TransformerConfig& model, const ParallelConfig& parallel,
                    bool heavy_ends) {
  LayerPricedKernels kernels(10, heavy_ends);
  FreeCollectives collectives;
  HostOverheads overheads;
  overheads.launch.kernel_gap_us = 0;
  return test_support::slowest_generated_iteration_us(model, parallel, {&kernels, &collectives, {}},
                                                      overheads);
}

TEST(PipelineSplit, LighterEndStagesShortenTheIterationWhenEmbeddingAndLossAreHeavy) {
  TransformerConfig model = tiny_gpt(6);
  model.global_batch = 16;  // 8 micro-batches of 2
  const int m = 8, p = 4;
  ParallelConfig accounted = pipeline(p, 1);
  accounted.account_for_embedding = true;
  accounted.account_for_loss = true;  // 1, 2, 2, 1 layers: every stage 2 layers' work
  ParallelConfig heavy_ends = pipeline(p, 1);
  heavy_ends.pp_layers = {2, 1, 1, 2};  // the embedding and loss on top of 2 layers
  // Megatron's other way to the same split: first and last stage 1 layer each.
  ParallelConfig first_last = pipeline(p, 1);
  first_last.first_stage_layers = 1;
  first_last.last_stage_layers = 1;
  ASSERT_EQ(virtual_stage_layers(model, first_last), virtual_stage_layers(model, accounted));
  // Balanced: 1F1B takes exactly (M + P - 1)(F + B) with F + B two layers of 18 GEMMs.
  const double balanced_us = (m + p - 1) * 2 * 18 * 10.0;
  EXPECT_NEAR(iteration_us(model, accounted, true), balanced_us, 1e-6);
  // The heavy ends take three layers' work: at least M x 3 layers.
  const double heavy_us = iteration_us(model, heavy_ends, true);
  EXPECT_GE(heavy_us, m * 3 * 18 * 10.0);
  EXPECT_LT(iteration_us(model, accounted, true), heavy_us);
  // The gain is the embedding's and the loss's cost: with both free, the accounted split's
  // first and last stages idle beside its 2-layer middle ones and it gains nothing.
  EXPECT_GE(iteration_us(model, accounted, false), m * 2 * 18 * 10.0);
  EXPECT_LT(iteration_us(model, accounted, false), iteration_us(model, accounted, true));
}

}  // namespace
}  // namespace perfsim::generators::llm

namespace perfsim::memory {
namespace {

namespace llm = generators::llm;

TEST(PipelineSplitMemory, EachStageHoldsItsOwnLayers) {
  llm::TransformerConfig model = llm::tiny_gpt(6);
  llm::ParallelConfig parallel = llm::pipeline(4, 1);
  parallel.account_for_embedding = true;
  parallel.account_for_loss = true;
  const DeviceMemory device{};
  const LlmMemoryEstimate estimate = estimate_llm_memory(model, parallel, device);
  const double per_layer = parameters_per_layer(model, parallel);
  const double act = activation_bytes_per_layer(model, parallel);
  ASSERT_EQ(estimate.stages.size(), 4u);
  EXPECT_EQ(estimate.stages[0].layers, 1);
  EXPECT_EQ(estimate.stages[1].layers, 2);
  EXPECT_EQ(estimate.stages[3].layers, 1);
  // Middle stages: 2 layers' parameters; stage i holds min(4 - i, 16) micro-batches.
  EXPECT_DOUBLE_EQ(estimate.stages[1].parameter_count, 2 * per_layer);
  EXPECT_EQ(estimate.stages[1].activation_bytes, static_cast<Bytes>(std::llround(2 * act * 3)));
  EXPECT_EQ(estimate.stages[2].activation_bytes, static_cast<Bytes>(std::llround(2 * act * 2)));
  // The first stage: one layer plus the word (2048 x 256) and position (128 x 256) embeddings.
  EXPECT_DOUBLE_EQ(estimate.stages[0].parameter_count, per_layer + 2048.0 * 256 + 128.0 * 256);
}

TEST(PipelineSplitMemory, InterleavedChunksWeightedByTheirForwardsInFlight) {
  // 6 layers + 2 on PP 4 x V 2: stage 0's chunks hold 0 (the embedding) and 1 layer. Its
  // schedule holds (4 - 1) x 2 + (2 - 1) x 4 + 1 = 11 forwards at the peak, forward k of chunk
  // (k / 4) % 2: 7 of chunk 0 and 4 of chunk 1, so 4 layers' activations, where the equal-chunk
  // factor would give 1 layer x 4 x (1 + 3/8) = 5.5.
  llm::TransformerConfig model = llm::tiny_gpt(6);
  llm::ParallelConfig parallel = llm::pipeline(4, 2);
  parallel.account_for_embedding = true;
  parallel.account_for_loss = true;
  const DeviceMemory device{};
  const double act = activation_bytes_per_layer(model, parallel);
  const double in_flight = 4 * (1 + 3.0 / 8);
  // The first stage's embedding dropout mask: s b h bytes per micro-batch in flight (no SP).
  const double mask = 128.0 * 2 * 256;
  const LlmMemoryEstimate estimate = estimate_llm_memory(model, parallel, device);
  EXPECT_DOUBLE_EQ(estimate.stages[0].microbatches_in_flight, in_flight);
  // Within a byte: the chunk weights (4 of 11 forwards, times V) are not exact in binary.
  EXPECT_NEAR(static_cast<double>(estimate.stages[0].activation_bytes), 4 * act + mask * in_flight,
              1.0);
  // Equal chunks keep the paper's factor exactly: 8 layers on PP 4 x V 2, no accounting.
  llm::TransformerConfig eight = llm::tiny_gpt(8);
  const LlmMemoryEstimate even = estimate_llm_memory(eight, llm::pipeline(4, 2), device);
  EXPECT_EQ(even.stages[1].activation_bytes,
            static_cast<Bytes>(std::llround(2 * act * 3 * (1 + 3.0 / 8))));
}

}  // namespace
}  // namespace perfsim::memory

namespace perfsim::planner {
namespace {

TEST(PipelineSplitPlanner, AccountingAdmitsStagesThatDivideLayersPlusTwo) {
  generators::llm::TransformerConfig model = generators::llm::tiny_gpt(6);
  EnumerationLimits limits;
  limits.gpus = 4;
  limits.max_virtual_stages = 2;
  auto has_pp4 = [](const std::vector<generators::llm::ParallelConfig>& layouts) {
    return std::any_of(layouts.begin(), layouts.end(),
                       [](const auto& layout) { return layout.pp == 4; });
  };
  // 6 % 4: PP 4 only with the first / last stage split (1, 2, 2, 1; README "Layout planner"),
  // uninterleaved.
  for (const auto& layout : enumerate_layouts(model, limits)) {
    if (layout.pp == 4) {
      EXPECT_TRUE(layout.first_stage_layers == 1 && layout.last_stage_layers == 1 &&
                  layout.virtual_stages == 1);
    }
  }
  EXPECT_TRUE(has_pp4(enumerate_layouts(model, limits)));
  limits.account_for_embedding = true;
  limits.account_for_loss = true;
  const auto layouts = enumerate_layouts(model, limits);
  EXPECT_TRUE(has_pp4(layouts));  // 8 % 4, and 8 % (4 x 2) interleaved
  for (const auto& layout : layouts) {
    EXPECT_TRUE(layout.account_for_embedding && layout.account_for_loss);
    EXPECT_EQ(layout.first_stage_layers, 0);
    EXPECT_EQ((6 + 2) % (layout.pp * layout.virtual_stages), 0);
  }
}

}  // namespace
}  // namespace perfsim::planner

namespace perfsim::validation {
namespace {

TEST(PipelineSplitRunTable, ReadsTheSplitColumns) {
  const std::string csv =
      "name,model,gpus,tp,pp,dp,virtual_stages,micro_batch,global_batch,device,topology,"
      "first_stage_layers,last_stage_layers,account_for_embedding,account_for_loss,"
      "measured_iteration_s\n"
      "a,llama3-8b,4,1,4,1,1,1,8,H100-SXM,hgx-h100,7,7,,,1.0\n"
      "b,llama3-8b,4,1,4,1,2,1,8,H100-SXM,hgx-h100,,,1,1,1.0\n";
  const RunTable table = parse_run_table(csv, "runs.csv");
  ASSERT_EQ(table.rows.size(), 2u);
  EXPECT_EQ(table.rows[0].error, "");
  EXPECT_EQ(table.rows[0].first_stage_layers, 7);
  EXPECT_EQ(table.rows[0].last_stage_layers, 7);
  EXPECT_FALSE(table.rows[0].account_for_embedding);
  EXPECT_TRUE(table.rows[1].account_for_embedding);
  EXPECT_TRUE(table.rows[1].account_for_loss);
  EXPECT_EQ(table.rows[1].first_stage_layers, 0);
}

}  // namespace
}  // namespace perfsim::validation

// Mixture of experts and expert parallelism: model-file fields and their errors, Megatron's
// layout rules, exact op counts and all-to-all bytes of a small hand-computable case, the
// expert gradients' group, the memory closed form's response to EP, and the planner's EP search.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>

#include "generators/llm/llm_flops.hpp"
#include "generators/llm/llm_rank_generator.hpp"
#include "memory/llm_memory.hpp"
#include "perfsim/error.hpp"
#include "planner/layout_enumerator.hpp"
#include "support/op_phase.hpp"
#include "support/tiny_llm.hpp"

namespace perfsim::generators::llm {
namespace {

using test_support::op_phase;

const std::string kModels = std::string(PERFSIM_SOURCE_DIR) + "/configs/models/";

using test_support::tiny_moe;

double flops_of(const Op& op) {
  return std::get<double>(op.find_attribute("flops")->value);
}

std::string field_of_error(const std::string& json) {
  try {
    parse_transformer_config(json, "m.json");
  } catch (const InputError& error) {
    return error.what();
  }
  return "";
}

TEST(LlmMoeModelFile, FieldsParseAndErrorsNameTheField) {
  const std::string base =
      R"({"schema":"perfsim-llm-model/1","name":"x","layers":4,"hidden":64,"heads":4,)"
      R"("ffn_hidden":256,"vocab":128,"seq_len":32)";
  const TransformerConfig moe = parse_transformer_config(
      base + R"(,"num_experts":8,"top_k":2,"moe_ffn_hidden":32,"num_shared_experts":2,)"
             R"("capacity_factor":1.25,"first_k_dense":1})",
      "m.json");
  EXPECT_EQ(moe.moe.num_experts, 8);
  EXPECT_EQ(moe.moe.shared_expert_ffn_hidden, 64);
  EXPECT_DOUBLE_EQ(moe.moe.capacity_factor, 1.25);
  EXPECT_FALSE(moe.is_moe_layer(0));
  EXPECT_TRUE(moe.is_moe_layer(1));
  EXPECT_EQ(moe.moe_layer_count(), 3);
  EXPECT_NE(field_of_error(base + R"(,"top_k":2})").find("top_k"), std::string::npos);
  EXPECT_NE(field_of_error(base + R"(,"num_experts":4,"top_k":5,"moe_ffn_hidden":32})")
                .find("m.json: top_k"),
            std::string::npos);
  EXPECT_NE(field_of_error(base + R"(,"num_experts":4,"top_k":2})").find("moe_ffn_hidden"),
            std::string::npos);
  EXPECT_NE(
      field_of_error(base + R"(,"num_experts":4,"top_k":2,"moe_ffn_hidden":32,"first_k_dense":4})")
          .find("first_k_dense"),
      std::string::npos);
}

TEST(LlmMoeModelFile, ShippedFilesLoad) {
  const TransformerConfig mixtral = load_transformer_config(kModels + "mixtral-8x7b.json");
  EXPECT_EQ(mixtral.moe.num_experts, 8);
  EXPECT_EQ(mixtral.moe.top_k, 2);
  EXPECT_EQ(mixtral.moe_layer_count(), 32);
  const TransformerConfig deepseek = load_transformer_config(kModels + "deepseek-v2-lite.json");
  EXPECT_EQ(deepseek.moe.num_experts, 64);
  EXPECT_EQ(deepseek.moe.top_k, 6);
  EXPECT_EQ(deepseek.moe.shared_expert_ffn_hidden, 2 * 1408);
  EXPECT_EQ(deepseek.moe_layer_count(), 26);
}

TEST(LlmMoeLayout, MegatronRulesAreErrors) {
  const TransformerConfig model = tiny_moe();
  auto field = [&](const ParallelConfig& parallel) {
    try {
      validate(model, parallel);
    } catch (const InputError& error) {
      return std::string(error.what());
    }
    return std::string();
  };
  EXPECT_EQ(field({.dp = 4, .ep = 4}), "");
  EXPECT_NE(field({.dp = 4, .ep = 3}).find("ep"), std::string::npos);  // experts 4
  EXPECT_NE(field({.dp = 2, .ep = 4}).find("DP x CP"), std::string::npos);
  EXPECT_NE(field({.tp = 2, .dp = 4, .ep = 2}).find("sequence_parallel"), std::string::npos);
  EXPECT_NE(field({.dp = 4, .ep = 2, .moe_imbalance = 2.5}).find("moe_imbalance"),
            std::string::npos);  // at most experts / top_k = 2
  TransformerConfig dense = model;
  dense.moe = {};
  try {
    validate(dense, ParallelConfig{.dp = 4, .ep = 2});
    ADD_FAILURE() << "EP on a dense model must be an error";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("mixture-of-experts"), std::string::npos);
  }
}

TEST(LlmMoeLayout, ExpertGroupsCarvedOutOfDataParallel) {
  // TP 2, CP 1, DP 4, EP 2: d = dp rank; EP groups pair d {0,1}, {2,3}; expert-DP {0,2}, {1,3}.
  const ParallelConfig parallel{.tp = 2, .pp = 1, .dp = 4, .ep = 2, .sequence_parallel = true};
  std::vector<int> ep_ranks, edp_ranks;
  for (const ProcessGroup& group : process_groups_of(parallel, 2)) {  // tp 0, dp 1
    if (group.name.rfind("ep/", 0) == 0)
      ep_ranks = group.ranks;
    if (group.name.rfind("edp/", 0) == 0)
      edp_ranks = group.ranks;
  }
  EXPECT_EQ(ep_ranks, (std::vector<int>{0, 2}));
  EXPECT_EQ(edp_ranks, (std::vector<int>{2, 6}));
}

// Per layer and micro-batch: forward 2 grouped GEMMs and 2 all-to-alls, backward 4 and 2.
TEST(LlmMoeTrace, ExactOpCountsAndAllToAllBytes) {
  const TransformerConfig model = tiny_moe();
  for (const double imbalance : {1.0, 1.5}) {
    const ParallelConfig parallel{.dp = 4, .ep = 2, .moe_imbalance = imbalance};
    const Trace trace = generate_llm_rank(model, parallel, 0);
    int grouped = 0, all_to_all = 0, probability_all_to_all = 0, routers = 0;
    double forward_expert_flops = 0;
    const Bytes dispatched_bytes = 32 * 2 * 64 * 2;  // s b x top_k tokens of h bf16
    const auto received_rows = static_cast<Bytes>(std::ceil(32 * 2 * imbalance));
    for (const Op& op : trace.ops) {
      if (op.name == "te::grouped_gemm") {
        ++grouped;
        if (op_phase(op) == "forward")
          forward_expert_flops += flops_of(op);
      }
      if (op.name == "aten::topk")
        ++routers;
      if (op.comm && op.comm->kind == CollectiveKind::kAllToAllv &&
          op.comm->dtype == DType::kFloat32) {
        // The permuted probabilities (forward) and their gradients (backward), fp32 per row.
        ++probability_all_to_all;
        EXPECT_EQ(std::min(op.comm->bytes_in, op.comm->bytes_out), 32 * 2 * 4);
        EXPECT_EQ(std::max(op.comm->bytes_in, op.comm->bytes_out), received_rows * 4);
      } else if (op.comm && op.comm->kind == CollectiveKind::kAllToAllv) {
        ++all_to_all;
        EXPECT_EQ(op.comm->group_size, 2);
        EXPECT_EQ(op.comm->process_group.rfind("ep/", 0), 0u);
        // One side is this rank's dispatched tokens, the other the busiest rank's share.
        const Bytes small = std::min(op.comm->bytes_in, op.comm->bytes_out);
        const Bytes large = std::max(op.comm->bytes_in, op.comm->bytes_out);
        EXPECT_EQ(small, dispatched_bytes);
        EXPECT_EQ(large, received_rows * 64 * 2);
      }
    }
    EXPECT_EQ(routers, 2 * 2);  // per layer: the routing's top-k and the aux loss's (unfused)
    EXPECT_EQ(grouped, 2 * 6);
    EXPECT_EQ(all_to_all, 2 * 4);
    EXPECT_EQ(probability_all_to_all, 2 * 2);
    // Two experts of 64 x 128 and 128 x 64 on the received rows (32 per expert at balance).
    const double rows = 2.0 * std::ceil(received_rows / 2.0);
    EXPECT_DOUBLE_EQ(forward_expert_flops, 2 * 2 * rows * (64.0 * 128 + 128.0 * 64));
  }
}

TEST(LlmMoeTrace, ExpertGradientsReduceOverExpertDataParallel) {
  TransformerConfig model = tiny_moe();
  // An output layer of its own (untied): the counts below include its weights.
  model.tied_embeddings = false;
  const ParallelConfig parallel{.dp = 4, .ep = 2};
  const Trace trace = generate_llm_rank(model, parallel, 0);
  std::int64_t expert_elements = 0, dense_elements = 0;
  for (const Op& op : trace.ops) {
    if (!op.comm || op.comm->kind != CollectiveKind::kAllReduce)
      continue;
    const std::int64_t elements = op.comm->bytes_in / 4;  // fp32 gradients
    if (op.comm->process_group.rfind("edp/", 0) == 0) {
      EXPECT_EQ(op.comm->group_size, 2);
      expert_elements += elements;
    } else if (op.comm->process_group.rfind("dp/", 0) == 0) {
      EXPECT_EQ(op.comm->group_size, 4);
      dense_elements += elements;
    }
  }
  // 2 layers x 2 local experts x (64 x 128 + 128 x 64).
  EXPECT_EQ(expert_elements, 2 * 2 * (64 * 128 + 128 * 64));
  // 2 layers x (QKV 64 x 192, projection 64 x 64, 2 norms, router 64 x 4) + embedding and LM
  // head 128 x 64 each + final norm 64.
  EXPECT_EQ(dense_elements, 2 * (64 * 192 + 64 * 64 + 128 + 256) + 2 * 128 * 64 + 64);
}

TEST(LlmMoeFlops, ActiveParametersReplaceTheDenseMlp) {
  TransformerConfig model = tiny_moe();
  const double sequences = 1;
  // Router 2 h E + top_k experts' two GEMMs per token instead of the dense MLP's.
  const double expected = layer_forward_flops(model, sequences) +
                          32.0 * (2 * 64 * 4 + 2 * 64 * 2 * 128 * 2 - 2 * 64 * 256 * 2);
  EXPECT_DOUBLE_EQ(moe_layer_forward_flops(model, sequences), expected);
}

TEST(LlmMoeMemory, ExpertParallelismDividesExpertStates) {
  const TransformerConfig model = load_transformer_config(kModels + "mixtral-8x7b.json");
  memory::DeviceMemory device;
  device.capacity_bytes = Bytes{80} << 30;
  ParallelConfig ep1{.tp = 2, .pp = 4, .dp = 8, .sequence_parallel = true, .zero_stage = 1};
  ParallelConfig ep8 = ep1;
  ep8.ep = 8;
  const memory::StageMemory a = memory::estimate_llm_memory(model, ep1, device).stages.at(1);
  const memory::StageMemory b = memory::estimate_llm_memory(model, ep8, device).stages.at(1);
  // 8 layers x 8 experts x 3 x 4096 x 14336 / TP 2, then / EP 8.
  const double experts = 8.0 * 8 * 3 * 4096 * 14336 / 2;
  EXPECT_DOUBLE_EQ(a.expert_parameter_count, experts);
  EXPECT_DOUBLE_EQ(b.expert_parameter_count, experts / 8);
  // Weights (2 bytes) and fp32 main grads (4 bytes) shrink by 7/8 of the experts'; the
  // distributed optimizer's shard is the same (experts / DP 8 against experts / EP 8 / expert-DP
  // 1).
  EXPECT_NEAR(static_cast<double>(a.parameter_bytes - b.parameter_bytes), 2 * experts * 7 / 8, 2);
  EXPECT_NEAR(static_cast<double>(a.gradient_bytes - b.gradient_bytes), 4 * experts * 7 / 8, 2);
  EXPECT_NEAR(static_cast<double>(a.optimizer_bytes), static_cast<double>(b.optimizer_bytes), 2);
  EXPECT_EQ(a.activation_bytes, b.activation_bytes);  // EP moves tokens, not their count
  // Imbalance grows the routed tokens' activations.
  ParallelConfig skewed = ep8;
  skewed.moe_imbalance = 2;
  EXPECT_GT(memory::estimate_llm_memory(model, skewed, device).stages.at(1).activation_bytes,
            b.activation_bytes);
}

TEST(LlmMoePlanner, SearchesExpertParallelism) {
  const TransformerConfig model = load_transformer_config(kModels + "mixtral-8x7b.json");
  planner::EnumerationLimits limits;
  limits.gpus = 64;
  limits.global_batch = 64;
  limits.max_virtual_stages = 1;
  std::set<int> degrees;
  std::set<int> zero_stages;
  for (const ParallelConfig& layout : planner::enumerate_layouts(model, limits)) {
    degrees.insert(layout.ep);
    zero_stages.insert(layout.zero_stage);
    EXPECT_TRUE(layout.tp == 1 || layout.sequence_parallel);
  }
  EXPECT_EQ(degrees, (std::set<int>{1, 2, 4, 8}));
  // ZeRO 3 shards the experts over expert-DP (llm_moe_zero3_test.cpp).
  EXPECT_EQ(zero_stages, (std::set<int>{0, 1, 2, 3}));
}

}  // namespace
}  // namespace perfsim::generators::llm

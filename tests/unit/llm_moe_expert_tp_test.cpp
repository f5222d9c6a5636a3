// Megatron-Core's expert grid with an expert tensor-parallel size (--expert-tensor-parallel-size)
// other than TP, and the router's load-balancing all-reduce over TP x CP (its tp_cp_group):
// the groups each rank joins, the exact collectives and grouped-GEMM shapes of a 2-layer case,
// Megatron's refusals, and the planner's ETP search. Hand-computed on tiny_moe (h 64, 4 experts
// of 128, top-2, sequence 32, micro-batch 1).
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "generators/llm/llm_rank_generator.hpp"
#include "perfsim/error.hpp"
#include "planner/layout_enumerator.hpp"
#include "support/op_phase.hpp"
#include "support/tiny_llm.hpp"

namespace perfsim::generators::llm {
namespace {

using test_support::op_phase;

// test_support::tiny_moe with an output layer of its own (untied): the element counts below
// include its weights.
TransformerConfig tiny_moe() {
  TransformerConfig model = test_support::tiny_moe();
  model.tied_embeddings = false;
  return model;
}

std::vector<int> group_of(const ParallelConfig& parallel, int rank, const std::string& kind) {
  for (const ProcessGroup& group : process_groups_of(parallel, rank))
    if (group.name.rfind(kind, 0) == 0)
      return group.ranks;
  return {};
}

TEST(LlmExpertTensorParallel, ExpertGridGroups) {
  // TP 2, DP 4, EP 2, ETP 1 (8 ranks): the expert grid is ETP 1 x EP 2 x expert-DP 4 in the
  // order tp-cp-ep-dp-pp, so rank = ep + 2 x edp: EP pairs consecutive ranks (the attention
  // layers' TP pairs) and expert-DP strides by 2.
  const ParallelConfig etp1{.tp = 2, .dp = 4, .ep = 2, .etp = 1, .sequence_parallel = true};
  EXPECT_EQ(etp1.expert_gradient_group_size(), 4);
  EXPECT_EQ(group_of(etp1, 0, "tp/"), (std::vector<int>{0, 1}));
  EXPECT_EQ(group_of(etp1, 0, "ep/"), (std::vector<int>{0, 1}));
  EXPECT_EQ(group_of(etp1, 0, "edp/"), (std::vector<int>{0, 2, 4, 6}));
  EXPECT_TRUE(group_of(etp1, 0, "etp/").empty());  // one rank: no collectives, no group
  // The default ETP = TP: rank = etp + 2 (ep + 2 edp); the expert TP group is the TP group.
  const ParallelConfig etp2{.tp = 2, .dp = 4, .ep = 2, .sequence_parallel = true};
  EXPECT_EQ(expert_tp_group_name(etp2, 5), tp_group_name(etp2, 5));
  EXPECT_EQ(group_of(etp2, 0, "ep/"), (std::vector<int>{0, 2}));
  EXPECT_EQ(group_of(etp2, 0, "edp/"), (std::vector<int>{0, 4}));
  // TP 4, ETP 2, EP 2, DP 2: expert grid 2 x 2 x 2; the experts' TP halves the attention's.
  const ParallelConfig split{.tp = 4, .dp = 2, .ep = 2, .etp = 2, .sequence_parallel = true};
  EXPECT_EQ(group_of(split, 0, "tp/"), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(group_of(split, 0, "etp/"), (std::vector<int>{0, 1}));
  EXPECT_EQ(group_of(split, 0, "ep/"), (std::vector<int>{0, 2}));
  EXPECT_EQ(group_of(split, 0, "edp/"), (std::vector<int>{0, 4}));
  EXPECT_EQ(expert_tp_group_name(split, 6), "etp/3");
}

TEST(LlmExpertTensorParallel, MegatronRulesAreErrors) {
  auto problem = [](const TransformerConfig& model, const ParallelConfig& parallel) {
    try {
      validate(model, parallel);
    } catch (const InputError& error) {
      return std::string(error.what());
    }
    return std::string();
  };
  const TransformerConfig model = tiny_moe();
  EXPECT_EQ(problem(model, {.tp = 2, .dp = 4, .ep = 4, .etp = 1, .sequence_parallel = true}), "");
  // ETP x EP must tile TP x CP x DP (8 ranks): 1 x 8 would need 8 experts, 4 x 4 is 16.
  EXPECT_NE(
      problem(model, {.tp = 2, .dp = 4, .ep = 4, .etp = 4, .sequence_parallel = true}).find("etp"),
      std::string::npos);
  // moe_ffn_hidden 128 split over ETP 3.
  EXPECT_NE(problem(model, {.tp = 1, .dp = 3, .ep = 1, .etp = 3}).find("moe_ffn_hidden"),
            std::string::npos);
  TransformerConfig dense = model;
  dense.moe = {};
  EXPECT_NE(problem(dense, {.tp = 2, .dp = 2, .etp = 1}).find("mixture-of-experts"),
            std::string::npos);
}

struct ExpertPath {
  int gathers = 0;          // all-gathers of routed rows (expert TP)
  int reduce_scatters = 0;  // reduce-scatters of expert output rows
  std::set<std::string> groups;
  std::set<int> group_sizes;
  std::vector<std::vector<std::int64_t>> grouped_gemm_weights;  // forward weight operands
  double grouped_gemm_flops = 0;
};

ExpertPath expert_path(const ParallelConfig& parallel, int rank, std::int64_t routed_rows) {
  ExpertPath path;
  const std::vector<std::int64_t> rows{routed_rows, 64};
  for (const Op& op : generate_llm_rank(tiny_moe(), parallel, rank).ops) {
    if (op.name == "te::grouped_gemm") {
      path.grouped_gemm_flops += std::get<double>(op.find_attribute("flops")->value);
      if (op_phase(op) == "forward")
        path.grouped_gemm_weights.push_back(op.inputs.at(1).shape);
    }
    if (!op.comm)
      continue;
    const bool gather =
        op.comm->kind == CollectiveKind::kAllGather && op.inputs.at(0).shape == rows;
    const bool scatter =
        op.comm->kind == CollectiveKind::kReduceScatter && op.outputs.at(0).shape == rows;
    if (!gather && !scatter)
      continue;
    path.gathers += gather ? 1 : 0;
    path.reduce_scatters += scatter ? 1 : 0;
    path.groups.insert(op.comm->process_group);
    path.group_sizes.insert(op.comm->group_size);
    EXPECT_EQ(op.comm->bytes_in, gather ? routed_rows * 64 * 2 : 2 * routed_rows * 64 * 2);
  }
  return path;
}

TEST(LlmExpertTensorParallel, ExpertCollectivesAndGemmShapes) {
  // TP 2 with SP: 16 tokens a rank, 32 routed rows (top-2). ETP 2 gathers them over the TP
  // group before the experts and reduce-scatters after, forward and backward: 2 layers x 2 of
  // each; every local expert (2 at EP 2) holds 64 x 64 of FC1.
  const ExpertPath etp2 =
      expert_path({.tp = 2, .dp = 4, .ep = 2, .sequence_parallel = true}, 0, 32);
  EXPECT_EQ(etp2.gathers, 2 * 2);
  EXPECT_EQ(etp2.reduce_scatters, 2 * 2);
  EXPECT_EQ(etp2.groups, (std::set<std::string>{"tp/0"}));
  EXPECT_EQ(etp2.group_sizes, (std::set<int>{2}));
  EXPECT_EQ(etp2.grouped_gemm_weights.at(0), (std::vector<std::int64_t>{2, 64, 64}));
  // ETP 1: whole experts (64 x 128), no expert-TP collective; the same FLOPs.
  const ExpertPath etp1 =
      expert_path({.tp = 2, .dp = 4, .ep = 2, .etp = 1, .sequence_parallel = true}, 0, 32);
  EXPECT_EQ(etp1.gathers, 0);
  EXPECT_EQ(etp1.reduce_scatters, 0);
  EXPECT_EQ(etp1.grouped_gemm_weights.at(0), (std::vector<std::int64_t>{2, 64, 128}));
  EXPECT_EQ(etp1.grouped_gemm_flops, etp2.grouped_gemm_flops);
  // TP 4, ETP 2: 8 tokens a rank, 16 routed rows gathered over the 2-rank expert TP group of
  // rank 6 (etp/3), not its 4-rank TP group; DP 2 runs 2 micro-batches.
  const ExpertPath split =
      expert_path({.tp = 4, .dp = 2, .ep = 2, .etp = 2, .sequence_parallel = true}, 6, 16);
  EXPECT_EQ(split.gathers, 2 * 2 * 2);
  EXPECT_EQ(split.reduce_scatters, 2 * 2 * 2);
  EXPECT_EQ(split.groups, (std::set<std::string>{"etp/3"}));
  EXPECT_EQ(split.group_sizes, (std::set<int>{2}));
  EXPECT_EQ(split.grouped_gemm_weights.at(0), (std::vector<std::int64_t>{2, 64, 64}));
}

TEST(LlmExpertTensorParallel, ExpertGradientsReduceOverExpertDataParallel) {
  // ETP 1 at TP 2, DP 4, EP 2: each rank holds 2 whole experts (2 x 2 x 64 x 128 parameters),
  // reduced over expert-DP 4 (edp/<i>); at ETP 2 half of that over expert-DP 2.
  auto expert_gradient_elements = [](const ParallelConfig& parallel, std::string& group) {
    std::int64_t elements = 0;
    for (const Op& op : generate_llm_rank(tiny_moe(), parallel, 0).ops)
      if (op.comm && op.comm->process_group.rfind("edp/", 0) == 0) {
        group = op.comm->process_group + " of " + std::to_string(op.comm->group_size);
        elements += op.inputs.at(0).numel;
      }
    return elements;
  };
  std::string group;
  EXPECT_EQ(expert_gradient_elements(
                {.tp = 2, .dp = 4, .ep = 2, .etp = 1, .sequence_parallel = true}, group),
            2 * 2 * 2 * 64 * 128);
  EXPECT_EQ(group, "edp/0 of 4");
  EXPECT_EQ(expert_gradient_elements({.tp = 2, .dp = 4, .ep = 2, .sequence_parallel = true}, group),
            2 * 2 * 2 * 64 * 64);
  EXPECT_EQ(group, "edp/0 of 2");
}

// The router's token counts: one all-reduce of 4 fp32 per MoE layer and micro-batch, over the
// ranks that hold the other parts of the same sequences.
std::map<std::string, int> router_all_reduces(const ParallelConfig& parallel) {
  TransformerConfig model = tiny_moe();
  model.attention = AttentionKernel::kFlash;  // context parallelism needs it
  model.global_batch = parallel.dp;           // one micro-batch
  std::map<std::string, int> groups;
  for (const Op& op : generate_llm_rank(model, parallel, 0).ops)
    if (op.comm && op.comm->kind == CollectiveKind::kAllReduce && op.comm->bytes_in == 4 * 4)
      ++groups[op.comm->process_group + " of " + std::to_string(op.comm->group_size)];
  return groups;
}

TEST(LlmRouterLoss, TokenCountsAllReducedOverTensorTimesContext) {
  using Groups = std::map<std::string, int>;
  EXPECT_EQ(router_all_reduces({.tp = 2, .dp = 4, .ep = 2, .sequence_parallel = true}),
            (Groups{{"tp/0 of 2", 2}}));
  // CP 2: TP x CP = 4 ranks, {0, 1, 2, 3} in the default order.
  const ParallelConfig tp_cp{.tp = 2, .dp = 2, .cp = 2, .ep = 2, .sequence_parallel = true};
  EXPECT_EQ(router_all_reduces(tp_cp), (Groups{{"tpcp/0 of 4", 2}}));
  EXPECT_EQ(group_of(tp_cp, 0, "tpcp/"), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(group_of(tp_cp, 5, "tpcp/"), (std::vector<int>{4, 5, 6, 7}));
  // CP alone: the CP group.
  EXPECT_EQ(router_all_reduces({.dp = 2, .cp = 2, .ep = 2}), (Groups{{"cp/0 of 2", 2}}));
  // Neither: the loss needs no all-reduce.
  EXPECT_TRUE(router_all_reduces({.dp = 4, .ep = 2}).empty());
}

TEST(LlmExpertTensorParallel, PlannerSearchesWholeExperts) {
  planner::EnumerationLimits limits;
  limits.gpus = 8;
  limits.global_batch = 8;
  limits.max_virtual_stages = 1;
  std::set<std::pair<int, int>> tp_etp;
  for (const ParallelConfig& layout : planner::enumerate_layouts(tiny_moe(), limits))
    tp_etp.insert({layout.tp, layout.expert_tp()});
  // TP 1 has only ETP 1; TP 2, 4 add whole experts (ETP 1) to the default ETP = TP.
  EXPECT_EQ(tp_etp, (std::set<std::pair<int, int>>{{1, 1}, {2, 2}, {2, 1}, {4, 4}, {4, 1}}));
}

}  // namespace
}  // namespace perfsim::generators::llm

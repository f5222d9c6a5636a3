// The rank order of the parallel dimensions (generators/llm/llm_rank_order.hpp,
// llm_rank_mesh.hpp) against Megatron-Core's RankGenerator: the leftmost dimension of the
// order varies fastest, a group's index among its kind is the other coordinates in the same
// order, and the expert layers' grid is the same order with CP 1 and DP x CP / EP data-parallel
// ranks. Cases small enough to write every group down by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "generators/llm/llm_parallel_config.hpp"
#include "generators/llm/llm_rank_mesh.hpp"
#include "generators/llm/llm_rank_order.hpp"
#include "generators/llm/llm_rank_roles.hpp"
#include "perfsim/error.hpp"

namespace perfsim::generators::llm {
namespace {

TransformerConfig tiny_gpt() {
  TransformerConfig model;
  model.name = "tiny";
  model.layers = 4;
  model.hidden = 256;
  model.heads = 4;
  model.kv_heads = 4;
  model.ffn_hidden = 1024;
  model.vocab = 1024;
  model.seq_len = 256;
  model.micro_batch = 1;
  model.global_batch = 8;
  model.attention = AttentionKernel::kFlash;
  return model;
}

TransformerConfig tiny_moe() {
  TransformerConfig model = tiny_gpt();
  model.moe.num_experts = 4;
  model.moe.top_k = 2;
  model.moe.expert_ffn_hidden = 512;
  return model;
}

ParallelConfig layout(int tp, int pp, int dp, const char* order) {
  ParallelConfig parallel{.tp = tp, .pp = pp, .dp = dp};
  parallel.order = parse_rank_order(order, "--order");
  return parallel;
}

// The members of `rank`'s group of the kind `prefix` ("tp/", "dp/", ...).
std::vector<int> group_of(const ParallelConfig& parallel, int rank, const std::string& prefix) {
  for (const ProcessGroup& group : process_groups_of(parallel, rank))
    if (group.name.rfind(prefix, 0) == 0)
      return group.ranks;
  return {};
}

TEST(RankOrder, ParsesMegatronOrderStrings) {
  using D = ParallelDimension;
  EXPECT_EQ(parse_rank_order("tp-cp-ep-dp-pp", "--order"), default_rank_order());
  EXPECT_EQ(parse_rank_order("tp-pp-dp", "--order"),
            (RankOrder{D::kTensor, D::kPipeline, D::kData}));
  EXPECT_EQ(rank_order_name(parse_rank_order("tp-cp-ep-pp-dp", "--order")), "tp-cp-ep-pp-dp");
  for (const char* bad : {"", "tp-", "tp-xp-dp", "tp-dp-tp", "TP-DP", "tp--dp"})
    EXPECT_THROW(parse_rank_order(bad, "--order"), InputError) << bad;
}

TEST(RankOrder, DefaultIsMegatronsTensorContextDataPipeline) {
  // rank = tp + 2 (cp + 2 (dp + 2 pp)), as before orders existed.
  ParallelConfig parallel{.tp = 2, .pp = 2, .dp = 2, .cp = 2};
  EXPECT_EQ(rank_of(parallel, {.tp = 1, .dp = 1, .pp = 1, .cp = 0}), 1 + 2 * (0 + 2 * (1 + 2)));
  EXPECT_EQ(group_of(parallel, 0, "tp/"), (std::vector<int>{0, 1}));
  EXPECT_EQ(group_of(parallel, 0, "cp/"), (std::vector<int>{0, 2}));
  EXPECT_EQ(group_of(parallel, 0, "dp/"), (std::vector<int>{0, 2, 4, 6}));
  EXPECT_EQ(group_of(parallel, 0, "pp/"), (std::vector<int>{0, 8}));
  EXPECT_EQ(dp_group_name(parallel, 9), "dp/3");  // tp 1 + 2 x pp 1
}

TEST(RankOrder, TensorPipelineDataSwapsWhichGroupsAreStrided) {
  // Megatron's own example (parallel_state.generate_masked_orthogonal_rank_groups): 8 GPUs,
  // order tp-pp-dp, sizes 2-2-2: the data-parallel groups are [0, 4], [1, 5], [2, 6], [3, 7].
  const ParallelConfig swapped = layout(2, 2, 2, "tp-pp-dp");
  for (int index = 0; index < 4; ++index) {
    EXPECT_EQ(group_of(swapped, index, "dp/"), (std::vector<int>{index, index + 4}));
    EXPECT_EQ(dp_group_name(swapped, index), "dp/" + std::to_string(index));
  }
  EXPECT_EQ(group_of(swapped, 0, "pp/"), (std::vector<int>{0, 2}));
  EXPECT_EQ(group_of(swapped, 0, "tp/"), (std::vector<int>{0, 1}));
  // The default order has them the other way round.
  const ParallelConfig standard = layout(2, 2, 2, "tp-dp-pp");
  EXPECT_EQ(group_of(standard, 0, "dp/"), (std::vector<int>{0, 2}));
  EXPECT_EQ(group_of(standard, 0, "pp/"), (std::vector<int>{0, 4}));
  // Pipeline neighbours follow: rank 1 (tp 1, pp 0, dp 0) sends to rank 3 under tp-pp-dp.
  EXPECT_EQ(rank_roles(swapped, 1).pipeline_next, 3);
  EXPECT_EQ(rank_roles(standard, 1).pipeline_next, 5);
  EXPECT_EQ(coordinates_of(swapped, 6).pp, 1);
  EXPECT_EQ(coordinates_of(swapped, 6).dp, 1);
}

TEST(RankOrder, WhichGroupsStayInsideAFourGpuNode) {
  // TP 1 x PP 2 x DP 4 on nodes of 4 GPUs (node = rank / 4). tp-dp-pp: a node is one stage's
  // DP group, pipeline pairs cross nodes. tp-pp-dp: a node holds both stages of two replicas,
  // every DP group crosses both nodes.
  auto nodes_of = [](const std::vector<int>& ranks) {
    std::set<int> nodes;
    for (int rank : ranks)
      nodes.insert(rank / 4);
    return nodes.size();
  };
  const ParallelConfig standard = layout(1, 2, 4, "tp-dp-pp");
  const ParallelConfig swapped = layout(1, 2, 4, "tp-pp-dp");
  for (int rank = 0; rank < 8; ++rank) {
    EXPECT_EQ(nodes_of(group_of(standard, rank, "dp/")), 1u) << rank;
    EXPECT_EQ(nodes_of(group_of(standard, rank, "pp/")), 2u) << rank;
    EXPECT_EQ(nodes_of(group_of(swapped, rank, "dp/")), 2u) << rank;
    EXPECT_EQ(nodes_of(group_of(swapped, rank, "pp/")), 1u) << rank;
  }
  EXPECT_EQ(group_of(swapped, 5, "dp/"), (std::vector<int>{1, 3, 5, 7}));
}

TEST(RankOrder, GroupsPartitionTheRanksUnderEveryOrder) {
  // Every kind's groups are disjoint, cover every rank, have the layout's size, and a group's
  // name is the one each of its members computes for itself.
  struct Case {
    TransformerConfig model;
    ParallelConfig parallel;
  };
  std::vector<Case> cases;
  auto add = [&](TransformerConfig model, ParallelConfig parallel, const char* order) {
    parallel.order = parse_rank_order(order, "--order");
    parallel.sequence_parallel = model.is_moe();
    cases.push_back({std::move(model), parallel});
  };
  // With CP > 1 Megatron accepts only pp-last orders; without, DP may be outermost.
  for (const char* order : {"tp-cp-ep-dp-pp", "dp-tp-cp-ep-pp", "cp-tp-dp-pp", "dp-cp-tp-pp"})
    add(tiny_gpt(), {.tp = 2, .pp = 2, .dp = 2, .cp = 2}, order);
  for (const char* order : {"tp-pp-dp", "pp-dp-tp", "dp-pp-tp"})
    add(tiny_gpt(), {.tp = 2, .pp = 2, .dp = 4}, order);
  for (const char* order : {"tp-cp-ep-dp-pp", "tp-ep-cp-dp-pp", "tp-cp-ep-pp-dp", "dp-tp-cp-ep-pp"})
    add(tiny_moe(), {.tp = 2, .pp = 2, .dp = 2, .cp = 2, .ep = 2}, order);
  // Whole experts (ETP 1) under TP 2: the expert grid 1 x EP 4 x expert-DP 2.
  for (const char* order : {"tp-cp-ep-dp-pp", "tp-cp-ep-pp-dp", "cp-tp-ep-dp-pp"})
    add(tiny_moe(), {.tp = 2, .pp = 2, .dp = 2, .cp = 2, .ep = 4, .etp = 1}, order);
  for (const Case& c : cases) {
    const std::string order = rank_order_name(c.parallel.order);
    ASSERT_NO_THROW(validate(c.model, c.parallel)) << order;
    std::map<std::string, std::vector<int>> groups;
    std::map<std::string, int> covered;  // rank count per kind
    for (const ProcessGroup& group : all_process_groups(c.parallel)) {
      groups[group.name] = group.ranks;
      covered[group.name.substr(0, group.name.find('/'))] += static_cast<int>(group.ranks.size());
    }
    for (const auto& [kind, ranks] : covered)
      EXPECT_EQ(ranks, c.parallel.world_size()) << order << " " << kind;
    const ParallelConfig& p = c.parallel;
    const std::map<std::string, int> sizes{
        {"tp", p.tp},
        {"cp", p.cp},
        {"dp", p.dp * p.cp},
        {"pp", p.pp},
        {"ep", p.ep},
        {"edp", p.expert_gradient_group_size()},
        {"tpcp", p.tp * p.cp},
        {"tpdp", p.tp * p.dp * p.cp},
        {"etp", p.expert_tp()},
        {"etpp", p.expert_tp() * p.ep * p.pp},
        {"mp", p.tp * p.pp},
        {"dopt", p.world_size()},
        {"emb", 2}};  // first and last stage (PP 2 here: every rank is in one)
    for (int rank = 0; rank < c.parallel.world_size(); ++rank) {
      for (const ProcessGroup& group : process_groups_of(c.parallel, rank)) {
        const std::string kind = group.name.substr(0, group.name.find('/'));
        EXPECT_EQ(static_cast<int>(group.ranks.size()), sizes.at(kind)) << order << " " << kind;
        EXPECT_EQ(groups.at(group.name), group.ranks) << order << " " << group.name;
        EXPECT_TRUE(std::binary_search(group.ranks.begin(), group.ranks.end(), rank))
            << order << " " << group.name;
      }
    }
  }
}

TEST(RankOrder, ExpertGridIsTheOrderWithContextOneAndExpertDataParallel) {
  // TP 1, CP 2, DP 2, EP 2, PP 2 (8 ranks), order tp-cp-ep-pp-dp (--use-tp-pp-dp-mapping).
  // Attention grid: rank = cp + 2 (pp + 2 dp); expert grid: rank = ep + 2 (pp + 2 edp).
  ParallelConfig parallel{.tp = 1, .pp = 2, .dp = 2, .cp = 2, .ep = 2};
  parallel.order = parse_rank_order("tp-cp-ep-pp-dp", "--order");
  ASSERT_NO_THROW(validate(tiny_moe(), parallel));
  EXPECT_EQ(group_of(parallel, 0, "cp/"), (std::vector<int>{0, 1}));
  EXPECT_EQ(group_of(parallel, 0, "dp/"), (std::vector<int>{0, 1, 4, 5}));
  EXPECT_EQ(group_of(parallel, 0, "pp/"), (std::vector<int>{0, 2}));
  EXPECT_EQ(group_of(parallel, 0, "ep/"), (std::vector<int>{0, 1}));
  EXPECT_EQ(group_of(parallel, 0, "edp/"), (std::vector<int>{0, 4}));
  EXPECT_EQ(expert_coordinates_of(parallel, 7).ep, 1);
  EXPECT_EQ(expert_coordinates_of(parallel, 7).edp, 1);
  // The default order: the EP pairs are d = cp + 2 dp consecutive, i.e. the CP pairs here.
  parallel.order = default_rank_order();
  EXPECT_EQ(group_of(parallel, 0, "ep/"), (std::vector<int>{0, 1}));
  EXPECT_EQ(group_of(parallel, 0, "edp/"), (std::vector<int>{0, 2}));
  EXPECT_EQ(group_of(parallel, 0, "pp/"), (std::vector<int>{0, 4}));
}

TEST(RankOrder, RefusesOrdersMegatronRefuses) {
  ParallelConfig parallel{.tp = 2, .pp = 2, .dp = 2, .cp = 2};
  // CP 2 left out of the order.
  parallel.order = parse_rank_order("tp-pp-dp", "--order");
  EXPECT_THROW(validate(tiny_gpt(), parallel), InputError);
  // Not pp-last with PP 2: Megatron needs the expert grid's DP (DP x CP = 4) to equal DP (2).
  parallel.order = parse_rank_order("tp-cp-pp-dp", "--order");
  EXPECT_THROW(validate(tiny_gpt(), parallel), InputError);
  parallel.cp = 1;
  EXPECT_NO_THROW(validate(tiny_gpt(), parallel));
  // With experts, EP = CP makes the two DP sizes equal.
  ParallelConfig experts{.tp = 2, .pp = 2, .dp = 2, .cp = 2, .ep = 2};
  experts.sequence_parallel = true;
  experts.order = parse_rank_order("tp-cp-ep-pp-dp", "--order");
  EXPECT_NO_THROW(validate(tiny_moe(), experts));
  experts.ep = 4;
  EXPECT_THROW(validate(tiny_moe(), experts), InputError);
  // CP before TP moves the attention TP groups but not the expert grid's (CP is 1 there):
  // Megatron accepts it, the expert layers then have TP groups of their own (etp/<i>).
  experts.ep = 2;
  experts.order = parse_rank_order("cp-tp-ep-dp-pp", "--order");
  EXPECT_NO_THROW(validate(tiny_moe(), experts));
  EXPECT_EQ(group_of(experts, 0, "tp/"), (std::vector<int>{0, 2}));
  EXPECT_EQ(group_of(experts, 0, "etp/"), (std::vector<int>{0, 1}));
  // With TP 1 the TP groups are single ranks whatever the order.
  experts.tp = 1;
  EXPECT_NO_THROW(validate(tiny_moe(), experts));
  experts.tp = 2;
  // EP left out while EP is 2.
  experts.order = parse_rank_order("tp-cp-dp-pp", "--order");
  EXPECT_THROW(validate(tiny_moe(), experts), InputError);
}

}  // namespace
}  // namespace perfsim::generators::llm

// Megatron-Core's flex token dispatcher (README "Flex token dispatcher: DeepEP and HybridEP"):
// the expected distinct GPUs and nodes per token against enumeration, exact per-rank op and
// byte counts on the 2-layer tiny MoE (4 experts, top 2, 32 tokens of h 64 in bf16 per rank),
// one node and two, the network bytes against the alltoall dispatcher's, DeepEP's host wait and
// HybridEP's none, the invalid combinations, and a run through the engine.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "collectives/hierarchical_all_to_all.hpp"
#include "generators/llm/llm_collective_bus_rates.hpp"
#include "generators/llm/llm_moe_flex_routing.hpp"
#include "generators/llm/llm_rank_generator.hpp"
#include "generators/llm/llm_trace_builder.hpp"
#include "perfsim/error.hpp"
#include "perfsim/trace.hpp"
#include "scenario/llm_calibration.hpp"
#include "scenario/plan_simulation.hpp"
#include "support/h100_sxm_scenario.hpp"
#include "support/small_moe.hpp"
#include "support/tiny_llm.hpp"
#include "topology/node_resize.hpp"
#include "topology/topology.hpp"

namespace perfsim::generators::llm {
namespace {

// Every k-subset of `pool` (ascending), passed to `visit`.
template <typename Visit>
void each_subset(const std::vector<int>& pool, int k, Visit visit) {
  std::vector<int> pick(k);
  std::vector<int> index(k);
  std::iota(index.begin(), index.end(), 0);
  const int n = static_cast<int>(pool.size());
  while (true) {
    for (int i = 0; i < k; ++i)
      pick[i] = pool[index[i]];
    visit(pick);
    int i = k - 1;
    while (i >= 0 && index[i] == n - k + i)
      --i;
    if (i < 0)
      return;
    ++index[i];
    for (int j = i + 1; j < k; ++j)
      index[j] = index[j - 1] + 1;
  }
}

// The mean number of distinct units over every equally likely choice: each subset of
// group_topk groups, then each top-k subset of their experts.
double enumerated_distinct_units(const UniformRouting& routing, int per_unit) {
  const int groups = routing.groups > 0 ? routing.groups : 1;
  const int chosen = routing.groups > 0 ? routing.group_topk : 1;
  const int per_group = routing.experts / groups;
  std::vector<int> all_groups(groups);
  std::iota(all_groups.begin(), all_groups.end(), 0);
  double total = 0.0;
  int outcomes = 0;
  each_subset(all_groups, chosen, [&](const std::vector<int>& group_pick) {
    std::vector<int> experts;
    for (int group : group_pick)
      for (int e = group * per_group; e < (group + 1) * per_group; ++e)
        experts.push_back(e);
    double sum = 0.0;
    int count = 0;
    each_subset(experts, routing.top_k, [&](const std::vector<int>& pick) {
      std::vector<int> units;
      for (int e : pick)
        units.push_back(e / per_unit);
      std::sort(units.begin(), units.end());
      sum += static_cast<double>(std::unique(units.begin(), units.end()) - units.begin());
      ++count;
    });
    total += sum / count;
    ++outcomes;
  });
  return total / outcomes;
}

TEST(LlmMoeFlexRouting, ExpectedDistinctUnitsMatchesEnumeration) {
  // Plain top-k: E 8, k 2 / 3 / 4 on units of 1, 2, 4 and 8 experts.
  for (int k : {2, 3, 4})
    for (int per_unit : {1, 2, 4, 8}) {
      const UniformRouting routing{8, k, 0, 0};
      EXPECT_NEAR(expected_distinct_units(routing, per_unit),
                  enumerated_distinct_units(routing, per_unit), 1e-12)
          << "k " << k << " unit " << per_unit;
    }
  // By hand: 4 experts, top 2, two units of 2: 2 (1 - C(2,2) / C(4,2)) = 5/3.
  EXPECT_NEAR(expected_distinct_units({4, 2, 0, 0}, 2), 5.0 / 3.0, 1e-12);
  // Group-limited: 12 experts in 4 groups of 3, 2 groups chosen, top 3; units inside a group
  // (1 expert), across groups (6 experts: 2 groups) and straddling them (2 and 4 experts).
  for (int per_unit : {1, 2, 3, 4, 6, 12}) {
    const UniformRouting routing{12, 3, 4, 2};
    EXPECT_NEAR(expected_distinct_units(routing, per_unit),
                enumerated_distinct_units(routing, per_unit), 1e-12)
        << "unit " << per_unit;
  }
  // Node-limited routing holds a token to at most group_topk nodes when groups are nodes.
  EXPECT_LE(expected_distinct_units({256, 8, 8, 4}, 32), 4.0);
  EXPECT_GT(expected_distinct_units({256, 8, 0, 0}, 32), 5.0);
  EXPECT_THROW(expected_distinct_units({8, 2, 0, 0}, 3), RuntimeFailure);
}

ParallelConfig flex(ParallelConfig parallel, MoeFlexBackend backend, int ep_ranks_per_node) {
  parallel.moe_permute_fusion = true;
  parallel.moe_token_dispatcher = MoeTokenDispatcher::kFlex;
  parallel.moe_flex_backend = backend;
  parallel.ep_ranks_per_node = ep_ranks_per_node;
  return parallel;
}

struct Exchanges {
  int flex_ops = 0, all_to_allv_ops = 0, count_gathers = 0, host_syncs = 0;
  std::vector<Bytes> node_bytes, gpu_bytes;
  std::map<std::string, int> by_name;
};

Exchanges exchanges(const Trace& trace) {
  Exchanges out;
  for (const Op& op : trace.ops) {
    if (op.is_annotation)
      continue;
    ++out.by_name[op.name];
    for (const RuntimeCall& call : op.runtime_calls)
      out.host_syncs += is_blocking_runtime_call(call.name) ? 1 : 0;
    if (!op.comm)
      continue;
    if (op.comm->kind == CollectiveKind::kHierarchicalAllToAll) {
      ++out.flex_ops;
      out.node_bytes.push_back(op.comm->bytes_in);
      out.gpu_bytes.push_back(op.comm->bytes_out);
      EXPECT_EQ(op.kernels.front().stream, kExpertParallelStream);
    }
    out.all_to_allv_ops += op.comm->kind == CollectiveKind::kAllToAllv ? 1 : 0;
    out.count_gathers += op.comm->kind == CollectiveKind::kAllGather ? 1 : 0;
  }
  return out;
}

TEST(LlmMoeFlexDispatcher, ExactCountsInOneNode) {
  // EP 4 in one node, one expert per GPU: a token's 2 experts are on 2 GPUs of 1 node: per
  // rank 32 node-level copies (32 x 64 x 2 = 4096 bytes) and 64 GPU-level ones (8192 bytes).
  const Exchanges c = exchanges(generate_llm_rank(
      test_support::tiny_moe(), flex({.dp = 4, .ep = 4}, MoeFlexBackend::kDeepEp, 4), 0));
  // Per layer: dispatch and combine forward, their two backwards; no NCCL all-to-all, no
  // probabilities exchange, no count gather.
  EXPECT_EQ(c.flex_ops, 2 * 4);
  EXPECT_EQ(c.all_to_allv_ops, 0);
  EXPECT_EQ(c.count_gathers, 0);
  for (std::size_t i = 0; i < c.node_bytes.size(); ++i) {
    EXPECT_EQ(c.node_bytes[i], 32 * 64 * 2);
    EXPECT_EQ(c.gpu_bytes[i], 64 * 64 * 2);
  }
  // DeepEP: one host wait per MoE forward (TE's fused permute synchronizes nothing).
  EXPECT_EQ(c.host_syncs, 2);
  EXPECT_EQ(c.by_name.at(std::string(kDispatcherSyncOpName)), 2);
  EXPECT_EQ(c.by_name.at("deep_ep::get_dispatch_layout"), 2);
  // The permute on the receiving side and the unpermute before combine, forward and backward.
  EXPECT_EQ(c.by_name.at("te::moe_permute"), 2);
  EXPECT_EQ(c.by_name.at("te::moe_unpermute"), 2 * 2);
  EXPECT_EQ(c.by_name.at("te::moe_unpermute_backward"), 2);
}

TEST(LlmMoeFlexDispatcher, ExactCountsOnTwoNodesAndDuplicatesSentOnce) {
  // EP 2 (2 experts per GPU) on one node: 32 x 2 (1 - 1/6) = 53.3 -> 53 GPU-level copies, not
  // the alltoall dispatcher's 64 rows: a token's two experts on one GPU travel once.
  const Exchanges one_node = exchanges(generate_llm_rank(
      test_support::tiny_moe(), flex({.dp = 4, .ep = 2}, MoeFlexBackend::kDeepEp, 2), 0));
  EXPECT_EQ(one_node.gpu_bytes.front(), 53 * 64 * 2);
  EXPECT_EQ(one_node.node_bytes.front(), 32 * 64 * 2);
  // EP 4 on 2 nodes of 2: 53 node-level copies (units of 2 experts), 64 GPU-level ones.
  const Exchanges two_nodes = exchanges(generate_llm_rank(
      test_support::tiny_moe(), flex({.dp = 4, .ep = 4}, MoeFlexBackend::kDeepEp, 2), 0));
  EXPECT_EQ(two_nodes.node_bytes.front(), 53 * 64 * 2);
  EXPECT_EQ(two_nodes.gpu_bytes.front(), 64 * 64 * 2);
  // Through the NICs: half of them (one remote node of two), 26.5 rows against the alltoall
  // dispatcher's 64 rows x 2/4 of its peers on the other node = 32.
  const auto links = collectives::hierarchical_all_to_all_links(
      two_nodes.node_bytes.front(), two_nodes.gpu_bytes.front(), {4, 2});
  EXPECT_DOUBLE_EQ(links.network_bytes, 53 * 64 * 2 / 2.0);
  EXPECT_LT(links.network_bytes, 64 * 64 * 2 * 2.0 / 4.0);
}

TEST(LlmMoeFlexDispatcher, HybridEpWaitsForNothing) {
  const Exchanges c = exchanges(generate_llm_rank(
      test_support::tiny_moe(), flex({.dp = 4, .ep = 4}, MoeFlexBackend::kHybridEp, 4), 0));
  EXPECT_EQ(c.host_syncs, 0);
  EXPECT_EQ(c.by_name.count(std::string(kDispatcherSyncOpName)), 0u);
  EXPECT_EQ(c.by_name.at("hybrid_ep::metadata_preprocessing"), 2);
  EXPECT_EQ(c.flex_ops, 2 * 4);
}

// --moe-a2a-overlap: the compute beside a flex exchange loses the dispatcher's SMs (marked whole
// without bus and device rates), 20 for DeepEP and 16 for HybridEP, not --comm-sms.
TEST(LlmMoeFlexDispatcher, OverlappedComputeLosesTheDispatchersSms) {
  TransformerConfig model = test_support::tiny_moe();
  model.global_batch = 16;  // 4 micro-batches per rank: combined steps
  for (const auto& [backend, sms] :
       {std::pair{MoeFlexBackend::kDeepEp, 20}, std::pair{MoeFlexBackend::kHybridEp, 16}}) {
    ParallelConfig parallel = flex({.dp = 4, .ep = 4}, backend, 4);
    parallel.moe_a2a_overlap = true;
    std::int64_t most = 0;
    int marked = 0;
    for (const Op& op : generate_llm_rank(model, parallel, 0).ops) {
      const Attribute* attribute = op.is_annotation ? nullptr : op.find_attribute("contention_sms");
      if (attribute == nullptr)
        continue;
      most = std::max(most, std::get<std::int64_t>(attribute->value));
      ++marked;
    }
    EXPECT_GT(marked, 0);
    EXPECT_EQ(most, sms);
  }
}

TEST(LlmMoeFlexDispatcher, InvalidCombinationsAreRejected) {
  const TransformerConfig model = test_support::tiny_moe();
  // Flex needs EP > 1.
  EXPECT_THROW(validate(model, flex({.dp = 4, .ep = 1}, MoeFlexBackend::kDeepEp, 0)), InputError);
  // Not modelled with expert tensor parallelism.
  ParallelConfig etp = flex({.tp = 2, .dp = 2, .ep = 2}, MoeFlexBackend::kDeepEp, 0);
  etp.sequence_parallel = true;
  EXPECT_THROW(validate(model, etp), InputError);
  etp.etp = 1;
  EXPECT_NO_THROW(validate(model, etp));
  // A dense model has nothing to dispatch.
  EXPECT_THROW(
      validate(test_support::tiny_gpt(), flex({.dp = 4, .ep = 2}, MoeFlexBackend::kDeepEp, 0)),
      InputError);
  ParallelConfig no_sms = flex({.dp = 4, .ep = 2}, MoeFlexBackend::kDeepEp, 0);
  no_sms.moe_deepep_num_sms = 0;
  EXPECT_THROW(validate(model, no_sms), InputError);
  EXPECT_THROW(parse_moe_token_dispatcher("allgather", "--moe-token-dispatcher"), InputError);
  EXPECT_THROW(parse_moe_flex_backend("uccl_ep", "--moe-flex-backend"), InputError);
  EXPECT_EQ(parse_moe_flex_backend("hybridep", "x"), MoeFlexBackend::kHybridEp);
}

}  // namespace
}  // namespace perfsim::generators::llm

namespace perfsim::scenario {
namespace {

// Through the engine on 2 H100 nodes, EP 16 (8 ranks a node, 16 experts): the flex exchanges are
// priced (the EP group's communication time is positive), and HybridEP, without DeepEP's host wait,
// ends no later than DeepEP.
TEST(LlmMoeFlexDispatcherSimulation, PricedAcrossNodesAndHybridEpWaitsLess) {
  const topology::Topology cluster =
      topology::resized(topology::load_topology(std::string(PERFSIM_SOURCE_DIR) +
                                                "/configs/topologies/hgx-h100.json"),
                        2, 0);
  std::map<std::string, double> iteration_us;
  for (const char* backend : {"alltoall", "deepep", "hybridep"}) {
    generators::llm::ParallelConfig parallel{.dp = 16, .ep = 16};
    parallel.moe_permute_fusion = true;
    if (std::string(backend) != "alltoall") {
      parallel.moe_token_dispatcher = generators::llm::MoeTokenDispatcher::kFlex;
      parallel.moe_flex_backend = generators::llm::parse_moe_flex_backend(backend, "test");
    }
    parallel = generators::llm::with_expert_node_layout(parallel, cluster);
    EXPECT_EQ(parallel.ep_ranks_per_node, 8);
    generators::llm::TransformerConfig model = test_support::small_moe(2, 16);
    model.moe.num_experts = 16;  // one a rank
    LlmScenario scenario = test_support::h100_sxm_scenario(model, parallel, cluster, false);
    scenario.calibration = calibration_argument("", "H100-SXM");
    const LayoutSimulation run = simulate_layout(scenario, SimulatedRanks::kAll);
    iteration_us[backend] = run.summary.iteration_us;
    EXPECT_GT(run.summary.comm_us_by_kind.at("expert parallel (all-to-all)"), 0.0) << backend;
  }
  EXPECT_GT(iteration_us["deepep"], 0.0);
  // With ETP 1 the expert mesh puts EP innermost (Megatron-LM's expert rank order): TP 2 x DP 8
  // with EP 8 keeps the EP group in one node; with ETP = TP 2 it strides over 2 nodes.
  generators::llm::ParallelConfig expert_mesh{.tp = 2, .dp = 8, .ep = 8, .etp = 1};
  EXPECT_EQ(generators::llm::with_expert_node_layout(expert_mesh, cluster).ep_ranks_per_node, 8);
  expert_mesh.etp = 2;
  EXPECT_EQ(generators::llm::with_expert_node_layout(expert_mesh, cluster).ep_ranks_per_node, 4);
  EXPECT_LE(iteration_us["hybridep"], iteration_us["deepep"]);
}

}  // namespace
}  // namespace perfsim::scenario

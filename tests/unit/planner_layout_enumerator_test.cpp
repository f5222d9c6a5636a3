// The planner's layout enumeration (src/planner/layout_enumerator.hpp): the count for a small
// case worked out by hand, every layout divides the model and the GPUs, and the memory filter
// drops exactly the layouts whose closed-form footprint exceeds the capacity; the MoE switches
// (flex dispatcher, all-to-all, shared-expert and weight-gradient overlaps) go exactly where
// Megatron-Core and the generator take them.
#include <gtest/gtest.h>

#include <algorithm>

#include "generators/llm/llm_collective_bus_rates.hpp"
#include "generators/llm/llm_parallel_config.hpp"
#include "generators/llm/llm_pipeline_split.hpp"
#include "perfsim/error.hpp"
#include "planner/layout_enumerator.hpp"
#include "support/tiny_llm.hpp"
#include "topology/node_resize.hpp"
#include "topology/topology.hpp"

namespace perfsim::planner {
namespace {

namespace llm = generators::llm;

// 8 layers, 4 heads, global batch 4: small enough to count by hand.
llm::TransformerConfig small_model() {
  llm::TransformerConfig model;
  model.name = "small";
  model.layers = 8;
  model.hidden = 256;
  model.heads = 4;
  model.kv_heads = 4;
  model.ffn_hidden = 1024;
  model.vocab = 1024;
  model.seq_len = 128;
  model.micro_batch = 1;
  model.global_batch = 4;
  return model;
}

TEST(LayoutEnumerator, CountForFourGpusMatchesHandCount) {
  EnumerationLimits limits;
  limits.gpus = 4;
  limits.gpus_per_node = 4;
  // By hand (micro-batch b divides global / DP; ZeRO 0..3 only with DP > 1; SP only with TP > 1;
  // 3 recompute choices; interleaving needs PP >= 2, micro-batches % PP == 0 and layers %
  // (PP v) == 0, v up to 4: v = 2 or 4 on PP 2, v = 2 on PP 4):
  //   TP1 PP1 DP4: b 1            x 3 recompute x 4 ZeRO                  = 12
  //   TP1 PP2 DP2: b 1, 2         x 3 x 4, plus v = 2, 4 with b = 1 x 3 x 4 = 48
  //   TP1 PP4 DP1: b 1, 2, 4      x 3, plus v = 2 with b = 1 x 3          = 12
  //   TP2 PP1 DP2: b 1, 2         x 2 SP x 3 x 4                          = 48
  //   TP2 PP2 DP1: b 1, 2, 4      x 2 x 3, plus v = 2, 4 with b 1, 2 x 2 x 3 = 42
  //   TP4 PP1 DP1: b 1, 2, 4      x 2 x 3                                 = 18
  const auto layouts = enumerate_layouts(small_model(), limits);
  EXPECT_EQ(layouts.size(), 180u);
  const auto interleaved = std::count_if(
      layouts.begin(), layouts.end(), [](const auto& layout) { return layout.virtual_stages > 1; });
  EXPECT_EQ(interleaved, 3 + 24 + 24);

  // TP stays inside a node: with 2 GPUs per node the 18 TP4 layouts go.
  limits.gpus_per_node = 2;
  EXPECT_EQ(enumerate_layouts(small_model(), limits).size(), 162u);
}

// Multi-latent attention (and MTP) layouts: ZeRO-3 is not modelled with them, so the planner
// does not offer it (llm::validate would refuse the layout and end the search); every other
// layout, overlapped parameter gathers included, is one llm::validate accepts.
TEST(LayoutEnumerator, MultiLatentAttentionLayoutsSkipZero3Only) {
  llm::TransformerConfig model = test_support::tiny_mla();
  model.global_batch = 4;
  model.mtp_num_layers = 1;
  EnumerationLimits limits;
  limits.gpus = 4;
  limits.gpus_per_node = 4;
  limits.overlap_param_gather = true;
  const auto layouts = enumerate_layouts(model, limits);
  ASSERT_FALSE(layouts.empty());
  for (const auto& layout : layouts) {
    EXPECT_NE(layout.zero_stage, 3);
    EXPECT_NO_THROW(llm::validate(model, layout));
  }
  EXPECT_TRUE(std::any_of(layouts.begin(), layouts.end(),
                          [](const auto& layout) { return layout.overlap_param_gather; }));
}

TEST(LayoutEnumerator, OrdersAddOnlyLayoutsThatPlaceGroupsDifferently) {
  EnumerationLimits limits;
  limits.gpus = 4;
  limits.gpus_per_node = 4;
  limits.orders = {llm::default_rank_order(), llm::parse_rank_order("tp-cp-ep-pp-dp", "--order"),
                   llm::parse_rank_order("tp-pp-dp", "--order")};
  // Pipeline-inside-the-node differs from the default only where PP > 1 and DP > 1: the 48
  // TP1 PP2 DP2 layouts of the hand count above. tp-pp-dp places them as tp-cp-ep-pp-dp does
  // (CP and EP are 1), so it adds none.
  const auto layouts = enumerate_layouts(small_model(), limits);
  EXPECT_EQ(layouts.size(), 180u + 48u);
  const auto reordered = std::count_if(layouts.begin(), layouts.end(), [](const auto& layout) {
    return layout.order != llm::default_rank_order();
  });
  EXPECT_EQ(reordered, 48);
  for (const auto& layout : layouts)
    if (layout.order != llm::default_rank_order()) {
      EXPECT_EQ(llm::rank_order_name(layout.order), "tp-cp-ep-pp-dp");
      EXPECT_EQ(layout.pp, 2);
      EXPECT_EQ(layout.dp, 2);
    }
}

TEST(LayoutEnumerator, LayoutsKeepMegatronsMainGradientDtype) {
  EnumerationLimits limits;
  limits.gpus = 4;
  limits.gpus_per_node = 4;
  llm::TransformerConfig model = small_model();
  for (const auto& layout : enumerate_layouts(model, limits))
    EXPECT_EQ(layout.gradient_dtype, DType::kFloat32);  // bf16: fp32 main grads
  model.dtype = DType::kFloat16;
  for (const auto& layout : enumerate_layouts(model, limits))
    EXPECT_EQ(layout.gradient_dtype, DType::kFloat16);
}

TEST(LayoutEnumerator, EveryLayoutDividesTheModelAndTheGpus) {
  llm::TransformerConfig model = small_model();
  model.layers = 12;
  model.hidden = 384;  // 6 heads of 64 (llm::validate rejects heads that do not divide hidden)
  model.heads = 6;
  model.kv_heads = 6;
  model.ffn_hidden = 1536;
  model.vocab = 1536;
  model.global_batch = 48;
  EnumerationLimits limits;
  limits.gpus = 24;
  limits.gpus_per_node = 6;
  const auto layouts = enumerate_layouts(model, limits);
  ASSERT_FALSE(layouts.empty());
  for (const llm::ParallelConfig& layout : layouts) {
    const std::string name = "TP" + std::to_string(layout.tp) + " PP" + std::to_string(layout.pp) +
                             " DP" + std::to_string(layout.dp);
    EXPECT_EQ(layout.world_size(), 24) << name;
    EXPECT_EQ(6 % layout.tp, 0) << name;
    EXPECT_EQ(model.heads % layout.tp, 0) << name;
    EXPECT_EQ(model.layers % (layout.pp * layout.virtual_stages), 0) << name;
    EXPECT_EQ(48 % (layout.micro_batch * layout.dp), 0) << name;
    EXPECT_LE(layout.micro_batch, limits.max_micro_batch) << name;
    EXPECT_TRUE(layout.tp > 1 || !layout.sequence_parallel) << name;
    EXPECT_TRUE(layout.dp > 1 || layout.zero_stage == 0) << name;
    EXPECT_NO_THROW(llm::validate(model, layout)) << name;
  }
  // TP 3 and 6 divide 6 heads, 6 GPUs per node and 24 GPUs; TP 4 divides neither the heads nor
  // the node.
  EXPECT_TRUE(std::any_of(layouts.begin(), layouts.end(), [](auto& l) { return l.tp == 6; }));
  EXPECT_FALSE(std::any_of(layouts.begin(), layouts.end(), [](auto& l) { return l.tp == 4; }));
}

// 61 layers (DeepSeek-V3's count) on 16 GPUs: a PP that does not divide them takes Megatron's
// first / last stage split, the middle stages ceil(61 / PP) layers each and the first and last
// the rest (PP 8: 7 / 6, PP 16: 3 / 2, as the published DeepSeek-V3 recipes), uninterleaved;
// asked to count the embedding as a layer instead, the planner leaves those PPs out.
TEST(LayoutEnumerator, UnevenPipelineSplitWhereThePipelineDoesNotDivideTheLayers) {
  llm::TransformerConfig model = small_model();
  model.layers = 61;
  model.global_batch = 16;
  EnumerationLimits limits;
  limits.gpus = 16;
  limits.gpus_per_node = 8;
  const auto layouts = enumerate_layouts(model, limits);
  const std::pair<int, int> expected[] = {{1, 0}, {2, 31}, {4, 15}, {8, 7}, {16, 3}};
  for (const auto& [pp, first] : expected) {
    SCOPED_TRACE("PP " + std::to_string(pp));
    int found = 0;
    for (const llm::ParallelConfig& layout : layouts) {
      if (layout.pp != pp)
        continue;
      ++found;
      EXPECT_EQ(layout.first_stage_layers, first);
      EXPECT_EQ(layout.virtual_stages, 1);
      EXPECT_NO_THROW(llm::validate(model, layout));
    }
    EXPECT_GT(found, 0);
  }
  llm::ParallelConfig pp8;
  pp8.pp = 8;
  pp8.first_stage_layers = 7;
  pp8.last_stage_layers = 6;
  EXPECT_EQ(llm::virtual_stage_layers(model, pp8), (std::vector<int>{7, 8, 8, 8, 8, 8, 8, 6}));
  limits.account_for_embedding = true;  // 62 "layers": only PP 1 and 2 divide them
  for (const llm::ParallelConfig& layout : enumerate_layouts(model, limits)) {
    EXPECT_LE(layout.pp, 2);
    EXPECT_EQ(layout.first_stage_layers, 0);
  }
}

TEST(LayoutEnumerator, MemoryFilterDropsExactlyTheLayoutsThatDoNotFit) {
  EnumerationLimits limits;
  limits.gpus = 4;
  limits.gpus_per_node = 4;
  const llm::TransformerConfig model = small_model();
  const auto layouts = enumerate_layouts(model, limits);
  memory::DeviceMemory device;
  device.context_bytes = 0;
  // The median footprint as capacity: about half fit.
  std::vector<Bytes> totals;
  for (const auto& layout : layouts)
    totals.push_back(memory::estimate_llm_memory(model, layout, device).worst().total_bytes);
  std::sort(totals.begin(), totals.end());
  device.capacity_bytes = totals[totals.size() / 2];
  const MemoryFilter filter = keep_fitting(model, layouts, device);
  EXPECT_EQ(filter.fitting.size() + filter.out_of_memory, layouts.size());
  EXPECT_GT(filter.fitting.size(), 0u);
  EXPECT_GT(filter.out_of_memory, 0u);
  const auto expected_fitting = std::count_if(
      totals.begin(), totals.end(), [&](Bytes total) { return total <= *device.capacity_bytes; });
  EXPECT_EQ(static_cast<long>(filter.fitting.size()), expected_fitting);
  for (const FittingLayout& layout : filter.fitting) {
    EXPECT_TRUE(layout.memory.verdict.fits);
    EXPECT_LE(layout.memory.worst().total_bytes, *device.capacity_bytes);
  }
}

TEST(LayoutEnumerator, ContextParallelOnlyWhenAskedAndWithFlashAttention) {
  EnumerationLimits limits;
  limits.gpus = 4;
  limits.gpus_per_node = 4;
  llm::TransformerConfig model = small_model();
  model.attention = llm::AttentionKernel::kFlash;
  const std::size_t without = enumerate_layouts(model, limits).size();
  limits.max_context_parallel = 2;
  const auto layouts = enumerate_layouts(model, limits);
  // CP 2 takes a factor 2 of the GPUs (TP1 CP2 with PP1 DP2 or PP2 DP1, TP2 CP2): every CP
  // layout is new and valid, and the layouts without CP are the same as before.
  std::size_t with_cp = 0;
  for (const auto& layout : layouts) {
    EXPECT_EQ(layout.world_size(), 4);
    with_cp += layout.cp == 2;
  }
  EXPECT_GT(with_cp, 0u);
  EXPECT_EQ(layouts.size() - with_cp, without);
  model.attention = llm::AttentionKernel::kUnfused;  // ring attention needs flash attention
  for (const auto& layout : enumerate_layouts(model, limits))
    EXPECT_EQ(layout.cp, 1);
}

// tiny_moe with a shared expert, 8 sequences: 4 GPUs give EP 1, 2, 4, PP 1 and 2 (v 1 or 2).
llm::TransformerConfig tiny_moe_with_shared_expert() {
  llm::TransformerConfig model = test_support::tiny_moe();
  model.moe.shared_expert_ffn_hidden = 128;
  model.global_batch = 8;
  return model;
}

std::string describe(const llm::ParallelConfig& layout) {
  return "TP" + std::to_string(layout.tp) + " PP" + std::to_string(layout.pp) + " v" +
         std::to_string(layout.virtual_stages) + " DP" + std::to_string(layout.dp) + " EP" +
         std::to_string(layout.ep) + " ETP" + std::to_string(layout.expert_tp()) + " recompute " +
         std::string(llm::recompute_name(layout.recompute)) + " " +
         llm::rank_order_name(layout.order);
}

// --moe-shared-expert-overlap with --moe-a2a-overlap: the shared experts overlap on every EP > 1
// layout that does not run the all-to-all overlap (Megatron-Core asserts the two apart), never on
// EP 1, and not at all for a model without shared experts.
TEST(LayoutEnumerator, SharedExpertOverlapOnExpertParallelLayoutsWithoutA2aOverlap) {
  llm::TransformerConfig model = tiny_moe_with_shared_expert();
  EnumerationLimits limits;
  limits.gpus = 4;
  limits.gpus_per_node = 4;
  limits.max_virtual_stages = 2;
  limits.moe_a2a_overlap = true;
  limits.moe_shared_expert_overlap = true;
  const auto layouts = enumerate_layouts(model, limits);
  int shared = 0, a2a = 0, ep1 = 0;
  for (const llm::ParallelConfig& layout : layouts) {
    EXPECT_EQ(layout.moe_shared_expert_overlap, layout.ep > 1 && !layout.moe_a2a_overlap)
        << describe(layout);
    EXPECT_FALSE(layout.moe_shared_expert_overlap && layout.moe_a2a_overlap) << describe(layout);
    EXPECT_NO_THROW(llm::validate(model, layout)) << describe(layout);
    shared += layout.moe_shared_expert_overlap;
    a2a += layout.moe_a2a_overlap;
    ep1 += layout.ep == 1;
  }
  // Each kind is there: PP 2 without interleaving or full recomputation keep EP > 1 layouts
  // without the all-to-all overlap.
  EXPECT_GT(shared, 0);
  EXPECT_GT(a2a, 0);
  EXPECT_GT(ep1, 0);
  // Without the all-to-all overlap every EP > 1 layout takes the shared experts' overlap.
  limits.moe_a2a_overlap = false;
  for (const llm::ParallelConfig& layout : enumerate_layouts(model, limits))
    EXPECT_EQ(layout.moe_shared_expert_overlap, layout.ep > 1) << describe(layout);
  model.moe.shared_expert_ffn_hidden = 0;
  for (const llm::ParallelConfig& layout : enumerate_layouts(model, limits))
    EXPECT_FALSE(layout.moe_shared_expert_overlap) << describe(layout);
}

// --delay-wgrad-compute goes with the all-to-all overlap and nowhere else.
TEST(LayoutEnumerator, DelayWgradComputeExactlyWhereA2aOverlapIsOn) {
  const llm::TransformerConfig model = tiny_moe_with_shared_expert();
  EnumerationLimits limits;
  limits.gpus = 4;
  limits.gpus_per_node = 4;
  limits.max_virtual_stages = 2;
  limits.moe_a2a_overlap = true;
  limits.delay_wgrad_compute = true;
  int delayed = 0, not_delayed = 0;
  for (const llm::ParallelConfig& layout : enumerate_layouts(model, limits)) {
    EXPECT_EQ(layout.delay_wgrad_compute, layout.moe_a2a_overlap) << describe(layout);
    (layout.delay_wgrad_compute ? delayed : not_delayed) += 1;
  }
  EXPECT_GT(delayed, 0);
  EXPECT_GT(not_delayed, 0);
  // Off without the all-to-all overlap (Megatron-Core's precondition; `plan` refuses the flag).
  limits.moe_a2a_overlap = false;
  for (const llm::ParallelConfig& layout : enumerate_layouts(model, limits))
    EXPECT_FALSE(layout.delay_wgrad_compute) << describe(layout);
}

// --moe-token-dispatcher flex over 6 GPUs, 2 a node, 6 experts: flex goes exactly on the layouts
// the generator takes it on over that cluster (llm::with_expert_node_layout then llm::validate:
// EP > 1, expert TP 1, an EP group with as many ranks on each of its nodes), so EP 3 (2 + 1 ranks)
// and ETP 2 run alltoall; flex layouts never take the shared experts' overlap.
TEST(LayoutEnumerator, FlexDispatcherOnlyOnLayoutsTheGeneratorAccepts) {
  llm::TransformerConfig model = tiny_moe_with_shared_expert();
  model.moe.num_experts = 6;
  model.global_batch = 12;
  const topology::Topology cluster =
      topology::resized(topology::load_topology(std::string(PERFSIM_SOURCE_DIR) +
                                                "/configs/topologies/hgx-h100.json"),
                        3, 2);
  EnumerationLimits limits;
  limits.gpus = 6;
  limits.gpus_per_node = 2;
  limits.moe_token_dispatcher = llm::MoeTokenDispatcher::kFlex;
  limits.moe_flex_backend = llm::MoeFlexBackend::kHybridEp;
  limits.moe_hybridep_num_sms = 12;
  limits.moe_shared_expert_overlap = true;
  limits.orders = {llm::default_rank_order(), llm::parse_rank_order("tp-cp-ep-pp-dp", "--order")};
  int flex = 0, unbalanced = 0, expert_tp = 0;
  for (const llm::ParallelConfig& layout : enumerate_layouts(model, limits)) {
    llm::ParallelConfig forced = layout;
    forced.moe_token_dispatcher = llm::MoeTokenDispatcher::kFlex;
    forced.moe_shared_expert_overlap = false;
    bool accepted = true;
    try {
      llm::validate(model, llm::with_expert_node_layout(forced, cluster));
    } catch (const InputError&) {
      accepted = false;
    }
    EXPECT_EQ(layout.moe_flex(), accepted) << describe(layout);
    // What the plan simulates: the layout over the cluster, as the generator takes it.
    EXPECT_NO_THROW(llm::validate(model, llm::with_expert_node_layout(layout, cluster)))
        << describe(layout);
    EXPECT_EQ(layout.moe_shared_expert_overlap, layout.ep > 1 && !layout.moe_flex())
        << describe(layout);
    if (layout.moe_flex()) {
      EXPECT_EQ(layout.moe_flex_backend, llm::MoeFlexBackend::kHybridEp);
      EXPECT_EQ(layout.moe_flex_sms(), 12);
    }
    flex += layout.moe_flex();
    unbalanced += layout.ep == 3 && layout.expert_tp() == 1 && !layout.moe_flex();
    expert_tp += layout.ep > 1 && layout.expert_tp() == 2;
    EXPECT_FALSE(layout.moe_flex() && layout.expert_tp() != 1) << describe(layout);
  }
  EXPECT_GT(flex, 0);
  EXPECT_GT(unbalanced, 0);  // EP 3 over 2 GPUs a node
  EXPECT_GT(expert_tp, 0);   // TP 2 with expert TP 2
  // The default dispatcher stays alltoall everywhere.
  limits.moe_token_dispatcher = llm::MoeTokenDispatcher::kAllToAll;
  for (const llm::ParallelConfig& layout : enumerate_layouts(model, limits))
    EXPECT_FALSE(layout.moe_flex()) << describe(layout);
}

}  // namespace
}  // namespace perfsim::planner

// The planner's branch-and-bound search (src/planner/plan_search.hpp) on made-up scores, and a
// whole plan of a small model on one DGX A100 node: pruning by the lower bound gives the same
// top layouts as simulating every layout, and with memory to spare the best layout does not
// recompute (recomputation only adds work); the MoE switches in the layout names, and the lower
// bound of MoE layouts running them (the all-to-all overlap's included) below their simulated
// time.
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <string>
#include <utility>

#include "io/input_file.hpp"
#include "memory/device_memory.hpp"
#include "planner/layout_enumerator.hpp"
#include "planner/plan_search.hpp"
#include "scenario/plan_simulation.hpp"
#include "support/small_gpt.hpp"
#include "support/small_moe.hpp"
#include "topology/topology.hpp"

namespace perfsim::planner {
namespace {

namespace llm = generators::llm;

// Ten layouts told apart by TP = 1..10; layout TP k "takes" 11 - k seconds.
std::vector<FittingLayout> ten_layouts() {
  std::vector<FittingLayout> layouts(10);
  for (int i = 0; i < 10; ++i)
    layouts[i].parallel.tp = i + 1;
  return layouts;
}

LayoutScore made_up_score(const FittingLayout& layout) {
  LayoutScore score;
  score.parallel = layout.parallel;
  score.iteration_us = 11 - layout.parallel.tp;
  return score;
}

TEST(PlanSearch, PrunesLayoutsWhoseBoundCannotBeatTheKthBest) {
  SearchCallbacks callbacks;
  callbacks.simulate = made_up_score;
  // Bounds 0.5 s under the time: sorted 0.5, 1.5, 2.5, then 3.5 >= the third best (3).
  callbacks.lower_bound_us = [](const FittingLayout& layout) {
    return 11 - layout.parallel.tp - 0.5;
  };
  for (int jobs : {1, 3}) {
    const SearchResult result = search_top_layouts(ten_layouts(), 3, callbacks, jobs);
    ASSERT_EQ(result.top.size(), 3u);
    EXPECT_EQ(result.top[0].parallel.tp, 10);
    EXPECT_EQ(result.top[1].parallel.tp, 9);
    EXPECT_EQ(result.top[2].parallel.tp, 8);
    EXPECT_EQ(result.simulated + result.pruned, 10u);
    if (jobs == 1) {
      EXPECT_EQ(result.simulated, 3u);
      EXPECT_EQ(result.pruned, 7u);
    }
  }
  // Without a bound every layout is simulated.
  callbacks.lower_bound_us = nullptr;
  const SearchResult all = search_top_layouts(ten_layouts(), 3, callbacks);
  EXPECT_EQ(all.simulated, 10u);
  EXPECT_EQ(all.pruned, 0u);
  EXPECT_EQ(all.top[0].parallel.tp, 10);
}

TEST(PlanSearch, ShortNamesAndTable) {
  llm::ParallelConfig parallel;
  parallel.tp = 8;
  parallel.pp = 8;
  parallel.virtual_stages = 3;
  parallel.micro_batch = 1;
  parallel.sequence_parallel = true;
  parallel.recompute = llm::Recompute::kSelective;
  EXPECT_EQ(short_layout_name(parallel), "TP8 PP8 v3 DP1 mb1 SP sel");
  llm::ParallelConfig granular = parallel;  // plan --recompute-modules
  granular.recompute_modules = llm::parse_recompute_modules("mla_up_proj,mlp", "<test>", "");
  EXPECT_EQ(short_layout_name(granular), "TP8 PP8 v3 DP1 mb1 SP sel(mla_up_proj+mlp)");
  LayoutScore score;
  score.parallel = parallel;
  score.iteration_us = 14.2e6;
  score.mfu = 0.512;
  score.dominant_comm = "tensor parallel";
  score.dominant_exposed_us = 1500e3;
  const std::string table = format_plan_table({score});
  EXPECT_NE(table.find("TP8 PP8 v3 DP1 mb1 SP sel"), std::string::npos) << table;
  EXPECT_NE(table.find("14200.0"), std::string::npos) << table;
  EXPECT_NE(table.find("51.2"), std::string::npos) << table;
  EXPECT_NE(table.find("tensor parallel 1500"), std::string::npos) << table;
}

TEST(PlanSearch, ShortNamesStateTheMoeSwitches) {
  llm::ParallelConfig parallel;
  parallel.dp = 8;
  parallel.ep = 8;
  parallel.moe_token_dispatcher = llm::MoeTokenDispatcher::kFlex;
  parallel.moe_flex_backend = llm::MoeFlexBackend::kHybridEp;
  parallel.moe_a2a_overlap = true;
  parallel.delay_wgrad_compute = true;
  const std::string name = "TP1 PP1 DP8 EP8 mb0 flex-hybridep a2a-ovl wgrad-delay";
  EXPECT_EQ(short_layout_name(parallel), name);
  parallel.moe_token_dispatcher = llm::MoeTokenDispatcher::kAllToAll;
  parallel.moe_a2a_overlap = parallel.delay_wgrad_compute = false;
  parallel.moe_shared_expert_overlap = true;
  EXPECT_EQ(short_layout_name(parallel), "TP1 PP1 DP8 EP8 mb0 shared-ovl");
  // A name longer than the column widens it: the figures stay in their own columns.
  parallel.moe_token_dispatcher = llm::MoeTokenDispatcher::kFlex;
  parallel.moe_shared_expert_overlap = false;
  parallel.moe_a2a_overlap = parallel.delay_wgrad_compute = true;
  LayoutScore score;
  score.parallel = parallel;
  score.iteration_us = 1e6;
  const std::string table = format_plan_table({score});
  EXPECT_NE(table.find(name + "       1000.0"), std::string::npos) << table;
}

// A plan request for `model` on one HGX H100 node (the shipped topology and device files).
scenario::PlanRequest one_hgx_h100(llm::TransformerConfig model) {
  const std::string source = PERFSIM_SOURCE_DIR;
  scenario::PlanRequest request;
  request.model = std::move(model);
  request.topology = topology::load_topology(source + "/configs/topologies/hgx-h100.json");
  request.device_file = source + "/configs/devices/H100-SXM.json";
  request.device_json = io::read_file_decompressed(request.device_file);
  return request;
}

// One MoE layout of each kind the planner makes with every MoE switch asked for (a small MoE
// with a shared expert on 8 H100s of one node): the all-to-all overlap with delayed weight
// gradients and flex, flex alone, the shared experts' overlap. Each one's lower bound is positive
// and below its simulated time: the layer probe runs the overlapped layouts (it refused them
// before: PP 3 without interleaving) and counts only their compute.
TEST(PlanSearch, MoeSwitchLayoutsBoundBelowTheirSimulation) {
  scenario::PlanRequest request = one_hgx_h100(test_support::small_moe(2, 16));
  request.model.moe.shared_expert_ffn_hidden = 1024;
  request.device_memory.capacity_bytes = 80'000'000'000;
  request.limits.gpus = 8;
  request.limits.max_micro_batch = 1;
  request.limits.max_virtual_stages = 1;
  using Wanted = bool (*)(const llm::ParallelConfig&);
  auto check_first = [&](const EnumerationLimits& limits, Wanted wanted, const char* what) {
    const auto layouts = enumerate_layouts(request.model, limits);
    const auto found = std::find_if(layouts.begin(), layouts.end(), wanted);
    ASSERT_NE(found, layouts.end()) << what;
    const scenario::LlmScenario scenario = scenario::layout_scenario(request, *found);
    const double bound_us = scenario::iteration_lower_bound_us(scenario);
    const double simulated_us =
        scenario::simulate_layout(scenario, scenario::SimulatedRanks::kPipelineRepresentatives)
            .summary.iteration_us;
    std::cout << what << " " << short_layout_name(*found) << ": bound " << bound_us
              << " us, simulated " << simulated_us << " us\n";
    EXPECT_GT(bound_us, 0.0) << what;
    EXPECT_LE(bound_us, simulated_us) << what;
  };
  EnumerationLimits limits = request.limits;
  limits.moe_token_dispatcher = llm::MoeTokenDispatcher::kFlex;
  limits.moe_a2a_overlap = true;
  limits.delay_wgrad_compute = true;
  check_first(
      limits,
      [](const llm::ParallelConfig& p) {
        return p.moe_a2a_overlap && p.delay_wgrad_compute && p.moe_flex();
      },
      "a2a overlap");
  limits.moe_a2a_overlap = limits.delay_wgrad_compute = false;
  check_first(
      limits, [](const llm::ParallelConfig& p) { return p.moe_flex(); }, "flex");
  limits.moe_token_dispatcher = llm::MoeTokenDispatcher::kAllToAll;
  limits.moe_shared_expert_overlap = true;
  check_first(
      limits, [](const llm::ParallelConfig& p) { return p.moe_shared_expert_overlap; },
      "shared-expert overlap");
}

// The layer probe runs one layer per stage, so whatever a run does once per iteration or once per
// pipeline chunk must not enter it once per layer: FP8's weight casts at the first micro-batch
// and delayed scaling's amax reductions (one per chunk's forward and backward) left the bound of
// a small host-bound FP8 model above its simulated time. Each recipe's bound lies below it.
TEST(PlanSearch, Fp8LayoutsBoundBelowTheirSimulation) {
  for (const llm::Fp8Recipe recipe : {llm::Fp8Recipe::kDelayed, llm::Fp8Recipe::kCurrent}) {
    llm::TransformerConfig model = test_support::small_gpt(32, 256, 256);
    model.vocab = 512;
    model.dtype = DType::kFloat8;
    model.fp8_recipe = recipe;
    scenario::PlanRequest request = one_hgx_h100(model);
    request.device_memory.capacity_bytes = 80'000'000'000;
    llm::ParallelConfig layout{.tp = 2, .pp = 2, .dp = 2};
    layout.sequence_parallel = true;
    const scenario::LlmScenario scenario = scenario::layout_scenario(request, layout);
    const double bound_us = scenario::iteration_lower_bound_us(scenario);
    const double simulated_us =
        scenario::simulate_layout(scenario, scenario::SimulatedRanks::kPipelineRepresentatives)
            .summary.iteration_us;
    std::cout << llm::fp8_recipe_name(recipe) << " " << short_layout_name(layout) << ": bound "
              << bound_us << " us, simulated " << simulated_us << " us\n";
    EXPECT_GT(bound_us, 0.0);
    EXPECT_LE(bound_us, simulated_us) << llm::fp8_recipe_name(recipe);
  }
}

// The distributed optimizer's switches on the layer probe, which runs without optimizer sharding:
// `plan --overlap-param-gather` made its probe refuse the layout (the gather overlap without
// ZeRO) and ended the search; FP8 primary weights keep ZeRO 1 in the probe (they need it).
// Each layout's bound lies below its simulated time.
TEST(PlanSearch, DistributedOptimizerSwitchesBoundBelowTheirSimulation) {
  llm::TransformerConfig model = test_support::small_moe(2, 16);
  model.dtype = DType::kFloat8;
  scenario::PlanRequest request = one_hgx_h100(model);
  request.device_memory.capacity_bytes = 80'000'000'000;
  request.limits.gpus = 8;
  request.limits.max_micro_batch = 1;
  request.limits.max_virtual_stages = 1;
  request.limits.overlap_param_gather = true;
  request.limits.fp8_param_gather = true;
  const auto layouts = enumerate_layouts(request.model, request.limits);
  const auto found = std::find_if(layouts.begin(), layouts.end(), [](const auto& p) {
    return p.overlap_param_gather && p.fp8_param_gather && p.pp > 1 && p.dp > 1;
  });
  ASSERT_NE(found, layouts.end());
  for (bool fp8_params : {true, false}) {
    llm::ParallelConfig layout = *found;
    layout.fp8_param_gather = fp8_params;
    const scenario::LlmScenario scenario = scenario::layout_scenario(request, layout);
    double bound_us = 0;
    ASSERT_NO_THROW(bound_us = scenario::iteration_lower_bound_us(scenario));
    const double simulated_us =
        scenario::simulate_layout(scenario, scenario::SimulatedRanks::kPipelineRepresentatives)
            .summary.iteration_us;
    EXPECT_GT(bound_us, 0.0);
    EXPECT_LE(bound_us, simulated_us) << short_layout_name(layout);
  }
}

// A MoE model whose first 3 layers are dense (DeepSeek-V3's first_k_dense 3) has no MoE layer
// in the layer probe's 3 one-layer stages: the probe used to refuse the model. It now probes
// each kind of layer alone and weights them by the model's layer counts (3 of 6 each here): the
// bound lies between the dense and the MoE probe's and below the simulation of the whole model.
TEST(PlanSearch, DenseAndMoeLayersBoundWithTheirMeanWork) {
  scenario::PlanRequest request = one_hgx_h100(test_support::small_moe(6, 16));
  request.model.moe.first_dense_layers = 3;
  llm::ParallelConfig parallel;
  parallel.dp = 8;
  parallel.ep = 8;
  parallel.micro_batch = 1;
  const scenario::LlmScenario mixed = scenario::layout_scenario(request, parallel);
  const scenario::LayerWork work = scenario::layer_work(mixed);
  scenario::LlmScenario moe_only = mixed;
  moe_only.model.moe.first_dense_layers = 0;
  const scenario::LayerWork moe = scenario::layer_work(moe_only);
  scenario::LlmScenario dense_only = mixed;
  dense_only.model.moe = {};
  dense_only.parallel.ep = 1;
  const scenario::LayerWork dense = scenario::layer_work(dense_only);
  EXPECT_GT(dense.forward_us, 0.0);
  EXPECT_NEAR(work.forward_us, (moe.forward_us + dense.forward_us) / 2, 1e-9);
  EXPECT_NEAR(work.backward_us, (moe.backward_us + dense.backward_us) / 2, 1e-9);
  const double bound_us = scenario::iteration_lower_bound_us(mixed);
  const double simulated_us =
      scenario::simulate_layout(mixed, scenario::SimulatedRanks::kPipelineRepresentatives)
          .summary.iteration_us;
  EXPECT_GT(bound_us, 0.0);
  EXPECT_LE(bound_us, simulated_us);
}

TEST(PlanSearch, SmallModelOnOneNodePrunedSearchEqualsExhaustive) {
  const std::string source = PERFSIM_SOURCE_DIR;
  llm::TransformerConfig model = test_support::small_gpt(6, 1024, 8);
  model.attention = llm::AttentionKernel::kUnfused;
  model.dropout = true;
  const topology::Topology topology =
      topology::load_topology(source + "/configs/topologies/dgx-a100.json");
  const std::string device_file = source + "/configs/devices/A100-80GB.json";
  const std::string device_json = io::read_file_decompressed(device_file);
  memory::DeviceMemory device;
  device.capacity_bytes = 80'000'000'000;

  EnumerationLimits limits;
  limits.gpus = 8;
  limits.max_micro_batch = 2;
  limits.max_virtual_stages = 2;
  const MemoryFilter filter = keep_fitting(model, enumerate_layouts(model, limits), device);
  ASSERT_GT(filter.fitting.size(), 10u);
  EXPECT_EQ(filter.out_of_memory, 0u);  // a 0.1e9-parameter model fits everywhere

  auto scenario_of = [&](const llm::ParallelConfig& parallel) {
    return scenario::LlmScenario{model, parallel, topology, device_json, device_file, ""};
  };
  SearchCallbacks callbacks;
  callbacks.simulate = [&](const FittingLayout& layout) {
    return scenario::score_layout(
        scenario::simulate_layout(scenario_of(layout.parallel),
                                  scenario::SimulatedRanks::kPipelineRepresentatives),
        layout);
  };
  const SearchResult exhaustive = search_top_layouts(filter.fitting, 3, callbacks);
  callbacks.lower_bound_us = [&](const FittingLayout& layout) {
    return scenario::iteration_lower_bound_us(scenario_of(layout.parallel));
  };
  const SearchResult pruned = search_top_layouts(filter.fitting, 3, callbacks, 2);
  EXPECT_GT(pruned.pruned, 0u);
  ASSERT_EQ(pruned.top.size(), 3u);
  ASSERT_EQ(exhaustive.top.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(short_layout_name(pruned.top[i].parallel),
              short_layout_name(exhaustive.top[i].parallel));
    EXPECT_DOUBLE_EQ(pruned.top[i].iteration_us, exhaustive.top[i].iteration_us);
  }
  const LayoutScore& best = pruned.top.front();
  EXPECT_EQ(best.parallel.recompute, llm::Recompute::kNone) << short_layout_name(best.parallel);
  EXPECT_GT(best.mfu, 0.0);
  EXPECT_LT(best.mfu, 1.0);
  EXPECT_GT(best.headroom_bytes, 0);
  std::cout << format_plan_table(pruned.top) << "simulated " << pruned.simulated << " of "
            << pruned.candidates << " (exhaustive " << exhaustive.simulated << ")\n";
}

}  // namespace
}  // namespace perfsim::planner

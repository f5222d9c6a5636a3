#include "scenario/plan_simulation.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "devices/device_spec.hpp"
#include "generators/llm/llm_collective_bus_rates.hpp"
#include "mpi_sim/engine/in_process_clock_sync.hpp"
#include "mpi_sim/engine/local_scheduler.hpp"
#include "mpi_sim/engine/rank_simulator.hpp"
#include "mpi_sim/engine/symmetric_clock_sync.hpp"
#include "perfsim/error.hpp"

namespace perfsim::scenario {
namespace {

namespace llm = generators::llm;

// The probe's layer times include the host's launch latency after each receive, which a
// long-running stage may have hidden: the bound gives 1 % of them back.
constexpr double kHostSlack = 0.99;

std::vector<RankResult> run_programs(const SimulationInputs& inputs, engine::ClockSync& sync,
                                     bool record_timeline = false) {
  return engine::simulate_programs(inputs.programs, inputs.overheads, sync, record_timeline);
}

// The first slice whose collective key starts with `group` + "#", or the last one.
const TimelineSlice* find_slice(const RankResult& result, const std::string& group, bool last) {
  const std::string prefix = group + "#";
  const TimelineSlice* found = nullptr;
  for (const TimelineSlice& slice : result.timeline) {
    if (slice.collective_key.rfind(prefix, 0) != 0)
      continue;
    found = &slice;
    if (!last)
      break;
  }
  if (!found)
    throw RuntimeFailure("layer probe: rank " + std::to_string(result.sim_rank) +
                         " has no transfer on " + group);
  return found;
}

double end_of(const TimelineSlice& slice) {
  return slice.start_us + slice.duration_us;
}

// Compute kernels' time inside [from, to).
double compute_busy_between(const RankResult& result, double from_us, double to_us) {
  double busy = 0;
  for (const TimelineSlice& slice : result.timeline) {
    if (slice.lane != kDefaultComputeStream || !slice.collective_key.empty())
      continue;
    busy += std::max(0.0, std::min(to_us, end_of(slice)) - std::max(from_us, slice.start_us));
  }
  return busy;
}

// One layer's work on the middle of three one-layer stages (layer_work's probe).
LayerWork probe_layer_work(const LlmScenario& scenario) {
  constexpr int kProbeStages = 3;  // the middle one has neighbours on both sides
  LlmScenario probe = scenario;
  probe.model.layers = kProbeStages;
  llm::ParallelConfig& parallel = probe.parallel;
  parallel.pp = kProbeStages;
  // Without the once-per-iteration and once-per-chunk work the bound multiplies by the layers
  // and micro-batches (FP8 weight casts, delayed scaling's amax reductions).
  parallel.layer_probe = true;
  // One data-parallel rank, or with experts one EP group (its all-to-alls are layer work).
  parallel.dp = parallel.ep > 1 ? parallel.ep : 1;
  parallel.virtual_stages = 1;
  // One layer per probe stage: the layout's own split of its layers does not apply.
  parallel.pp_layers.clear();
  parallel.pp_layout.clear();
  parallel.first_stage_layers = parallel.last_stage_layers = 0;
  parallel.account_for_embedding = parallel.account_for_loss = false;
  // No optimizer sharding, so no parameter gather to overlap; FP8 primary weights need the
  // distributed optimizer and stay (their per-iteration transposes are left out as above).
  parallel.zero_stage = parallel.fp8_param_gather ? 1 : 0;
  parallel.overlap_param_gather = false;
  // The EP all-to-all overlap pairs two micro-batches' steps and needs PP 1 or interleaving,
  // which the one-micro-batch probe is not: it runs without it (and without the delayed weight
  // gradients that need it) and counts only the compute kernels of each window. The combined
  // steps run the same kernels, beside an all-to-all on fewer SMs, never faster, so the bound
  // stays one the overlapped run cannot beat.
  const bool compute_only = parallel.moe_a2a_overlap;
  parallel.moe_a2a_overlap = parallel.delay_wgrad_compute = false;
  parallel.micro_batch = llm::micro_batch_size(scenario.model, scenario.parallel);
  parallel.global_batch = parallel.micro_batch * parallel.dp;  // one micro-batch
  const int gpus_per_node = probe.topology.node.gpus;
  const int nodes = (parallel.world_size() + gpus_per_node - 1) / gpus_per_node;
  if (nodes > probe.topology.nodes)
    probe.topology = topology::with_node_count(std::move(probe.topology), nodes);
  const std::vector<int> ranks = pipeline_representatives(parallel);
  const SimulationInputs inputs = load_llm_inputs(probe, ranks);
  engine::SymmetricClockSync sync(ranks);
  const std::vector<RankResult> results = run_programs(inputs, sync, true);
  const RankResult& middle = results.at(1);
  const std::string from_previous = point_to_point_group_name(ranks[0], ranks[1]);
  const std::string to_next = point_to_point_group_name(ranks[1], ranks[2]);
  const std::string from_next = point_to_point_group_name(ranks[2], ranks[1]);
  const std::string to_previous = point_to_point_group_name(ranks[1], ranks[0]);
  const double forward_received_us = end_of(*find_slice(middle, from_previous, false));
  const double forward_sent_us = find_slice(middle, to_next, false)->start_us;
  const double gradient_received_us = end_of(*find_slice(middle, from_next, true));
  const double gradient_sent_us = find_slice(middle, to_previous, true)->start_us;
  LayerWork work;
  work.forward_us = compute_only
                        ? compute_busy_between(middle, forward_received_us, forward_sent_us)
                        : forward_sent_us - forward_received_us;
  // Recomputation may run while the stage waits for the gradient: count its kernels there.
  work.backward_us =
      (compute_only ? compute_busy_between(middle, gradient_received_us, gradient_sent_us)
                    : gradient_sent_us - gradient_received_us) +
      compute_busy_between(middle, forward_sent_us, gradient_received_us);
  return work;
}

}  // namespace

LayerWork layer_work(const LlmScenario& scenario) {
  const llm::TransformerConfig& model = scenario.model;
  if (!model.is_moe() || model.moe_layer_count() == model.layers)
    return probe_layer_work(scenario);
  // Dense and MoE layers (DeepSeek-V3's first 3, Llama 4 Maverick's every other one): the probe
  // of either kind alone (the model's first dense layers could fill all three probe stages),
  // averaged over the model's layers. The bound stays one: its stages' mean work times
  // (M + P - 1) is at most a flow shop's sum of the stages plus (M - 1) times the largest.
  LlmScenario moe_only = scenario;
  moe_only.model.moe.first_dense_layers = 0;
  moe_only.model.moe.layer_freq = 1;
  LlmScenario dense_only = scenario;
  dense_only.model.moe = {};
  llm::ParallelConfig& dense = dense_only.parallel;
  dense.ep = 1;
  dense.etp = 0;
  dense.moe_token_dispatcher = llm::MoeTokenDispatcher::kAllToAll;
  dense.moe_a2a_overlap = dense.delay_wgrad_compute = dense.moe_shared_expert_overlap = false;
  const LayerWork a = probe_layer_work(moe_only);
  const LayerWork b = probe_layer_work(dense_only);
  const double moe_share = static_cast<double>(model.moe_layer_count()) / model.layers;
  auto mean = [moe_share](double moe_us, double dense_us) {
    return moe_share * moe_us + (1 - moe_share) * dense_us;
  };
  return {mean(a.forward_us, b.forward_us), mean(a.backward_us, b.backward_us)};
}

double iteration_lower_bound_us(const llm::TransformerConfig& model,
                                const llm::ParallelConfig& parallel, const LayerWork& layer) {
  const double p = parallel.pp;
  const double v = parallel.virtual_stages;
  const double chunk_layers = model.layers / (p * v);
  const double m = llm::micro_batches_per_iteration(model, parallel);
  const double layer_us = layer.forward_us + layer.backward_us;
  const double bound = parallel.virtual_stages == 1 ? (m + p - 1) * chunk_layers * layer_us
                                                    : (p - 1) * chunk_layers * layer.forward_us +
                                                          m * v * chunk_layers * layer_us;
  return kHostSlack * bound;
}

double iteration_lower_bound_us(const LlmScenario& scenario) {
  return iteration_lower_bound_us(scenario.model, scenario.parallel, layer_work(scenario));
}

std::vector<int> pipeline_representatives(const llm::ParallelConfig& parallel) {
  std::vector<int> ranks;
  for (int stage = 0; stage < parallel.pp; ++stage)
    ranks.push_back(llm::rank_of(parallel, {0, 0, stage, 0}));
  return ranks;
}

LayoutSimulation simulate_layout(const LlmScenario& scenario, SimulatedRanks ranks) {
  std::vector<int> simulated;
  if (ranks == SimulatedRanks::kAll) {
    for (int rank = 0; rank < scenario.parallel.world_size(); ++rank)
      simulated.push_back(rank);
  } else {
    simulated = pipeline_representatives(scenario.parallel);
  }
  const SimulationInputs inputs = load_llm_inputs(scenario, simulated);
  LayoutSimulation simulation;
  if (ranks == SimulatedRanks::kAll) {
    engine::InProcessClockSync sync;
    simulation.results = run_programs(inputs, sync);
  } else {
    engine::SymmetricClockSync sync(simulated);
    simulation.results = run_programs(inputs, sync);
  }
  const devices::DeviceSpec device =
      devices::parse_device_json(scenario.device_json, scenario.device_source);
  simulation.summary = summarize_llm_run(
      scenario.model, scenario.parallel,
      device.gemm_peak_flops_per_s(scenario.model.activation_dtype()), simulation.results);
  return simulation;
}

planner::LayoutScore score_layout(const LayoutSimulation& simulation,
                                  const planner::FittingLayout& layout) {
  planner::LayoutScore score;
  score.parallel = layout.parallel;
  score.iteration_us = simulation.summary.iteration_us;
  score.mfu = simulation.summary.mfu;
  score.peak_bytes = layout.memory.worst().total_bytes;
  score.headroom_bytes = layout.memory.verdict.margin_bytes;
  const std::vector<std::pair<std::string, double>> exposed(
      simulation.summary.exposed_us_by_kind.begin(), simulation.summary.exposed_us_by_kind.end());
  std::tie(score.dominant_comm, score.dominant_exposed_us) = planner::dominant_entry(exposed);
  return score;
}

LlmScenario layout_scenario(const PlanRequest& request, const llm::ParallelConfig& parallel) {
  llm::ParallelConfig layout = with_te_workspaces(
      llm::with_expert_node_layout(llm::with_collective_bus_rates(parallel, request.topology),
                                   request.topology),
      request.device_memory.architecture);
  // The device's rates for the all-to-all overlap's windows; a request without a device file
  // (tests of the layout alone) keeps 0: whole pieces marked.
  if (!request.device_json.empty())
    layout =
        with_compute_rate(std::move(layout), request.model,
                          devices::parse_device_json(request.device_json, request.device_file));
  return LlmScenario{request.model,       std::move(layout),   request.topology,
                     request.device_json, request.device_file, request.assets_path,
                     request.calibration};
}

PlanOutcome plan_layouts(const PlanRequest& request) {
  PlanOutcome outcome;
  const auto layouts = planner::enumerate_layouts(request.model, request.limits);
  outcome.layouts = layouts.size();
  const planner::MemoryFilter filter =
      planner::keep_fitting(request.model, layouts, request.device_memory);
  outcome.out_of_memory = filter.out_of_memory;
  auto scenario_of = [&](const llm::ParallelConfig& parallel) {
    return layout_scenario(request, parallel);
  };
  planner::SearchCallbacks callbacks;
  std::mutex simulated_lock;  // --jobs simulates on several threads
  callbacks.simulate = [&](const planner::FittingLayout& layout) {
    planner::LayoutScore score = score_layout(
        simulate_layout(scenario_of(layout.parallel), SimulatedRanks::kPipelineRepresentatives),
        layout);
    const std::lock_guard<std::mutex> hold(simulated_lock);
    outcome.simulated.push_back(score);
    return score;
  };
  // Layer work depends on these choices only: probe each combination once. The expert TP
  // degree and the MoE switches the enumerator sets per layout (dispatcher, all-to-all and
  // shared-expert overlaps) change the layer's ops, so they are part of the key. The delayed
  // weight gradients are not: layer_work runs the probe without them (they need the all-to-all
  // overlap, which the one-micro-batch probe turns off), so a layout with and one without them
  // share one probe. Bounds are computed on this thread before any simulation starts, so the
  // cache needs no lock.
  using LayerKey = std::tuple<int, int, bool, llm::Recompute, std::string, int, int, std::string,
                              int, llm::MoeTokenDispatcher, bool, bool>;
  std::map<LayerKey, LayerWork> layer_cache;
  if (!request.exhaustive) {
    callbacks.lower_bound_us = [&](const planner::FittingLayout& layout) {
      const llm::ParallelConfig& parallel = layout.parallel;
      const LayerKey key{parallel.tp,
                         parallel.cp,
                         parallel.sequence_parallel,
                         parallel.recompute,
                         llm::recompute_modules_name(parallel.recompute_modules),
                         llm::micro_batch_size(request.model, parallel),
                         parallel.ep,
                         llm::rank_order_name(parallel.order),
                         parallel.expert_tp(),
                         parallel.moe_token_dispatcher,
                         parallel.moe_a2a_overlap,
                         parallel.moe_shared_expert_overlap};
      auto found = layer_cache.find(key);
      if (found == layer_cache.end())
        found = layer_cache.emplace(key, layer_work(scenario_of(parallel))).first;
      return iteration_lower_bound_us(request.model, parallel, found->second);
    };
  }
  callbacks.progress = request.progress;
  outcome.search =
      planner::search_top_layouts(filter.fitting, request.top, callbacks, request.jobs);
  outcome.not_fitting = filter.not_fitting;
  std::set<std::string> simulated;
  for (const planner::LayoutScore& score : outcome.simulated)
    simulated.insert(planner::short_layout_name(score.parallel));
  for (const planner::FittingLayout& layout : filter.fitting)
    if (callbacks.lower_bound_us && !simulated.count(planner::short_layout_name(layout.parallel)))
      outcome.pruned.emplace_back(layout, callbacks.lower_bound_us(layout));
  return outcome;
}

}  // namespace perfsim::scenario

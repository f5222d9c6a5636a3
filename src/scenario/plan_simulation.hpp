#pragma once
// One LLM layout simulated for the planner: either every rank (InProcessClockSync), or only
// one representative per pipeline stage (tensor- and data-parallel index 0) with
// SymmetricClockSync, which gives the same iteration time on a symmetric topology at 1/(TP x DP)
// of the cost (tests/unit/planner_symmetric_simulation_test.cpp compares the two).
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "generators/llm/llm_parallel_config.hpp"
#include "perfsim/rank_result.hpp"
#include "planner/layout_enumerator.hpp"
#include "planner/plan_search.hpp"
#include "scenario/llm_simulation.hpp"
#include "topology/topology.hpp"

namespace perfsim::scenario {

// Global rank numbers of (tp 0, dp 0, stage s) for s = 0 .. PP-1.
std::vector<int> pipeline_representatives(const generators::llm::ParallelConfig& parallel);

enum class SimulatedRanks { kAll, kPipelineRepresentatives };

struct LayoutSimulation {
  LlmRunSummary summary;
  std::vector<RankResult> results;  // the simulated ranks only
};

// How long one transformer layer keeps a pipeline stage busy for one micro-batch: the forward
// (from receiving the activation to sending it on), and the backward with its recomputation,
// tensor-parallel communication waits included. Measured on a probe: the same model cut to three
// one-layer pipeline stages and one micro-batch, simulated with the same models; the middle
// stage's times. Depends only on TP, sequence parallelism, recomputation and the micro-batch
// (and for MoE models on EP, expert TP and the MoE switches). With moe_a2a_overlap the probe runs
// without it and counts only the compute kernels of each window (the overlapped run hides
// all-to-all time, never kernel time). A model with dense and MoE layers is probed as each kind
// alone, the two weighted by the model's layer counts.
struct LayerWork {
  double forward_us = 0;
  double backward_us = 0;
};
LayerWork layer_work(const LlmScenario& scenario);

// A time the simulated iteration of this layout cannot beat: a stage runs its layers' forwards
// and backwards one after another on its compute stream, each at least as long as on the probe
// (pipeline transfers, data-parallel communication, embeddings and the optimizer left out), so
// with L_c layers per model chunk, M micro-batches and P stages, times 0.99 (host slack):
//   no interleaving (1F1B fill, steady state, drain):   (M + P - 1) L_c (F + B)
//   V chunks per stage (the last stage waits for P - 1 first chunks): (P - 1) L_c F + M V L_c (F +
//   B)
double iteration_lower_bound_us(const generators::llm::TransformerConfig& model,
                                const generators::llm::ParallelConfig& parallel,
                                const LayerWork& layer);
// The same with the probe run for this layout.
double iteration_lower_bound_us(const LlmScenario& scenario);

// Runs one iteration in this process (no MPI). Throws InputError for layouts the generator or
// the topology reject.
LayoutSimulation simulate_layout(const LlmScenario& scenario, SimulatedRanks ranks);

// A whole plan: enumerate, drop what does not fit, search (planner/plan_search.hpp) with
// pipeline-representative simulations and, unless exhaustive, the lower bound above.
struct PlanRequest {
  generators::llm::TransformerConfig model;
  topology::Topology topology;
  std::string device_json;
  std::string device_file;
  memory::DeviceMemory device_memory;
  planner::EnumerationLimits limits;
  std::size_t top = 5;
  int jobs = 1;
  bool exhaustive = false;
  std::string assets_path;  // "" = shipped fitted curves where they cover, else nominal
  validation::EndToEndCalibration calibration;  // applied to every layout; empty = none
  std::function<void(const planner::SearchProgress&)> progress;
};

struct PlanOutcome {
  std::size_t layouts = 0;  // that divide the model and the GPUs
  std::size_t out_of_memory = 0;
  planner::SearchResult search;
  // What became of every layout, for the HTML report: each simulated one (in the order they
  // finished), each pruned one with its lower bound, each that does not fit.
  std::vector<planner::LayoutScore> simulated;
  std::vector<std::pair<planner::FittingLayout, double>> pruned;
  std::vector<planner::FittingLayout> not_fitting;
};

PlanOutcome plan_layouts(const PlanRequest& request);

// The scenario of one of the plan's layouts: its collective bus rates over the request's
// topology and the Transformer Engine workspaces of its device (with_te_workspaces).
LlmScenario layout_scenario(const PlanRequest& request,
                            const generators::llm::ParallelConfig& parallel);

// The planner's row for a simulated layout: time, MFU, closed-form memory, and the group kind
// compute waited for longest.
planner::LayoutScore score_layout(const LayoutSimulation& simulation,
                                  const planner::FittingLayout& layout);

}  // namespace perfsim::scenario

#include "scenario/run_validation.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "devices/device_spec.hpp"
#include "generators/llm/llm_collective_bus_rates.hpp"
#include "generators/llm/llm_flops.hpp"
#include "generators/llm/llm_gradient_dtype.hpp"
#include "generators/llm/llm_trace_builder.hpp"
#include "io/input_file.hpp"
#include "memory/llm_memory.hpp"
#include "mpi_sim/engine/local_scheduler.hpp"
#include "mpi_sim/engine/symmetric_clock_sync.hpp"
#include "perfsim/error.hpp"
#include "scenario/config_path.hpp"
#include "scenario/device_argument.hpp"
#include "scenario/framework_switches.hpp"
#include "scenario/inferred_pipeline_split.hpp"
#include "scenario/llm_calibration.hpp"
#include "scenario/llm_simulation.hpp"
#include "scenario/plan_simulation.hpp"
#include "validation/framework_presets.hpp"

namespace perfsim::scenario {
namespace {

namespace llm = generators::llm;
using validation::EndToEndCalibration;
using validation::MeasuredKind;
using validation::RunRow;

std::string row_location(const RunRow& row) {
  return "line " + std::to_string(row.line);
}

bool gives_pipeline_split(const RunRow& row) {
  return !row.pp_layers.empty() || !row.pp_layout.empty() || row.first_stage_layers > 0 ||
         row.last_stage_layers > 0 || row.account_for_embedding || row.account_for_loss;
}

// The row's model file, for the switches a framework sets only on some models (a row's shape
// cells never describe experts or multi-latent attention); nullopt without a file or when it
// cannot be read (the scenario reader reports that).
std::optional<llm::TransformerConfig> row_model(const LlmSimulateOptions& options) {
  if (options.model_path.empty())
    return std::nullopt;
  try {
    return llm::load_transformer_config(options.model_path);
  } catch (const InputError&) {
    return std::nullopt;
  }
}

// The split assumed for a row that gives none and whose layers do not divide over its
// pipeline (inferred_pipeline_split.hpp); nullopt when nothing is assumed. The layer count is
// the row's, else its model file's (row_model).
std::optional<InferredPipelineSplit> inferred_split(
    const RunRow& row, const std::optional<llm::TransformerConfig>& model) {
  if (gives_pipeline_split(row) || row.pp * std::max(1, row.virtual_stages) <= 1)
    return std::nullopt;
  const int layers = row.layers > 0 ? row.layers : (model ? model->layers : 0);
  return infer_pipeline_split(layers, row.pp, std::max(1, row.virtual_stages));
}

// A switch cell of the row: a value it gives replaces simulate's default and is stated.
void take_cell(const std::optional<bool>& cell, bool& option, bool& stated) {
  stated = cell.has_value();
  if (cell)
    option = *cell;
}

// The expert tensor parallel size of a row that leaves etp empty, before its framework's say
// (framework_switches.hpp: the Megatron-Bridge MoE recipes run ETP 1): Megatron's default, TP,
// unless TP x EP cannot tile TP x CP x DP; then 1, the only other size such a layout can have
// run with (stated in the row's layout, as ETP 1). 0 keeps simulate's default (TP).
int expert_tp_of(const RunRow& row) {
  if (row.ep <= 1)
    return 0;
  const long attention_ranks = static_cast<long>(row.tp) * row.cp * row.dp;
  const bool tp_tiles = attention_ranks % (static_cast<long>(row.tp) * row.ep) == 0;
  return !tp_tiles && attention_ranks % row.ep == 0 ? 1 : 0;
}

LlmScenario scenario_of(const RunRow& row, const std::string& table,
                        const std::string& assets_path) {
  // The calibration is applied per row and point by RowModel, not by the scenario.
  const LlmSimulateOptions options = simulate_options_of_run(row, table, assets_path, "none");
  LlmScenario scenario;
  try {
    scenario = read_llm_scenario(options);
  } catch (const InputError& error) {
    throw InputError(table, row_location(row), error.what());
  }
  if (row.model.empty()) {  // a model from the row's shape cells: named after the row
    scenario.model.name = row.name;
    scenario.model.source = table + " " + row_location(row);
  }
  return scenario;
}

double measured_iteration_s(const RunRow& row, const llm::TransformerConfig& model) {
  switch (row.measured_kind) {
    case MeasuredKind::kIterationSeconds:
      return row.measured;
    case MeasuredKind::kTflopsPerGpu: {
      return narayanan_model_flops(model, row.global_batch) / (row.measured * 1e12 * row.gpus);
    }
    case MeasuredKind::kTokensPerSecondPerGpu:
      return static_cast<double>(row.global_batch) * model.seq_len / (row.measured * row.gpus);
  }
  return 0;
}

// One row's generated programs, simulated at any calibration point on demand (memoized: the
// fit visits the same points for many folds). The GEMM time scale multiplies every GEMM
// kernel's time: the analytical GEMM time is inversely proportional to the peak fraction it
// assumes, so this is the programs generated with that fraction divided by the scale
// (compute-bound GEMMs exactly). The kernels are rescaled in place from their generated
// times (kept aside) rather than copied: a copy of the programs per point cost more than
// simulating them.
class RowModel {
 public:
  // With `keep_results`, the ranks' results of every point are kept (an explained row).
  RowModel(SimulationInputs inputs, std::vector<int> ranks, CalibrationTarget device,
           bool keep_results)
      : inputs_(std::make_shared<SimulationInputs>(std::move(inputs))),
        ranks_(std::move(ranks)),
        device_(std::move(device)),
        keep_results_(keep_results) {
    for (engine::RankProgram& program : inputs_->programs)
      for (engine::SimOp& op : program.ops.mutable_ops())
        for (engine::SimKernel& kernel : op.kernels)
          if (kernel.category == KernelCategory::kGemm)
            gemm_kernels_.push_back({&kernel, kernel.duration_us});
  }
  RowModel(const RowModel&) = delete;  // gemm_kernels_ points into *inputs_
  RowModel& operator=(const RowModel&) = delete;

  const std::string& device() const { return device_.device; }
  const CalibrationTarget& target() const { return device_; }

  double iteration_us(const validation::CalibrationPoint& point) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = cache_.find(point); it != cache_.end())
      return it->second;
    for (auto& [kernel, generated_us] : gemm_kernels_)
      kernel->duration_us = generated_us * point.gemm_time_scale;
    const HostOverheads overheads = with_host_cost(inputs_->overheads, point);
    engine::SymmetricClockSync sync(ranks_);
    double iteration = 0;
    std::vector<RankResult> results =
        engine::simulate_programs(inputs_->programs, overheads, sync, false);
    for (const RankResult& result : results)
      iteration = std::max(iteration, result.iteration_us);
    cache_[point] = iteration;
    if (keep_results_)
      results_[point] = std::move(results);
    return iteration;
  }

  // The results iteration_us(point) simulated (kept only with keep_results).
  std::vector<RankResult> results(const validation::CalibrationPoint& point) {
    iteration_us(point);
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = results_.find(point);
    return it == results_.end() ? std::vector<RankResult>{} : it->second;
  }

  // The inputs for the report (the GEMM kernels hold the last point's times; the report reads
  // results and the workload's hooks, not kernel times).
  std::shared_ptr<const SimulationInputs> inputs() const { return inputs_; }

 private:
  std::shared_ptr<SimulationInputs> inputs_;
  std::vector<int> ranks_;
  CalibrationTarget device_;
  bool keep_results_ = false;
  std::map<validation::CalibrationPoint, std::vector<RankResult>> results_;
  std::vector<std::pair<engine::SimKernel*, DurationUs>> gemm_kernels_;  // with generated time
  std::mutex mutex_;  // one simulation of a row at a time (its kernels are rescaled in place)
  std::map<validation::CalibrationPoint, double> cache_;
};

struct SimulatedRow {
  RunPrediction prediction;
  std::unique_ptr<RowModel> model;  // null when the row was skipped
};

bool explained(const RunRow& row, const RunValidationRequest& request) {
  return std::find(request.explain.begin(), request.explain.end(), row.name) !=
         request.explain.end();
}

SimulatedRow simulate_row(const RunRow& row, const std::string& table,
                          const RunValidationRequest& request) {
  SimulatedRow out;
  RunPrediction& prediction = out.prediction;
  prediction.row = &row;
  if (!row.error.empty()) {  // a bad cell: named with the table and line, as simulate's errors
    prediction.skipped = InputError(table, row_location(row), row.error).what();
    return out;
  }
  try {
    const LlmScenario scenario = scenario_of(row, table, request.assets_path);
    prediction.layout = describe_layout(scenario.parallel);
    if (!gives_pipeline_split(row) &&
        (scenario.parallel.account_for_embedding || scenario.parallel.account_for_loss ||
         !scenario.parallel.pp_layers.empty()))
      prediction.layout += " (pipeline split assumed: the row gives none)";
    if (row.etp == 0 && scenario.parallel.expert_tp() != scenario.parallel.tp)
      prediction.layout += " (expert TP assumed: the row gives none)";
    prediction.measured_s = measured_iteration_s(row, scenario.model);
    std::vector<int> ranks = pipeline_representatives(scenario.parallel);
    // By the device file's name, so that an alias in one table matches the name in another.
    const devices::DeviceSpec device = read_device_argument(row.device);
    CalibrationTarget row_device{device.name, has_measured_gemm_efficiency(device),
                                 scenario.model.dtype == DType::kFloat8};
    prediction.memory_peak_bytes = 0;
    try {  // a layout the closed form cannot size still gets its time (no verdict)
      const memory::LlmMemoryEstimate footprint = memory::estimate_llm_memory(
          scenario.model, scenario.parallel, memory::device_memory_of(device));
      prediction.memory_peak_bytes = footprint.worst().total_bytes;
      prediction.memory = footprint.verdict;
    } catch (const InputError&) {
      prediction.memory = {};
    }
    out.model = std::make_unique<RowModel>(load_llm_inputs(scenario, ranks), std::move(ranks),
                                           std::move(row_device), explained(row, request));
    prediction.simulated_s = out.model->iteration_us({}) * 1e-6;
  } catch (const InputError& error) {
    prediction.skipped = error.what();
  } catch (const RuntimeFailure& error) {
    prediction.skipped = error.what();
  } catch (const std::exception& error) {
    prediction.skipped = std::string("cannot simulate: ") + error.what();
  }
  return out;
}

std::vector<SimulatedRow> simulate_rows(const validation::RunTable& table,
                                        const RunValidationRequest& request) {
  std::vector<SimulatedRow> rows(table.rows.size());
  std::atomic<std::size_t> next{0}, done{0};
  std::mutex progress_lock;
  auto worker = [&] {
    for (std::size_t i = next++; i < rows.size(); i = next++) {
      rows[i] = simulate_row(table.rows[i], table.source, request);
      const std::size_t finished = ++done;
      if (request.progress) {
        std::lock_guard<std::mutex> lock(progress_lock);
        request.progress("runs simulated", finished, rows.size());
      }
    }
  };
  const int jobs = std::max(1, std::min<int>(request.jobs, static_cast<int>(rows.size())));
  std::vector<std::thread> threads;
  for (int j = 1; j < jobs; ++j)
    threads.emplace_back(worker);
  worker();
  for (std::thread& thread : threads)
    thread.join();
  return rows;
}

// Fits on the rows at `indices` (of simulated rows); the GEMM time scale only when they all
// ran on one device (a scale is a property of a device's kernels, not of a table).
EndToEndCalibration fit_on(std::vector<SimulatedRow>& rows, const std::vector<std::size_t>& indices,
                           const RunValidationRequest& request) {
  std::vector<double> measured;
  std::set<std::string> devices;
  for (std::size_t index : indices) {
    measured.push_back(rows[index].prediction.measured_s * 1e6);
    devices.insert(rows[index].model->device());
  }
  const bool one_device = devices.size() == 1;
  EndToEndCalibration calibration =
      validation::fit_calibration(measured,
                                  [&](std::size_t i, const validation::CalibrationPoint& point) {
                                    return rows[indices[i]].model->iteration_us(point);
                                  },
                                  request.jobs, {one_device, request.fit_backward_host_cost});
  if (one_device)
    calibration.device = *devices.begin();
  return calibration;
}

// The point a row is predicted at: the calibration's host costs, its GEMM time scale where it
// applies to the row's device; no calibration: the models alone.
validation::CalibrationPoint prediction_point(const SimulatedRow& row,
                                              const EndToEndCalibration& calibration) {
  if (calibration.fitted_on.empty())
    return {};
  validation::CalibrationPoint point = calibration.host;
  point.gemm_time_scale = gemm_time_scale_for(calibration, row.model->target());
  return point;
}

double calibrated_s(SimulatedRow& row, const EndToEndCalibration& calibration) {
  return (row.model->iteration_us(prediction_point(row, calibration)) + calibration.iteration_us) *
         1e-6;
}

// Checks the names asked for before anything is simulated.
void check_explained_rows(const validation::RunTable& table, const RunValidationRequest& request) {
  if (request.explain.empty())
    return;
  if (request.folds > 1)
    throw InputError("--explain", "",
                     "cannot be combined with --cv: each fold's calibration exists only in "
                     "memory, so no simulate command can repeat a held-fold prediction");
  for (const std::string& name : request.explain) {
    const bool found = std::any_of(table.rows.begin(), table.rows.end(),
                                   [&](const RunRow& row) { return row.name == name; });
    if (!found)
      throw InputError(
          table.source, "--explain",
          "row \"" + name + "\" is not in the table (" + std::to_string(table.rows.size()) +
              " rows; names as in its name column, e.g. \"" + table.rows.front().name + "\")");
  }
}

// The calibration a row's prediction takes: the request's, or (shipped_calibration_by_device)
// the shipped one of the row's device.
EndToEndCalibration row_calibration(const SimulatedRow& row, const RunValidationRequest& request) {
  return request.shipped_calibration_by_device
             ? calibration_argument("", row.model->target().device)
             : request.calibration;
}

std::vector<RunExplanation> explain_rows(const validation::RunTable& table,
                                         std::vector<SimulatedRow>& rows,
                                         const RunValidationRequest& request) {
  std::vector<RunExplanation> explanations;
  for (const std::string& name : request.explain) {
    for (std::size_t i = 0; i < rows.size(); ++i) {
      if (table.rows[i].name != name)
        continue;
      RunExplanation explanation;
      explanation.row = &table.rows[i];
      explanation.prediction = i;
      if (rows[i].model) {
        // Shipped by device: simulate's default chooses the same file for the row's device.
        explanation.options = simulate_options_of_run(
            table.rows[i], table.source, request.assets_path,
            request.shipped_calibration_by_device ? "" : request.calibration_argument);
        const EndToEndCalibration calibration = row_calibration(rows[i], request);
        explanation.iteration_term_us = calibration.iteration_us;
        explanation.inputs = rows[i].model->inputs();
        explanation.results = rows[i].model->results(prediction_point(rows[i], calibration));
      }
      explanations.push_back(std::move(explanation));
    }
  }
  return explanations;
}

std::vector<GroupStatistics> group_statistics(const std::vector<RunPrediction>& predictions) {
  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> by_group;
  for (const RunPrediction& prediction : predictions) {
    if (!prediction.skipped.empty() || prediction.row->group.empty())
      continue;
    auto& [predicted, measured] = by_group[prediction.row->group];
    predicted.push_back(prediction.predicted_s);
    measured.push_back(prediction.measured_s);
  }
  std::vector<GroupStatistics> groups;
  for (const auto& [name, values] : by_group) {
    GroupStatistics statistics;
    statistics.group = name;
    statistics.runs = values.first.size();
    statistics.spearman = validation::spearman(values.first, values.second);
    statistics.regret = validation::pick_regret(values.first, values.second);
    groups.push_back(statistics);
  }
  return groups;
}

void finish(RunValidationReport& report) {
  std::vector<double> errors;
  for (RunPrediction& prediction : report.predictions) {
    if (!prediction.skipped.empty())
      continue;
    prediction.signed_error = prediction.predicted_s / prediction.measured_s - 1.0;
    errors.push_back(prediction.signed_error);
  }
  report.errors = validation::summarize_errors(errors);
  report.groups = group_statistics(report.predictions);
}

}  // namespace

LlmSimulateOptions simulate_options_of_run(const RunRow& row, const std::string& table,
                                           const std::string& assets_path,
                                           const std::string& calibration) {
  if (!row.error.empty())
    throw InputError(table, row_location(row), row.error);
  LlmSimulateOptions options;
  if (!row.model.empty())
    options.model_path = config_path(row.model, "models");
  // The model file, read once: the pipeline split and some framework switches depend on it.
  const std::optional<llm::TransformerConfig> model = row_model(options);
  llm::ModelShapeOverrides& shape = options.shape;
  shape.layers = row.layers;
  shape.hidden = row.hidden;
  shape.heads = row.heads;
  shape.kv_heads = row.kv_heads;
  shape.head_dim = row.head_dim;
  shape.ffn_hidden = row.ffn_hidden;
  shape.vocab = row.vocab;
  shape.seq_len = row.seq_len;
  // A switch cell the row gives is stated: its framework does not override it.
  StatedSwitches stated;
  shape.attention = row.attention;
  stated.attention = !row.attention.empty();
  shape.dropout = row.dropout;
  stated.dropout = row.dropout.has_value();
  shape.gated_ffn = row.gated_ffn;
  shape.position_embedding = row.position_embedding;
  shape.tied_embeddings = row.tied_embeddings;
  options.tp = row.tp;
  options.pp = row.pp;
  options.dp = row.dp;
  options.cp = row.cp;
  options.ep = row.ep;
  options.etp = row.etp > 0 ? row.etp : expert_tp_of(row);
  stated.etp = row.etp > 0;
  if (!row.order.empty())
    options.order = row.order;
  options.virtual_stages = row.virtual_stages;
  options.pp_layers = row.pp_layers;
  options.pp_layout = row.pp_layout;
  options.first_stage_layers = row.first_stage_layers;
  options.last_stage_layers = row.last_stage_layers;
  options.account_for_embedding = row.account_for_embedding;
  options.account_for_loss = row.account_for_loss;
  if (const std::optional<InferredPipelineSplit> split = inferred_split(row, model)) {
    options.account_for_embedding = split->account_for_embedding;
    options.account_for_loss = split->account_for_loss;
    options.pp_layers = split->virtual_stage_layers;
  }
  options.micro_batch = row.micro_batch;
  options.global_batch = row.global_batch;
  // A row's sequence_parallel cell holds for its TP group; TP 1 has none to split over.
  options.sequence_parallel = row.sequence_parallel && row.tp > 1;
  options.recompute = row.recompute;
  options.recompute_modules = row.recompute_modules;
  // Megatron's distributed optimizer shards optimizer state over DP as ZeRO-1 does:
  // gradients reduce-scattered, parameters all-gathered.
  options.distributed_optimizer = row.distributed_optimizer;
  options.zero_stage = row.zero_stage;
  take_cell(row.fp8_param_gather, options.fp8_param_gather, stated.fp8_param_gather);
  stated.grad_reduce_dtype = !row.grad_reduce_dtype.empty();
  if (stated.grad_reduce_dtype)
    options.grad_reduce_dtype = row.grad_reduce_dtype;
  options.moe_imbalance = row.moe_imbalance;
  take_cell(row.overlap_grad_reduce, options.overlap_grad_reduce, stated.overlap_grad_reduce);
  take_cell(row.overlap_param_gather, options.overlap_param_gather, stated.overlap_param_gather);
  take_cell(row.tp_comm_overlap, options.tp_comm_overlap, stated.tp_comm_overlap);
  take_cell(row.overlap_p2p_comm, options.overlap_p2p_comm, stated.overlap_p2p_comm);
  take_cell(row.p2p_scatter_gather, options.p2p_scatter_gather, stated.p2p_scatter_gather);
  options.moe_a2a_overlap = row.moe_a2a_overlap;
  options.delay_wgrad_compute = row.delay_wgrad_compute;
  options.moe_shared_expert_overlap = row.moe_shared_expert_overlap;
  take_cell(row.moe_router_fusion, options.moe_router_fusion, stated.moe_router_fusion);
  take_cell(row.moe_permute_fusion, options.moe_permute_fusion, stated.moe_permute_fusion);
  options.moe_router_force_load_balancing = row.moe_router_force_load_balancing;
  options.moe_expert_capacity_factor = row.moe_expert_capacity_factor;
  options.moe_pad_expert_input_to_capacity = row.moe_pad_expert_input_to_capacity;
  options.moe_grouped_gemm = row.moe_grouped_gemm.value_or(options.moe_grouped_gemm);
  options.moe_router_dtype = row.moe_router_dtype;
  options.moe_token_dispatcher = row.moe_token_dispatcher;
  options.moe_flex_backend = row.moe_flex_backend;
  options.bias_swiglu_fusion = row.bias_swiglu_fusion.value_or(options.bias_swiglu_fusion);
  options.rope_fusion = row.rope_fusion.value_or(options.rope_fusion);
  stated.cross_entropy_fusion = !row.cross_entropy_fusion.empty();
  if (stated.cross_entropy_fusion && row.cross_entropy_fusion != "none") {
    options.cross_entropy_fusion = true;
    options.cross_entropy_fusion_impl = row.cross_entropy_fusion;
  }
  options.dtype = row.dtype;
  if (!row.fp8_recipe.empty())
    options.fp8_recipe = row.fp8_recipe;
  take_cell(row.get_batch_sync, options.get_batch_sync, stated.get_batch_sync);
  take_cell(row.timer_syncs, options.timer_syncs, stated.timer_syncs);
  // Empty switch cells take the row's framework's value.
  apply_framework_switches(validation::framework_preset(row.framework),
                           {.moe = model && model->is_moe(), .mla = model && model->is_mla()},
                           stated, options);
  options.topology_path = config_path(row.topology, "topologies");
  // An empty nodes cell: as many of the topology's nodes as the GPUs fill.
  const int per_node = topology::load_topology(options.topology_path).node.gpus;
  const int nodes = row.nodes > 0 ? row.nodes : (row.gpus + per_node - 1) / per_node;
  if (static_cast<long long>(nodes) * per_node < row.gpus)
    throw InputError(table, row_location(row) + " nodes",
                     std::to_string(nodes) + " nodes x " + std::to_string(per_node) +
                         " GPUs hold fewer than " + std::to_string(row.gpus) + " GPUs");
  options.topology_size.nodes = nodes;
  options.device_path = row.device;
  options.assets_path = assets_path;
  options.calibration = calibration;
  return options;
}

LlmScenario scenario_of_run(const RunRow& row, const std::string& table,
                            const std::string& assets_path) {
  return scenario_of(row, table, assets_path);
}

double narayanan_model_flops(const llm::TransformerConfig& model, int global_batch) {
  return 4.0 * llm::layers_forward_flops(model, global_batch) +
         3.0 * llm::logits_forward_flops(model, global_batch);
}

RunValidationReport validate_runs(const validation::RunTable& table,
                                  const RunValidationRequest& request) {
  check_explained_rows(table, request);
  RunValidationReport report;
  report.source = table.source;
  std::vector<SimulatedRow> rows = simulate_rows(table, request);
  for (SimulatedRow& row : rows)
    report.predictions.push_back(row.prediction);
  std::vector<std::size_t> simulated;
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (rows[i].model)
      simulated.push_back(i);

  if (request.folds <= 1) {
    report.calibration = request.calibration;
    for (std::size_t i : simulated) {
      if (!request.shipped_calibration_by_device) {
        report.predictions[i].predicted_s = request.calibration.fitted_on.empty()
                                                ? report.predictions[i].simulated_s
                                                : calibrated_s(rows[i], request.calibration);
        continue;
      }
      const std::string device = rows[i].model->target().device;
      EndToEndCalibration shipped = row_calibration(rows[i], request);
      report.predictions[i].predicted_s = calibrated_s(rows[i], shipped);
      auto& applied = report.calibrations_by_device;
      auto same = std::find_if(applied.begin(), applied.end(), [&](const auto& entry) {
        return entry.first.fitted_on == shipped.fitted_on;
      });
      if (same == applied.end())
        same = applied.insert(applied.end(), {std::move(shipped), {}});
      if (std::find(same->second.begin(), same->second.end(), device) == same->second.end())
        same->second.push_back(device);
    }
    if (report.calibrations_by_device.size() == 1)
      report.calibration = report.calibrations_by_device.front().first;
    finish(report);
    report.explanations = explain_rows(table, rows, request);
    return report;
  }

  // Folds by position among the simulated rows: row k of them is held out in fold k mod K.
  report.cross_validated = true;
  const std::size_t folds = static_cast<std::size_t>(request.folds);
  if (simulated.size() < folds)
    throw InputError(table.source, "--cv",
                     std::to_string(simulated.size()) + " simulated rows, fewer than " +
                         std::to_string(folds) + " folds");
  for (std::size_t fold = 0; fold < folds; ++fold) {
    std::vector<std::size_t> training;
    for (std::size_t k = 0; k < simulated.size(); ++k)
      if (k % folds != fold)
        training.push_back(simulated[k]);
    EndToEndCalibration calibration = fit_on(rows, training, request);
    calibration.fitted_on = table.source + " (all folds but " + std::to_string(fold + 1) + ")";
    for (std::size_t k = fold; k < simulated.size(); k += folds) {
      RunPrediction& prediction = report.predictions[simulated[k]];
      prediction.fold = static_cast<int>(fold);
      prediction.predicted_s = calibrated_s(rows[simulated[k]], calibration);
    }
    report.fold_calibrations.push_back(calibration);
    if (request.progress)
      request.progress("folds fitted", fold + 1, folds);
  }
  finish(report);
  return report;
}

EndToEndCalibration fit_calibration_on(const validation::RunTable& table,
                                       const RunValidationRequest& request) {
  std::vector<SimulatedRow> rows = simulate_rows(table, request);
  std::vector<std::size_t> simulated;
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (rows[i].model)
      simulated.push_back(i);
  if (simulated.empty())
    throw InputError(table.source, "", "no row could be simulated: nothing to fit");
  EndToEndCalibration calibration = fit_on(rows, simulated, request);
  calibration.fitted_on = std::filesystem::path(table.source).filename().string();
  return calibration;
}

}  // namespace perfsim::scenario

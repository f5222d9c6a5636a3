#include "scenario/run_validation.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include "devices/device_spec.hpp"
#include "generators/llm/llm_collective_bus_rates.hpp"
#include "generators/llm/llm_flops.hpp"
#include "generators/llm/llm_gradient_dtype.hpp"
#include "generators/llm/llm_trace_builder.hpp"
#include "io/input_file.hpp"
#include "mpi_sim/engine/local_scheduler.hpp"
#include "mpi_sim/engine/symmetric_clock_sync.hpp"
#include "perfsim/error.hpp"
#include "scenario/config_path.hpp"
#include "scenario/device_argument.hpp"
#include "scenario/llm_calibration.hpp"
#include "scenario/llm_simulation.hpp"
#include "scenario/plan_simulation.hpp"

namespace perfsim::scenario {
namespace {

namespace llm = generators::llm;
using validation::EndToEndCalibration;
using validation::MeasuredKind;
using validation::RunRow;

llm::TransformerConfig model_of(const RunRow& row, const std::string& table) {
  llm::TransformerConfig model;
  if (!row.model.empty()) {
    model = llm::load_transformer_config(config_path(row.model, "models"));
  } else {
    model.name = row.name;
    model.source = table + " line " + std::to_string(row.line);
    model.kv_heads = row.heads;
    model.ffn_hidden = 4 * row.hidden;
  }
  auto override_with = [](int& field, int value) {
    if (value > 0)
      field = value;
  };
  override_with(model.layers, row.layers);
  override_with(model.hidden, row.hidden);
  override_with(model.heads, row.heads);
  override_with(model.kv_heads, row.kv_heads);
  override_with(model.kv_channels, row.head_dim);
  override_with(model.ffn_hidden, row.ffn_hidden);
  override_with(model.vocab, row.vocab);
  override_with(model.seq_len, row.seq_len);
  if (row.attention == "flash")
    model.attention = llm::AttentionKernel::kFlash;
  else if (row.attention == "unfused")
    model.attention = llm::AttentionKernel::kUnfused;
  if (row.dropout)
    model.dropout = *row.dropout;
  if (row.gated_ffn)
    model.gated_ffn = *row.gated_ffn;
  if (!row.position_embedding.empty())
    model.position_embedding =
        llm::parse_position_embedding(row.position_embedding, table, "position_embedding");
  model.bias_swiglu_fusion = row.bias_swiglu_fusion.value_or(model.bias_swiglu_fusion);
  model.rope_fusion = row.rope_fusion.value_or(model.rope_fusion);
  if (!row.cross_entropy_fusion.empty())
    model.cross_entropy_fusion =
        llm::parse_cross_entropy_fusion(row.cross_entropy_fusion, table, "cross_entropy_fusion");
  const std::optional<DType> dtype = parse_dtype(row.dtype);
  if (!dtype)
    throw InputError(table, "line " + std::to_string(row.line), "dtype " + row.dtype);
  model.dtype = *dtype;
  if (!row.fp8_recipe.empty())
    model.fp8_recipe = llm::parse_fp8_recipe(row.fp8_recipe, table, "fp8_recipe");
  model.micro_batch = row.micro_batch;
  model.global_batch = row.global_batch;
  llm::validate(model, table + " line " + std::to_string(row.line));
  return model;
}

LlmScenario scenario_of(const RunRow& row, const std::string& table,
                        const std::string& assets_path) {
  LlmScenario scenario;
  scenario.model = model_of(row, table);
  llm::ParallelConfig& parallel = scenario.parallel;
  parallel.tp = row.tp;
  parallel.pp = row.pp;
  parallel.dp = row.dp;
  parallel.cp = row.cp;
  parallel.ep = row.ep;
  parallel.etp = row.etp;
  if (!row.order.empty())
    parallel.order = llm::parse_rank_order(row.order, table + " line " + std::to_string(row.line));
  parallel.virtual_stages = row.virtual_stages;
  parallel.first_stage_layers = row.first_stage_layers;
  parallel.last_stage_layers = row.last_stage_layers;
  parallel.account_for_embedding = row.account_for_embedding;
  parallel.account_for_loss = row.account_for_loss;
  parallel.pp_layers = row.pp_layers;
  parallel.pp_layout = row.pp_layout;
  parallel.micro_batch = row.micro_batch;
  parallel.global_batch = row.global_batch;
  parallel.sequence_parallel = row.sequence_parallel && row.tp > 1;
  parallel.recompute = llm::parse_recompute(row.recompute, "recompute");
  parallel.recompute_modules = llm::parse_recompute_modules(
      row.recompute_modules, table + " line " + std::to_string(row.line), "recompute_modules");
  // Megatron's distributed optimizer shards optimizer state over DP as ZeRO-1 does:
  // gradients reduce-scattered, parameters all-gathered.
  parallel.zero_stage = row.distributed_optimizer ? 1 : 0;
  // As `simulate --grad-reduce-dtype`: Megatron's default follows the training dtype.
  parallel.gradient_dtype =
      llm::main_gradient_dtype(row.grad_reduce_dtype, scenario.model, "grad_reduce_dtype");
  parallel.moe_imbalance = row.moe_imbalance;
  // Overlap switches the row states; an empty cell keeps the simulator's default.
  parallel.overlap_grad_reduce = row.overlap_grad_reduce.value_or(parallel.overlap_grad_reduce);
  parallel.overlap_param_gather = row.overlap_param_gather.value_or(parallel.overlap_param_gather);
  parallel.tp_comm_overlap = row.tp_comm_overlap.value_or(parallel.tp_comm_overlap);
  parallel.overlap_p2p_comm = row.overlap_p2p_comm.value_or(parallel.overlap_p2p_comm);
  parallel.p2p_scatter_gather = row.p2p_scatter_gather.value_or(parallel.p2p_scatter_gather);
  parallel.moe_a2a_overlap = row.moe_a2a_overlap;
  parallel.moe_router_fusion = row.moe_router_fusion;
  parallel.moe_permute_fusion = row.moe_permute_fusion;
  parallel.moe_router_force_load_balancing = row.moe_router_force_load_balancing;
  parallel.batch_load_sync = row.get_batch_sync;
  parallel.timer_syncs = row.timer_syncs;
  scenario.topology = topology::load_topology(config_path(row.topology, "topologies"));
  const int per_node = scenario.topology.node.gpus;
  const int nodes = row.nodes > 0 ? row.nodes : (row.gpus + per_node - 1) / per_node;
  if (nodes * per_node < row.gpus)
    throw InputError(table, "line " + std::to_string(row.line) + " nodes",
                     std::to_string(nodes) + " nodes x " + std::to_string(per_node) +
                         " GPUs hold fewer than " + std::to_string(row.gpus) + " GPUs");
  if (nodes != scenario.topology.nodes)
    scenario.topology = topology::with_node_count(std::move(scenario.topology), nodes);
  const devices::DeviceSpec device = read_device_argument(row.device);
  parallel =
      with_compute_rate(with_te_workspaces(parallel, device.architecture), scenario.model, device);
  scenario.device_json = io::read_file_decompressed(device.file);
  scenario.device_source = device.file;
  scenario.assets_path = assets_path;
  // Before anything derives groups from the layout (an ETP x EP that does not tile the ranks
  // would divide by zero there).
  llm::validate(scenario.model, scenario.parallel);
  scenario.parallel = llm::with_collective_bus_rates(scenario.parallel, scenario.topology);
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
  RowModel(SimulationInputs inputs, std::vector<int> ranks, CalibrationTarget device)
      : inputs_(std::move(inputs)), ranks_(std::move(ranks)), device_(std::move(device)) {
    for (engine::RankProgram& program : inputs_.programs)
      for (engine::SimOp& op : program.ops.mutable_ops())
        for (engine::SimKernel& kernel : op.kernels)
          if (kernel.category == KernelCategory::kGemm)
            gemm_kernels_.push_back({&kernel, kernel.duration_us});
  }
  RowModel(const RowModel&) = delete;  // gemm_kernels_ points into inputs_
  RowModel& operator=(const RowModel&) = delete;

  const std::string& device() const { return device_.device; }
  const CalibrationTarget& target() const { return device_; }

  double iteration_us(const validation::CalibrationPoint& point) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = cache_.find(point); it != cache_.end())
      return it->second;
    for (auto& [kernel, generated_us] : gemm_kernels_)
      kernel->duration_us = generated_us * point.gemm_time_scale;
    const HostOverheads overheads = with_host_cost(inputs_.overheads, point);
    engine::SymmetricClockSync sync(ranks_);
    double iteration = 0;
    for (const RankResult& result :
         engine::simulate_programs(inputs_.programs, overheads, sync, false))
      iteration = std::max(iteration, result.iteration_us);
    cache_[point] = iteration;
    return iteration;
  }

 private:
  SimulationInputs inputs_;
  std::vector<int> ranks_;
  CalibrationTarget device_;
  std::vector<std::pair<engine::SimKernel*, DurationUs>> gemm_kernels_;  // with generated time
  std::mutex mutex_;  // one simulation of a row at a time (its kernels are rescaled in place)
  std::map<validation::CalibrationPoint, double> cache_;
};

struct SimulatedRow {
  RunPrediction prediction;
  std::unique_ptr<RowModel> model;  // null when the row was skipped
};

SimulatedRow simulate_row(const RunRow& row, const std::string& table,
                          const RunValidationRequest& request) {
  SimulatedRow out;
  RunPrediction& prediction = out.prediction;
  prediction.row = &row;
  if (!row.error.empty()) {
    prediction.skipped = row.error;
    return out;
  }
  try {
    const LlmScenario scenario = scenario_of(row, table, request.assets_path);
    prediction.layout = describe_layout(scenario.parallel);
    prediction.measured_s = measured_iteration_s(row, scenario.model);
    std::vector<int> ranks = pipeline_representatives(scenario.parallel);
    // By the device file's name, so that an alias in one table matches the name in another.
    const devices::DeviceSpec device = read_device_argument(row.device);
    CalibrationTarget row_device{device.name, has_measured_gemm_efficiency(device),
                                 scenario.model.dtype == DType::kFloat8};
    out.model = std::make_unique<RowModel>(load_llm_inputs(scenario, ranks), std::move(ranks),
                                           std::move(row_device));
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

double calibrated_s(SimulatedRow& row, const EndToEndCalibration& calibration) {
  validation::CalibrationPoint point = calibration.host;
  point.gemm_time_scale = gemm_time_scale_for(calibration, row.model->target());
  return (row.model->iteration_us(point) + calibration.iteration_us) * 1e-6;
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
    for (std::size_t i : simulated)
      report.predictions[i].predicted_s = request.calibration.fitted_on.empty()
                                              ? report.predictions[i].simulated_s
                                              : calibrated_s(rows[i], request.calibration);
    finish(report);
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

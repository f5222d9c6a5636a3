#include "scenario/llm_simulation.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>

#include "assets/collective_curve_assets.hpp"
#include "collectives/collective_model.hpp"
#include "devices/device_spec.hpp"
#include "generators/llm/llm_collective_bus_rates.hpp"
#include "generators/llm/llm_default_scenario.hpp"
#include "generators/llm/llm_flops.hpp"
#include "generators/llm/llm_gradient_dtype.hpp"
#include "generators/llm/llm_model_overrides.hpp"
#include "generators/llm/llm_rank_generator.hpp"
#include "generators/llm/llm_te_workspace.hpp"
#include "generators/llm/llm_trace_builder.hpp"
#include "io/input_file.hpp"
#include "kernels/model_duration_source.hpp"
#include "memory/llm_memory.hpp"
#include "mpi_sim/engine/topology_link_sharing.hpp"
#include "perfsim/error.hpp"
#include "scenario/device_argument.hpp"
#include "scenario/generated_workload_sources.hpp"
#include "scenario/llm_calibration.hpp"
#include "scenario/llm_pipeline_steps.hpp"
#include "scenario/llm_report.hpp"
#include "scenario/llm_stage_programs.hpp"
#include "topology/node_resize.hpp"

namespace perfsim::scenario {
namespace {

namespace llm = generators::llm;

// The kinds summarize_llm_run reports, by name (the planner and tests read them).
std::string group_kind(const std::string& group, const llm::ParallelConfig& parallel) {
  const std::string kind = llm_group_kind(group, parallel);
  if (kind == "tp")
    return "tensor parallel";
  if (kind == "dp")
    return "data parallel";
  if (kind == "p2p")
    return "pipeline (p2p)";
  if (kind == "cp")
    return "context parallel";
  if (kind == "ep")
    return "expert parallel (all-to-all)";
  if (kind == "edp")
    return "expert data parallel";
  if (kind == "etpp")
    return "expert tensor x expert x pipeline (grad norm)";
  if (kind == "cp_ring")
    return "context parallel (ring)";
  if (kind == "pp")
    return "pipeline group (grad norm)";
  if (kind == "mp")
    return "tensor x pipeline (grad norm)";
  if (kind == "dopt")
    return "whole job (grad norm)";
  return kind;
}

// The uneven pipeline split, when one is asked for: "" for an even split.
std::string describe_pipeline_split(const llm::ParallelConfig& parallel) {
  std::string text;
  auto add = [&text](const std::string& part) { text += (text.empty() ? "" : ", ") + part; };
  if (!parallel.pp_layers.empty()) {
    std::string list;
    for (int layers : parallel.pp_layers)
      list += (list.empty() ? "" : ",") + std::to_string(layers);
    add("layers " + list);
  }
  if (!parallel.pp_layout.empty())
    add("layout " + parallel.pp_layout);
  if (parallel.first_stage_layers > 0)
    add("first stage " + std::to_string(parallel.first_stage_layers) + " layers");
  if (parallel.last_stage_layers > 0)
    add("last stage " + std::to_string(parallel.last_stage_layers) + " layers");
  if (parallel.account_for_embedding || parallel.account_for_loss)
    add(std::string(parallel.account_for_embedding && parallel.account_for_loss
                        ? "embedding and loss"
                        : (parallel.account_for_embedding ? "embedding" : "loss")) +
        " counted as layers");
  return text.empty() ? text : " (" + text + ")";
}

}  // namespace

std::string describe_layout(const llm::ParallelConfig& parallel) {
  std::string text = "TP " + std::to_string(parallel.tp) +
                     (parallel.cp > 1 ? " x CP " + std::to_string(parallel.cp) : std::string()) +
                     " x PP " + std::to_string(parallel.pp) + " x DP " +
                     std::to_string(parallel.dp);
  if (parallel.ep > 1 || parallel.expert_tp() != parallel.tp)
    text += " (EP " + std::to_string(parallel.ep) +
            (parallel.expert_tp() != parallel.tp ? ", ETP " + std::to_string(parallel.etp) : "") +
            (parallel.moe_a2a_overlap ? ", all-to-all overlapped" : "") +
            (parallel.moe_pad_to_capacity ? ", experts padded to capacity" : "") +
            (parallel.moe_grouped_gemm ? "" : ", sequential experts") + ")";
  text += describe_pipeline_split(parallel);
  if (parallel.virtual_stages > 1)
    text += " (" + std::to_string(parallel.virtual_stages) + " chunks per stage)";
  if (parallel.order != llm::default_rank_order())
    text += " (order " + llm::rank_order_name(parallel.order) + ")";
  if (parallel.micro_batch > 0)
    text += ", micro-batch " + std::to_string(parallel.micro_batch);
  text += std::string(", sequence parallel ") + (parallel.sequence_parallel ? "on" : "off") +
          ", recompute " + std::string(llm::recompute_name(parallel.recompute));
  if (!parallel.recompute_modules.is_default())
    text += " (" + llm::recompute_modules_name(parallel.recompute_modules) + ")";
  text += ", ZeRO " + std::to_string(parallel.zero_stage);
  if (parallel.fp8_param_gather)
    text += " (FP8 primary weights)";
  return text;
}

LlmRunSummary summarize_llm_run(const llm::TransformerConfig& model,
                                const llm::ParallelConfig& parallel, double peak_flops_per_s,
                                std::span<const RankResult> results) {
  LlmRunSummary summary;
  const double ranks = static_cast<double>(results.size());
  for (const RankResult& result : results)
    summary.iteration_us = std::max(summary.iteration_us, result.iteration_us);
  summary.model_flops =
      llm::model_flops_per_iteration(model, llm::global_batch_size(model, parallel));
  summary.mfu = summary.model_flops /
                (summary.iteration_us * 1e-6 * parallel.world_size() * peak_flops_per_s);
  // Exposed communication: time compute waited for each kind of group.
  for (const RankResult& result : results) {
    double bubble = 0;
    for (const auto& [group, traffic] : result.groups) {
      const std::string kind = group_kind(group, parallel);
      summary.comm_us_by_kind[kind] += traffic.time_us / ranks;
      summary.exposed_us_by_kind[kind] += traffic.exposed_us / ranks;
      if (kind == "pipeline (p2p)")
        bubble += traffic.exposed_before_start_us;
    }
    summary.bubble_mean_us += bubble / ranks;
    summary.bubble_max_us = std::max(summary.bubble_max_us, bubble);
  }
  return summary;
}

LlmSimulateOptions embedded_default_llm_options() {
  const llm::ParallelConfig parallel = llm::default_scenario_parallel();
  LlmSimulateOptions options;
  options.embedded_default = true;
  options.tp = parallel.tp;
  options.pp = parallel.pp;
  options.dp = parallel.dp;
  options.micro_batch = parallel.micro_batch;
  options.global_batch = parallel.global_batch;
  options.sequence_parallel = parallel.sequence_parallel;
  options.zero_stage = parallel.zero_stage;
  return options;
}

llm::ParallelConfig parallel_config_from(const LlmSimulateOptions& options) {
  llm::ParallelConfig parallel;
  parallel.tp = options.tp;
  parallel.pp = options.pp;
  parallel.dp = options.dp;
  parallel.cp = options.cp;
  parallel.ep = options.ep;
  parallel.etp = options.etp;
  parallel.moe_imbalance = options.moe_imbalance;
  parallel.virtual_stages = options.virtual_stages;
  parallel.first_stage_layers = options.first_stage_layers;
  parallel.last_stage_layers = options.last_stage_layers;
  parallel.account_for_embedding = options.account_for_embedding;
  parallel.account_for_loss = options.account_for_loss;
  parallel.pp_layers = options.pp_layers;
  parallel.pp_layout = options.pp_layout;
  parallel.order = llm::parse_rank_order(options.order, "--order");
  parallel.micro_batch = options.micro_batch;
  parallel.global_batch = options.global_batch;
  parallel.sequence_parallel = options.sequence_parallel;
  parallel.recompute = llm::parse_recompute(options.recompute, "--recompute");
  parallel.recompute_modules =
      llm::parse_recompute_modules(options.recompute_modules, "--recompute-modules", "");
  parallel.zero_stage =
      options.distributed_optimizer ? std::max(1, options.zero_stage) : options.zero_stage;
  parallel.bucket_bytes = static_cast<Bytes>(options.bucket_mb * 1e6);
  parallel.overlap_grad_reduce = options.overlap_grad_reduce;
  // Without a model: the bf16 default; the readers below apply the model's dtype.
  parallel.gradient_dtype =
      llm::main_gradient_dtype(options.grad_reduce_dtype, {}, "--grad-reduce-dtype");
  parallel.overlap_param_gather = options.overlap_param_gather;
  parallel.overlap_tp_backward = options.tp_overlap;
  parallel.comm_sms = options.comm_sms;
  parallel.tp_comm_overlap = options.tp_comm_overlap;
  parallel.overlap_p2p_comm = options.overlap_p2p_comm;
  parallel.moe_a2a_overlap = options.moe_a2a_overlap;
  parallel.delay_wgrad_compute = options.delay_wgrad_compute;
  parallel.moe_shared_expert_overlap = options.moe_shared_expert_overlap;
  parallel.moe_router_fusion = options.moe_router_fusion;
  parallel.moe_permute_fusion = options.moe_permute_fusion;
  parallel.moe_router_force_load_balancing = options.moe_router_force_load_balancing;
  parallel.moe_pad_to_capacity = options.moe_pad_expert_input_to_capacity;
  parallel.moe_grouped_gemm = options.moe_grouped_gemm;
  parallel.moe_router_fp32 = options.moe_router_dtype == "fp32";
  parallel.moe_token_dispatcher = llm::parse_moe_token_dispatcher(
      options.moe_token_dispatcher.empty() ? "alltoall" : options.moe_token_dispatcher,
      "--moe-token-dispatcher");
  parallel.moe_flex_backend = llm::parse_moe_flex_backend(
      options.moe_flex_backend.empty() ? "deepep" : options.moe_flex_backend, "--moe-flex-backend");
  parallel.moe_deepep_num_sms = options.moe_deepep_num_sms;
  parallel.moe_hybridep_num_sms = options.moe_hybridep_num_sms;
  parallel.p2p_scatter_gather = options.p2p_scatter_gather;
  parallel.fp8_all_gather = options.fp8_all_gather;
  parallel.fp8_param_gather = options.fp8_param_gather;
  parallel.vocab_divisible_by = options.vocab_divisible_by;
  parallel.batch_load_sync = options.get_batch_sync;
  parallel.timer_syncs = options.timer_syncs;
  return parallel;
}

llm::ParallelConfig with_te_workspaces(llm::ParallelConfig parallel,
                                       std::string_view architecture) {
  parallel.cublas_workspace_bytes = llm::te_cublas_workspace_bytes(architecture);
  return parallel;
}

llm::ParallelConfig with_compute_rate(llm::ParallelConfig parallel,
                                      const llm::TransformerConfig& model,
                                      const devices::DeviceSpec& device) {
  const DType dtype = model.activation_dtype();
  parallel.gemm_TFLOPs =
      device.sustained_gemm_flops_per_s(dtype).value_or(device.gemm_peak_flops_per_s(dtype)) /
      1e12;  // FLOP/s per TFLOP/s
  parallel.hbm_GBps = device.streaming_bandwidth_GBps();
  return parallel;
}

namespace {

// --dtype, the element-wise fusion switches (--no-bias-swiglu-fusion, --no-rope-fusion) and the
// run's expert capacity factor (--moe-expert-capacity-factor).
llm::TransformerConfig with_dtype(llm::TransformerConfig model, const LlmSimulateOptions& options) {
  model = llm::with_run_capacity_factor(std::move(model), options.moe_expert_capacity_factor);
  if (!options.dtype.empty())
    model.dtype = llm::parse_training_dtype(options.dtype, "--dtype", "");
  model.fp8_recipe = llm::parse_fp8_recipe(options.fp8_recipe, "--fp8-recipe", "");
  model.bias_swiglu_fusion = options.bias_swiglu_fusion;
  model.rope_fusion = options.rope_fusion;
  model.cross_entropy_fusion = options.cross_entropy_fusion ? llm::parse_cross_entropy_fusion(
                                                                  options.cross_entropy_fusion_impl,
                                                                  "--cross-entropy-fusion-impl", "")
                                                            : llm::CrossEntropyFusion::kNone;
  return model;
}

// The model (with --dtype) and the options' layout, whose main-gradient dtype follows the
// model's unless --grad-reduce-dtype says otherwise: what generate and simulate both start from.
LlmWorkload model_and_layout(llm::TransformerConfig model, const LlmSimulateOptions& options) {
  LlmWorkload workload{with_dtype(std::move(model), options), parallel_config_from(options)};
  workload.parallel.gradient_dtype =
      llm::main_gradient_dtype(options.grad_reduce_dtype, workload.model, "--grad-reduce-dtype");
  return workload;
}

// --model with the shape flags over its values, or without a file the shape flags alone.
llm::TransformerConfig model_of(const LlmSimulateOptions& options) {
  if (options.model_path.empty())
    return llm::inline_transformer_config(options.shape, "shape-from-flags",
                                          "--layers/--hidden/--heads/--vocab/--seq-len");
  return llm::with_shape_overrides(llm::load_transformer_config(options.model_path), options.shape,
                                   options.model_path);
}

LlmScenario with_bus_rates(LlmScenario scenario, const LlmSimulateOptions& options) {
  // The layout must tile the ranks before the bus rates derive groups from it (an ETP x EP
  // that does not would divide by zero there).
  llm::validate(scenario.model, scenario.parallel);
  scenario.parallel = llm::with_expert_node_layout(scenario.parallel, scenario.topology);
  if (options.comm_hbm_sharing)
    scenario.parallel = llm::with_collective_bus_rates(scenario.parallel, scenario.topology);
  return scenario;
}

LlmScenario with_link_sharing(LlmScenario scenario, const LlmSimulateOptions& options) {
  scenario.link_sharing = options.link_sharing;
  return scenario;
}

}  // namespace

LlmWorkload read_llm_workload(const LlmSimulateOptions& options) {
  LlmWorkload workload = model_and_layout(model_of(options), options);
  if (!options.device_path.empty())
    workload.parallel = with_te_workspaces(std::move(workload.parallel),
                                           read_device_argument(options.device_path).architecture);
  llm::validate(workload.model, workload.parallel);
  return workload;
}

LlmScenario read_llm_scenario(const LlmSimulateOptions& options) {
  if (options.embedded_default) {
    const llm::DefaultScenarioFiles files = llm::default_scenario_files();
    const std::string device_source = "<embedded> " + files.device.path;
    LlmWorkload workload = model_and_layout(
        llm::parse_transformer_config(files.model.text, "<embedded> " + files.model.path), options);
    const devices::DeviceSpec device = devices::parse_device_json(files.device.text, device_source);
    llm::ParallelConfig parallel =
        with_compute_rate(with_te_workspaces(std::move(workload.parallel), device.architecture),
                          workload.model, device);
    return with_link_sharing(
        with_bus_rates(
            {std::move(workload.model), std::move(parallel),
             topology::resized(
                 topology::parse_topology(files.topology.text, "<embedded> " + files.topology.path),
                 options.topology_size.nodes, options.topology_size.gpus_per_node),
             files.device.text, device_source, options.assets_path,
             calibration_argument(options.calibration, device.name)},
            options),
        options);
  }
  if (options.topology_path.empty())
    throw InputError("--topology", "", "--model needs a topology file");
  if (options.device_path.empty())
    throw InputError("--device", "", "--model needs a device file");
  // Read in this order (model, layout, topology, device): the first bad one is reported.
  LlmScenario scenario;
  LlmWorkload workload = model_and_layout(model_of(options), options);
  scenario.model = std::move(workload.model);
  scenario.parallel = std::move(workload.parallel);
  scenario.topology =
      topology::resized(topology::load_topology(options.topology_path), options.topology_size.nodes,
                        options.topology_size.gpus_per_node);
  const devices::DeviceSpec device = read_device_argument(options.device_path);
  scenario.parallel =
      with_compute_rate(with_te_workspaces(std::move(scenario.parallel), device.architecture),
                        scenario.model, device);
  scenario.device_json = io::read_file_decompressed(device.file);
  scenario.device_source = options.device_path;
  scenario.assets_path = options.assets_path;
  scenario.calibration = calibration_argument(options.calibration, device.name);
  return with_link_sharing(with_bus_rates(std::move(scenario), options), options);
}

void share_links_if_asked(const LlmScenario& scenario, const SimulationInputs& inputs,
                          std::span<engine::RankProgram> programs) {
  if (scenario.link_sharing)
    engine::share_links_by_topology(
        programs, dynamic_cast<const collectives::CollectiveModel&>(*inputs.comm_source));
}

SimulationInputs load_llm_inputs(const LlmScenario& scenario, const std::vector<int>& local_ranks) {
  const llm::TransformerConfig& model = scenario.model;
  const llm::ParallelConfig& parallel = scenario.parallel;
  llm::validate(model, parallel);
  if (parallel.world_size() > scenario.topology.world_size()) {
    throw InputError(scenario.topology.source, "nodes",
                     "TP x CP x PP x DP = " + std::to_string(parallel.world_size()) +
                         " GPUs, the topology has " +
                         std::to_string(scenario.topology.world_size()));
  }
  SimulationInputs inputs;
  inputs.notes.push_back("workload: generated LLM " + model.name + " (model file: " + model.source +
                         ")");
  std::vector<ProcessGroup> groups = llm::all_process_groups(parallel);
  for (ProcessGroup& group : llm::pipeline_peer_groups(parallel))
    groups.push_back(std::move(group));
  const validation::EndToEndCalibration& calibration = scenario.calibration;
  const bool calibrated = !calibration.fitted_on.empty();
  const devices::DeviceSpec device = attach_generated_workload_models(
      inputs,
      {scenario.topology, scenario.device_json, scenario.device_source, scenario.assets_path,
       std::move(groups), calibrated ? "end-to-end calibration (below)" : "none",
       [&](const devices::DeviceSpec& spec) {
         return calibrated ? gemm_time_scale_for(calibration,
                                                 {spec.name, has_measured_gemm_efficiency(spec),
                                                  model.dtype == DType::kFloat8})
                           : 1.0;
       }});
  const engine::ProgramSources sources{inputs.kernel_source.get(), inputs.comm_source.get(), {}};
  // The ranks of a stage share one compiled list of ops (llm_stage_programs.hpp).
  inputs.programs = llm_rank_programs(model, parallel, local_ranks, sources);
  share_links_if_asked(scenario, inputs, inputs.programs);
  if (scenario.link_sharing)
    inputs.notes.push_back(
        "collectives: concurrent ones share NIC/NVLink bandwidth (--link-sharing off: each alone)");
  // Generated traces have no profile to take host time from: the host costs are the end-to-end
  // calibration's (fitted on measured runs), else none.
  inputs.overheads.launch.kernel_gap_us = 1.0;
  if (calibrated) {
    inputs.overheads = with_host_cost(inputs.overheads, calibration.host);
    inputs.notes.push_back("calibration: " + describe_calibration(calibration) +
                           "; --calibration none for the models alone");
    if (calibration.iteration_us != 0)
      inputs.notes.push_back("calibration: its fixed per-iteration term (" +
                             std::to_string(calibration.iteration_us / 1000.0) +
                             " ms) is not applied by simulate; validate runs adds it");
  }
  inputs.attributes["workload"] = "llm";
  inputs.attributes["model"] = model.name;
  inputs.attributes["parallel"] = "tp" + std::to_string(parallel.tp) + " pp" +
                                  std::to_string(parallel.pp) + " dp" + std::to_string(parallel.dp);
  // MFU against the bf16 (fp16) peak also for FP8 runs, as Megatron and NeMo report it: the
  // FP8 recipe runs only the linear-layer GEMMs at the FP8 rate.
  const double peak = device.gemm_peak_flops_per_s(model.activation_dtype());
  const LlmReportContext context{scenario, peak, memory::device_memory_of(device), device.name};
  inputs.group_kind = [parallel](const std::string& group) {
    return llm_group_kind(group, parallel);
  };
  inputs.stream_label = llm_stream_label;
  inputs.complete_report = [context](std::span<const RankResult> results,
                                     report::RunReport& report) {
    complete_llm_report(context, results, report);
  };
  inputs.detail_sections["memory"] = [context](std::span<const RankResult>) {
    return llm_memory_detail(context);
  };
  // The kernel source lives in `inputs`, which outlives every report rendered from it.
  inputs.detail_sections["workload"] =
      [context, kernels = inputs.kernel_source.get()](std::span<const RankResult>) {
        return llm_workload_detail(context, *kernels);
      };
  return inputs;
}

}  // namespace perfsim::scenario

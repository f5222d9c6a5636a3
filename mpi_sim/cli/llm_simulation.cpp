#include "mpi_sim/cli/llm_simulation.hpp"

#include <algorithm>
#include <cstdio>
#include <map>

#include "assets/collective_curve_assets.hpp"
#include "collectives/collective_model.hpp"
#include "devices/device_spec.hpp"
#include "generators/llm/llm_default_scenario.hpp"
#include "generators/llm/llm_flops.hpp"
#include "generators/llm/llm_rank_generator.hpp"
#include "generators/llm/llm_trace_builder.hpp"
#include "io/input_file.hpp"
#include "kernels/model_duration_source.hpp"
#include "memory/llm_memory.hpp"
#include "mpi_sim/cli/device_argument.hpp"
#include "mpi_sim/cli/generated_workload_sources.hpp"
#include "perfsim/error.hpp"
#include "topology/node_resize.hpp"

namespace perfsim::cli {
namespace {

namespace llm = generators::llm;

std::string format(const char* pattern, double a, double b = 0, double c = 0) {
  char buffer[256];
  std::snprintf(buffer, sizeof(buffer), pattern, a, b, c);
  return buffer;
}

std::string stream_label(StreamId stream) {
  switch (stream) {
    case kDefaultComputeStream:
      return "compute";
    case llm::kTensorParallelStream:
      return "tensor-parallel comm";
    case llm::kDataParallelStream:
      return "data-parallel comm";
    case llm::kSendNextStream:
      return "pipeline send -> next";
    case llm::kRecvPrevStream:
      return "pipeline recv <- prev";
    case llm::kSendPrevStream:
      return "pipeline send -> prev";
    case llm::kRecvNextStream:
      return "pipeline recv <- next";
    case llm::kContextSendStream:
      return "context ring send";
    case llm::kContextRecvStream:
      return "context ring recv";
    default:
      return "stream " + std::to_string(stream);
  }
}

// "tp/3" -> "tensor parallel", "p2p:a->b" -> "pipeline (p2p)" or, between the ranks of one
// context-parallel ring, "context parallel (ring)".
std::string group_kind(const std::string& group, const llm::ParallelConfig& parallel) {
  if (group.rfind("p2p:", 0) == 0 && parallel.cp > 1) {
    const std::size_t arrow = group.find("->");
    if (arrow != std::string::npos) {
      const int from = std::stoi(group.substr(4, arrow - 4));
      const int to = std::stoi(group.substr(arrow + 2));
      if (llm::coordinates_of(parallel, from).cp != llm::coordinates_of(parallel, to).cp)
        return "context parallel (ring)";
    }
  }
  if (group.rfind("tp/", 0) == 0)
    return "tensor parallel";
  if (group.rfind("dp/", 0) == 0)
    return "data parallel";
  if (group.rfind("p2p:", 0) == 0)
    return "pipeline (p2p)";
  if (group.rfind("cp/", 0) == 0)
    return "context parallel";
  if (group.rfind("pp/", 0) == 0)
    return "pipeline group (grad norm)";
  return group.empty() ? "world" : group;
}

// Per-iteration work outside the transformer layers, each a line of the report: the compute
// time of the ops of that phase (the slowest of this process's ranks).
struct OutsideLayers {
  std::map<std::string, double> compute_us;  // "loss", "grad-clip", "optimizer"
};

// Sums the kernel-model time of the compute ops of each phase of `trace` into `into`, keeping
// the largest over ranks.
void add_outside_layers(const Trace& trace, const KernelDurationSource& kernels,
                        OutsideLayers& into) {
  std::map<std::string, double> rank_us;
  for (const Op& op : trace.ops) {
    const Attribute* phase = op.find_attribute("phase");
    if (op.comm || !phase)
      continue;
    const std::string& name = std::get<std::string>(phase->value);
    if (name != "loss" && name != "grad-clip" && name != "optimizer")
      continue;
    for (const Kernel& kernel : op.kernels)
      rank_us[name] += kernels.kernel_duration_us(op, kernel);
  }
  for (const auto& [name, us] : rank_us)
    into.compute_us[name] = std::max(into.compute_us[name], us);
}

std::string llm_report(const LlmScenario& scenario, double peak_flops_per_s,
                       const memory::DeviceMemory& device_memory, const OutsideLayers& outside,
                       std::span<const RankResult> results) {
  const llm::TransformerConfig& model = scenario.model;
  const llm::ParallelConfig& parallel = scenario.parallel;
  const int ranks = static_cast<int>(results.size());
  const LlmRunSummary summary = summarize_llm_run(model, parallel, peak_flops_per_s, results);
  const int global_batch = llm::global_batch_size(model, parallel);
  const int micro_batches = llm::micro_batches_per_iteration(model, parallel);
  llm::ParallelConfig effective = parallel;
  effective.micro_batch = llm::micro_batch_size(model, parallel);
  std::string out = "LLM training iteration: " + model.name + ", " + describe_layout(effective) +
                    " = " + std::to_string(parallel.world_size()) + " GPUs, global batch " +
                    std::to_string(global_batch) + " (" + std::to_string(micro_batches) +
                    " micro-batches per pipeline)\n";
  out += "  precision           " + std::string(dtype_name(model.dtype)) +
         (model.fp8() ? std::string(" (Transformer Engine recipe: linear-layer GEMMs FP8, the rest "
                                    "bf16") +
                            (parallel.fp8_all_gather && parallel.sequence_parallel
                                 ? "; linear inputs all-gathered in FP8)"
                                 : ")")
                      : std::string()) +
         "\n";
  out +=
      "  overlaps            backward TP collectives " +
      std::string(parallel.overlap_tp_backward
                      ? "overlapped (GEMMs beside them on " + std::to_string(parallel.comm_sms) +
                            " fewer SMs)"
                      : "waited for") +
      "; DP gradient reduction " +
      (parallel.gradient_group_size() == 1 ? std::string("none (DP 1)")
       : parallel.overlap_grad_reduce
           ? format("in %.0f MB buckets under the last micro-batch's backward",
                    static_cast<double>(parallel.effective_bucket_bytes()) / 1e6)
           : std::string("after the backward")) +
      (parallel.gradient_group_size() > 1
           ? " in " + std::string(dtype_name(parallel.gradient_dtype))
           : std::string()) +
      (parallel.gradient_group_size() > 1 && (parallel.zero_stage == 1 || parallel.zero_stage == 2)
           ? std::string("; parameter all-gather ") + (parallel.overlap_param_gather
                                                           ? "under the first forward"
                                                           : "after the optimizer step")
           : std::string()) +
      "\n";
  out += format("  iteration time      %.2f ms\n", summary.iteration_us / 1000);
  out += format("  model FLOPs         %.4g per iteration (Korthikanti et al. 2022, eq. 7 form)\n",
                summary.model_flops);
  out += format("  MFU                 %.1f %% of %.1f TFLOP/s per GPU\n", 100 * summary.mfu,
                peak_flops_per_s / 1e12);
  // Streams: mean busy time over ranks.
  std::map<StreamId, std::pair<double, double>> stream_busy;  // sum, max
  for (const RankResult& result : results) {
    for (const StreamBreakdown& stream : result.streams) {
      auto& [sum, max] = stream_busy[stream.stream];
      sum += stream.busy_us;
      max = std::max(max, stream.busy_us);
    }
  }
  out += "  per-stream busy time (mean / max over ranks, ms):\n";
  for (const auto& [stream, busy] : stream_busy) {
    char line[160];
    std::snprintf(line, sizeof(line), "    %-24s %10.2f %10.2f\n", stream_label(stream).c_str(),
                  busy.first / ranks / 1000, busy.second / 1000);
    out += line;
  }
  out += "  communication per group kind (mean per rank, ms): time / exposed to compute\n";
  for (const auto& [kind, time_us] : summary.comm_us_by_kind) {
    char line[160];
    std::snprintf(line, sizeof(line), "    %-24s %10.2f %10.2f\n", kind.c_str(), time_us / 1000,
                  summary.exposed_us_by_kind.at(kind) / 1000);
    out += line;
  }
  if (parallel.pp > 1) {
    const double ideal =
        static_cast<double>(parallel.pp - 1) /
        (static_cast<double>(micro_batches) * parallel.virtual_stages + parallel.pp - 1);
    out += format(
        "  pipeline bubble     mean %.2f ms, max %.2f ms per rank (%.1f %% of the "
        "iteration)",
        summary.bubble_mean_us / 1000, summary.bubble_max_us / 1000,
        100 * summary.bubble_mean_us / summary.iteration_us);
    out += format("; 1F1B ideal (P-1)/(V M+P-1) = %.1f %%\n", 100 * ideal);
  }
  out +=
      "  outside the layers (compute time, slowest rank of this process; their collectives "
      "are in the group lines above):\n";
  auto outside_line = [&](const char* label, const char* phase) {
    const auto it = outside.compute_us.find(phase);
    char line[160];
    std::snprintf(line, sizeof(line), "    %-36s %10.3f ms\n", label,
                  (it == outside.compute_us.end() ? 0.0 : it->second) / 1000);
    out += line;
  };
  outside_line("loss (cross entropy, last stage)", "loss");
  outside_line("gradient clipping (norm, scale)", "grad-clip");
  outside_line("optimizer step (multi-tensor Adam)", "optimizer");
  // Out of memory does not stop the simulation: the time says what the layout would give.
  const memory::LlmMemoryEstimate estimate =
      memory::estimate_llm_memory(model, parallel, device_memory);
  out += memory::format_worst_stage_memory(estimate, device_memory);
  return out;
}

}  // namespace

std::string describe_layout(const llm::ParallelConfig& parallel) {
  std::string text = "TP " + std::to_string(parallel.tp) +
                     (parallel.cp > 1 ? " x CP " + std::to_string(parallel.cp) : std::string()) +
                     " x PP " + std::to_string(parallel.pp) + " x DP " +
                     std::to_string(parallel.dp);
  if (parallel.virtual_stages > 1)
    text += " (" + std::to_string(parallel.virtual_stages) + " chunks per stage)";
  if (parallel.micro_batch > 0)
    text += ", micro-batch " + std::to_string(parallel.micro_batch);
  text += std::string(", sequence parallel ") + (parallel.sequence_parallel ? "on" : "off") +
          ", recompute " + std::string(llm::recompute_name(parallel.recompute)) + ", ZeRO " +
          std::to_string(parallel.zero_stage);
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
        bubble += traffic.exposed_us;
    }
    summary.bubble_mean_us += bubble / ranks;
    summary.bubble_max_us = std::max(summary.bubble_max_us, bubble);
  }
  return summary;
}

void add_llm_simulate_options(CLI::App& sub, LlmSimulateOptions& options) {
  sub.add_option("--model", options.model_path,
                 "LLM workload: model file (configs/models/*.json); generates one trace per "
                 "rank (TP x PP x DP ranks)");
  sub.add_option("--tp", options.tp, "LLM: tensor-parallel degree")->check(CLI::PositiveNumber);
  sub.add_option("--pp", options.pp, "LLM: pipeline stages (1F1B)")->check(CLI::PositiveNumber);
  sub.add_option("--virtual-stages", options.virtual_stages,
                 "LLM: model chunks per pipeline rank (interleaved 1F1B when > 1)")
      ->check(CLI::PositiveNumber);
  sub.add_option("--dp", options.dp, "LLM: data-parallel degree")->check(CLI::PositiveNumber);
  sub.add_option("--cp", options.cp,
                 "LLM: context-parallel degree (Megatron CP: ring attention over CP ranks, "
                 "placed between TP and DP)")
      ->check(CLI::PositiveNumber);
  sub.add_option("--pp-layers", options.pp_layers,
                 "LLM: transformer layers of each pipeline stage when uneven, e.g. 7,9,9,7 "
                 "(one per stage, summing to the model's layers; no interleaving)")
      ->delimiter(',')
      ->check(CLI::PositiveNumber);
  sub.add_option("--micro-batch", options.micro_batch, "LLM: micro-batch (default: model file)")
      ->check(CLI::PositiveNumber);
  sub.add_option("--global-batch", options.global_batch,
                 "LLM: global batch in sequences (default: model file)")
      ->check(CLI::PositiveNumber);
  sub.add_flag("--sequence-parallel", options.sequence_parallel,
               "LLM: sequence parallelism (TP all-reduces become reduce-scatter + all-gather)");
  sub.add_option("--recompute", options.recompute, "LLM: activation recomputation")
      ->check(CLI::IsMember({"none", "selective", "full"}));
  sub.add_option("--zero", options.zero_stage, "LLM: ZeRO stage 0..3")->check(CLI::Range(0, 3));
  sub.add_option("--bucket-mb", options.bucket_mb,
                 "LLM: gradient bucket size with --overlap-grad-reduce, MB (1e6 bytes); default "
                 "Megatron's max(40e6, 1e6 x DP) parameters")
      ->check(CLI::NonNegativeNumber);
  sub.add_flag("--overlap-grad-reduce", options.overlap_grad_reduce,
               "LLM: reduce gradients in buckets under the last micro-batch's backward "
               "(Megatron --overlap-grad-reduce; default: after the backward)");
  sub.add_option("--grad-reduce-dtype", options.grad_reduce_dtype,
                 "LLM: dtype of the data-parallel gradient reduction: fp32 (main grads, "
                 "Megatron --accumulate-allreduce-grads-in-fp32) or bf16")
      ->check(CLI::IsMember({"fp32", "bf16"}));
  sub.add_flag("--distributed-optimizer", options.distributed_optimizer,
               "LLM: Megatron's distributed optimizer: gradients reduce-scattered, optimizer "
               "state sharded over DP, parameters all-gathered (ZeRO 1)");
  sub.add_flag("--overlap-param-gather", options.overlap_param_gather,
               "LLM: with the distributed optimizer (ZeRO 1/2), all-gather the parameters under "
               "the next forward (Megatron --overlap-param-gather)");
  sub.add_option("--make-vocab-size-divisible-by", options.vocab_divisible_by,
                 "LLM: pad the vocabulary to a multiple of this x TP, as Megatron does (default "
                 "128)")
      ->check(CLI::PositiveNumber);
  sub.add_flag("--tp-overlap", options.tp_overlap,
               "LLM: overlap backward TP collectives with the GEMMs beside them, as Megatron "
               "issues them; each overlapped GEMM runs on the SMs the NCCL kernel leaves "
               "(--comm-sms). Default: each is waited for, which matches Korthikanti et al. "
               "2022 on A100");
  sub.add_option("--comm-sms", options.comm_sms,
                 "LLM: SMs a NCCL collective holds beside an overlapped GEMM (NCCL channels; "
                 "24 on 8-GPU NVSwitch nodes; 0 = overlap free of contention)")
      ->check(CLI::NonNegativeNumber);
  sub.add_option("--dtype", options.dtype,
                 "LLM: training precision bf16, fp16 or fp8 (Transformer Engine recipe: "
                 "linear-layer GEMMs in FP8, the rest bf16); default: the model file's")
      ->check(CLI::IsMember({"bf16", "fp16", "fp8"}));
  sub.add_flag("--fp8-all-gather", options.fp8_all_gather,
               "LLM: with fp8 and sequence parallelism, cast the linear layers' inputs to FP8 "
               "before their TP all-gather (Transformer Engine's FP8 all-gather)");
  sub.add_option("--topology", options.topology_path,
                 "topology file (configs/topologies/*.json) for the collective model");
  add_topology_size_options(sub, options.topology_size);
  sub.add_option("--device", options.device_path,
                 "GPU for the kernel models: a device file (configs/devices/*.json), or for "
                 "trace inputs also a name (default there: the GPU the Kineto trace recorded)");
  sub.add_option("--assets", options.assets_path,
                 "model assets with fitted collective curves (`perfsim fit`); default: "
                 "configs/assets/collective_curves.h5, for --model only where it holds every "
                 "curve the topology names (else nominal curves from link bandwidths)");
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
  parallel.virtual_stages = options.virtual_stages;
  parallel.pp_layers = options.pp_layers;
  parallel.micro_batch = options.micro_batch;
  parallel.global_batch = options.global_batch;
  parallel.sequence_parallel = options.sequence_parallel;
  parallel.recompute = llm::parse_recompute(options.recompute, "--recompute");
  parallel.zero_stage =
      options.distributed_optimizer ? std::max(1, options.zero_stage) : options.zero_stage;
  parallel.bucket_bytes = static_cast<Bytes>(options.bucket_mb * 1e6);
  parallel.overlap_grad_reduce = options.overlap_grad_reduce;
  parallel.gradient_dtype =
      options.grad_reduce_dtype == "bf16" ? DType::kBFloat16 : DType::kFloat32;
  parallel.overlap_param_gather = options.overlap_param_gather;
  parallel.overlap_tp_backward = options.tp_overlap;
  parallel.comm_sms = options.comm_sms;
  parallel.fp8_all_gather = options.fp8_all_gather;
  parallel.vocab_divisible_by = options.vocab_divisible_by;
  return parallel;
}

namespace {

llm::TransformerConfig with_dtype(llm::TransformerConfig model, const std::string& dtype) {
  if (!dtype.empty())
    model.dtype = llm::parse_training_dtype(dtype, "--dtype", "");
  return model;
}

}  // namespace

LlmScenario read_llm_scenario(const LlmSimulateOptions& options) {
  if (options.embedded_default) {
    const llm::DefaultScenarioFiles files = llm::default_scenario_files();
    return {with_dtype(
                llm::parse_transformer_config(files.model.text, "<embedded> " + files.model.path),
                options.dtype),
            parallel_config_from(options),
            topology::resized(
                topology::parse_topology(files.topology.text, "<embedded> " + files.topology.path),
                options.topology_size.nodes, options.topology_size.gpus_per_node),
            files.device.text,
            "<embedded> " + files.device.path,
            options.assets_path};
  }
  if (options.topology_path.empty())
    throw InputError("--topology", "", "--model needs a topology file");
  if (options.device_path.empty())
    throw InputError("--device", "", "--model needs a device file");
  return {with_dtype(llm::load_transformer_config(options.model_path), options.dtype),
          parallel_config_from(options),
          topology::resized(topology::load_topology(options.topology_path),
                            options.topology_size.nodes, options.topology_size.gpus_per_node),
          io::read_file_decompressed(read_device_argument(options.device_path).file),
          options.device_path,
          options.assets_path};
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
  inputs.notes.push_back("workload: generated LLM " + model.name + " (" + model.source + ")");
  std::vector<ProcessGroup> groups = llm::all_process_groups(parallel);
  for (ProcessGroup& group : llm::pipeline_peer_groups(parallel))
    groups.push_back(std::move(group));
  const devices::DeviceSpec device = attach_generated_workload_models(
      inputs, {scenario.topology, scenario.device_json, scenario.device_source,
               scenario.assets_path, std::move(groups)});
  const engine::ProgramSources sources{inputs.kernel_source.get(), inputs.comm_source.get(), {}};
  OutsideLayers outside;
  for (int rank : local_ranks) {
    const Trace trace = llm::generate_llm_rank(model, parallel, rank);
    add_outside_layers(trace, *inputs.kernel_source, outside);
    inputs.programs.push_back(
        engine::build_rank_program(trace, rank, parallel.world_size(), sources));
  }
  // No host overheads: generated traces have no profile to take them from, and large
  // transformer kernels keep the GPU ahead of the CPU.
  inputs.overheads.launch.kernel_gap_us = 1.0;
  inputs.attributes["workload"] = "llm";
  inputs.attributes["model"] = model.name;
  inputs.attributes["parallel"] = "tp" + std::to_string(parallel.tp) + " pp" +
                                  std::to_string(parallel.pp) + " dp" + std::to_string(parallel.dp);
  // MFU against the bf16 (fp16) peak also for FP8 runs, as Megatron and NeMo report it: the
  // FP8 recipe runs only the linear-layer GEMMs at the FP8 rate.
  const double peak = device.gemm_peak_flops_per_s(model.activation_dtype());
  const memory::DeviceMemory device_memory = memory::device_memory_of(device);
  inputs.extra_report = [scenario, peak, device_memory,
                         outside](std::span<const RankResult> results) {
    return llm_report(scenario, peak, device_memory, outside, results);
  };
  return inputs;
}

}  // namespace perfsim::cli

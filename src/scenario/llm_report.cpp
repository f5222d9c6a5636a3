#include "scenario/llm_report.hpp"

#include <algorithm>
#include <cstdio>
#include <map>

#include "generators/llm/llm_flops.hpp"
#include "generators/llm/llm_rank_generator.hpp"
#include "generators/llm/llm_trace_builder.hpp"
#include "memory/llm_memory.hpp"
#include "report/printf_string.hpp"

namespace perfsim::scenario {
namespace {

namespace llm = generators::llm;

using report::printf_string;

std::string gradient_reduction_text(const llm::ParallelConfig& parallel) {
  if (parallel.gradient_group_size() == 1)
    return "none (DP 1)";
  std::string text =
      parallel.overlap_grad_reduce
          ? printf_string("in %.0f MB buckets under the last backward",
                          static_cast<double>(parallel.effective_bucket_bytes()) / 1e6)
          : std::string("after the backward");
  text += " in " + std::string(dtype_name(parallel.gradient_dtype));
  if (parallel.zero_stage == 1 || parallel.zero_stage == 2)
    text += std::string("; parameter all-gather ") +
            (parallel.overlap_param_gather ? "under the first forward" : "after the optimizer");
  return text;
}

std::string pipeline_p2p_text(const llm::ParallelConfig& parallel) {
  if (parallel.pp == 1)
    return "";
  const std::string scattered =
      parallel.p2p_scatter_gather && parallel.tp > 1 && !parallel.sequence_parallel
          ? ", 1/TP per rank all-gathered by the receiver (scatter/gather)"
          : "";
  if (parallel.virtual_stages == 1)
    return "; pipeline p2p batched and synchronized" + scattered;
  return (parallel.overlap_p2p_comm
              ? "; pipeline p2p overlapped (overlap_p2p_comm: receives posted one step ahead)"
              : "; pipeline p2p batched and synchronized after each step (no overlap_p2p_comm)") +
         scattered;
}

// Megatron-Core's fusions the generated model runs (issue 15): SwiGLU for gated FFNs, RoPE for
// rotary models, and the cross entropy every model has.
std::string fusions_text(const llm::TransformerConfig& model) {
  std::string text;
  if (model.gated_ffn)
    text += model.bias_swiglu_fusion ? "; SwiGLU fused" : "; SwiGLU unfused";
  if (model.rope())
    text += model.rope_fusion ? "; RoPE fused" : "; RoPE unfused";
  switch (model.cross_entropy_fusion) {
    case llm::CrossEntropyFusion::kNone:
      text += "; cross entropy unfused";
      break;
    case llm::CrossEntropyFusion::kNative:
      text += "; cross entropy fused (Megatron-Core native)";
      break;
    case llm::CrossEntropyFusion::kTe:
      text += "; cross entropy fused (Transformer Engine)";
      break;
  }
  return text;
}

std::string overlaps_line(const llm::ParallelConfig& parallel) {
  std::string text =
      parallel.tp_comm_overlap
          ? "TP collectives pipelined with their GEMMs (Transformer Engine userbuffers: ring "
            "exchange, " +
                std::to_string(llm::kUserbufferPipelineSplits) +
                "-chunk reduce-scatter, bulk backward)"
          : "backward TP collectives " +
                std::string(parallel.overlap_tp_backward
                                ? "overlapped (GEMMs beside them on " +
                                      std::to_string(parallel.comm_sms) + " fewer SMs)"
                                : "waited for");
  text += pipeline_p2p_text(parallel);
  text += "; DP gradient reduction " + gradient_reduction_text(parallel);
  if (parallel.moe_flex())
    text += "; MoE tokens by the flex dispatcher (" +
            std::string(llm::moe_flex_backend_name(parallel.moe_flex_backend)) + ", " +
            std::to_string(parallel.moe_flex_sms()) +
            " SMs: each token once per distinct node and GPU" +
            (parallel.moe_flex_backend == llm::MoeFlexBackend::kDeepEp
                 ? ", the host waits for the received count"
                 : "") +
            ")";
  if (parallel.moe_a2a_overlap)
    text +=
        "; EP all-to-alls overlapped with the other micro-batch's compute (Megatron-Core "
        "combined 1F1B steps, --overlap-moe-expert-parallel-comm; compute beside one on " +
        std::to_string(parallel.moe_flex() ? parallel.moe_flex_sms() : parallel.comm_sms) +
        " fewer SMs)";
  if (parallel.delay_wgrad_compute)
    text +=
        "; weight gradients delayed beside the backward's all-to-alls (Megatron-Core "
        "--delay-wgrad-compute)";
  if (parallel.moe_shared_expert_overlap)
    text +=
        "; shared experts beside the EP all-to-alls on their own stream (Megatron-Core "
        "--moe-shared-expert-overlap; compute beside one on " +
        std::to_string(parallel.comm_sms) + " fewer SMs)";
  // Which framework's data loading the per-micro-batch host cost follows.
  text += parallel.batch_load_sync
              ? "; get_batch waits for the GPU each micro-batch (Megatron-DeepSpeed)"
              : "; get_batch without a host wait (Megatron-Core)";
  if (parallel.timer_syncs)
    text += "; device synchronized at each forward/backward start and stop (Megatron-LM timers)";
  return text;
}

std::string precision_line(const llm::TransformerConfig& model,
                           const llm::ParallelConfig& parallel) {
  std::string text(dtype_name(model.dtype));
  if (model.fp8())
    text += std::string(" (Transformer Engine recipe: linear-layer GEMMs FP8, the rest bf16") +
            (model.fp8_recipe == llm::Fp8Recipe::kDelayed
                 ? "; delayed scaling, amax histories all-reduced over TP x DP x CP per region"
                 : "") +
            (model.fp8_recipe == llm::Fp8Recipe::kCurrent ? "; current scaling" : "") +
            (model.fp8_recipe == llm::Fp8Recipe::kBlockwise
                 ? "; blockwise scaling, block-scaled GEMM main loops at the split accumulator's "
                   "cost (estimate)"
                 : "") +
            (parallel.fp8_all_gather && parallel.sequence_parallel && parallel.tp > 1 &&
                     model.fp8_recipe != llm::Fp8Recipe::kBlockwise
                 ? "; linear inputs all-gathered in FP8"
                 : "") +
            (parallel.fp8_param_gather ? "; FP8 primary weights, gathered in FP8)" : ")");
  return text;
}

report::MemoryFigures memory_figures(const LlmReportContext& context) {
  const memory::LlmMemoryEstimate estimate = memory::estimate_llm_memory(
      context.scenario.model, context.scenario.parallel, context.device_memory);
  report::MemoryFigures figures;
  figures.device = context.device_name;
  figures.capacity_bytes = context.device_memory.capacity_bytes;
  for (const memory::StageMemory& stage : estimate.stages)
    figures.stages.push_back({stage.stage, stage.total_bytes, stage.parameter_bytes,
                              stage.gradient_bytes, stage.optimizer_bytes, stage.activation_bytes,
                              stage.fp8_weight_bytes + stage.userbuffer_bytes +
                                  stage.workspace_bytes + stage.context_bytes});
  figures.worst_stage = estimate.worst().stage;
  figures.fits = !estimate.verdict.known || estimate.verdict.fits;
  figures.margin_bytes = static_cast<double>(estimate.verdict.margin_bytes);
  figures.verdict = memory::format_verdict(estimate.verdict, context.device_memory);
  return figures;
}

// Compute time of the ops of each phase outside the layers on one rank: its stage template's
// compute ops (a rank's trace differs from it only in its collectives' groups), summed as the
// generator streams them, one step's ops at a time.
class PhaseComputeSink : public llm::TraceSink {
 public:
  explicit PhaseComputeSink(const KernelDurationSource& kernels) : kernels_(kernels) {}
  void begin(const Trace&) override {}
  void take(std::vector<Op>& ops, std::size_t) override {
    for (const Op& op : ops) {
      const Attribute* phase = op.find_attribute("phase");
      if (op.comm || !phase)
        continue;
      const auto found = phases.find(std::get<std::string>(phase->value));
      if (found == phases.end())
        continue;
      for (const Kernel& kernel : op.kernels)
        found->second += kernels_.kernel_duration_us(op, kernel);
    }
  }
  std::map<std::string, double> phases{{"loss", 0}, {"grad-clip", 0}, {"optimizer", 0}};

 private:
  const KernelDurationSource& kernels_;
};

std::map<std::string, double> outside_layers_us(const llm::TransformerConfig& model,
                                                const llm::ParallelConfig& parallel, int rank,
                                                const KernelDurationSource& kernels) {
  PhaseComputeSink sink(kernels);
  llm::generate_llm_stage_template(model, parallel, llm::coordinates_of(parallel, rank).pp, sink);
  return sink.phases;
}

}  // namespace

std::string llm_group_kind(const std::string& group, const llm::ParallelConfig& parallel) {
  if (group.rfind("p2p:", 0) == 0) {
    const std::size_t arrow = group.find("->");
    // Userbuffer ring exchange: TP traffic between the ranks of one TP group.
    if (parallel.tp_comm_overlap && arrow != std::string::npos) {
      const llm::RankCoordinates from = llm::coordinates_of(parallel, std::stoi(group.substr(4)));
      const llm::RankCoordinates to =
          llm::coordinates_of(parallel, std::stoi(group.substr(arrow + 2)));
      if (from.tp != to.tp && from.pp == to.pp && from.cp == to.cp && from.dp == to.dp)
        return "tp";
    }
    if (parallel.cp > 1 && arrow != std::string::npos) {
      const int from = std::stoi(group.substr(4, arrow - 4));
      const int to = std::stoi(group.substr(arrow + 2));
      if (llm::coordinates_of(parallel, from).cp != llm::coordinates_of(parallel, to).cp)
        return "cp_ring";
    }
    return "p2p";
  }
  // The expert layers' TP group and the router's TP x CP group carry tensor-parallel traffic.
  const std::string kind = report::group_kind(group);
  return kind == "etp" || kind == "tpcp" ? "tp" : kind;
}

std::string llm_stream_label(StreamId stream) {
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
    case llm::kExpertParallelStream:
      return "expert-parallel comm";
    case llm::kTensorSendStream:
      return "tensor-parallel ring send";
    case llm::kTensorRecvStream:
      return "tensor-parallel ring recv";
    case llm::kExpertDataParallelStream:
      return "expert data-parallel comm";
    default:
      return "stream " + std::to_string(stream);
  }
}

void complete_llm_report(const LlmReportContext& context, std::span<const RankResult> results,
                         report::RunReport& report) {
  const llm::TransformerConfig& model = context.scenario.model;
  const llm::ParallelConfig& parallel = context.scenario.parallel;
  const LlmRunSummary summary =
      summarize_llm_run(model, parallel, context.peak_flops_per_s, results);
  const int global_batch = llm::global_batch_size(model, parallel);
  const int micro_batches = llm::micro_batches_per_iteration(model, parallel);
  llm::ParallelConfig effective = parallel;
  effective.micro_batch = llm::micro_batch_size(model, parallel);
  report.workload = model.name + ": " + describe_layout(effective) + " = " +
                    std::to_string(parallel.world_size()) + " x " + context.device_name + " (" +
                    context.scenario.topology.name + ")";
  report.setup.push_back(
      printf_string("global batch %d sequences of %d tokens (%d micro-batches per pipeline), %s",
                    global_batch, model.seq_len, micro_batches,
                    precision_line(model, parallel).c_str()) +
      fusions_text(model));
  report.setup.push_back(overlaps_line(parallel));

  report::Throughput throughput;
  throughput.tokens_per_iteration = static_cast<double>(global_batch) * model.seq_len;
  const double iteration_s = summary.iteration_us * 1e-6;
  throughput.tokens_per_s = iteration_s > 0 ? throughput.tokens_per_iteration / iteration_s : 0;
  throughput.model_flops_per_iteration = summary.model_flops;
  throughput.model_tflops_per_s_per_gpu =
      iteration_s > 0 ? summary.model_flops / iteration_s / parallel.world_size() / 1e12 : 0;
  throughput.peak_tflops_per_s_per_gpu = context.peak_flops_per_s / 1e12;
  throughput.mfu = summary.mfu;
  throughput.flops_formula = "Korthikanti et al. 2022, eq. 7 form (recomputation not counted)";
  report.throughput = throughput;
  if (parallel.pp > 1)
    report.ideal_bubble_fraction =
        static_cast<double>(parallel.pp - 1) /
        (static_cast<double>(micro_batches) * parallel.virtual_stages + parallel.pp - 1);
  report.memory = memory_figures(context);
  for (int stage = 0; stage < parallel.pp; ++stage) {
    const int rank = llm::rank_of(parallel, {.tp = 0, .dp = 0, .pp = stage, .cp = 0});
    for (const RankResult& result : results)
      if (result.sim_rank == rank && !result.steps.empty())
        report.pipeline.push_back({stage, rank, result.steps});
  }
}

std::string llm_memory_detail(const LlmReportContext& context) {
  const memory::LlmMemoryEstimate estimate = memory::estimate_llm_memory(
      context.scenario.model, context.scenario.parallel, context.device_memory);
  return memory::format_llm_memory(context.scenario.model, context.scenario.parallel, estimate,
                                   context.device_memory);
}

std::string llm_workload_detail(const LlmReportContext& context,
                                const KernelDurationSource& kernels) {
  const llm::TransformerConfig& model = context.scenario.model;
  const llm::ParallelConfig& parallel = context.scenario.parallel;
  std::string out = "precision: " + precision_line(model, parallel) + "\n";
  out += "overlaps: " + overlaps_line(parallel) + "\n";
  const int last = parallel.pp - 1;
  const auto first_stage = outside_layers_us(model, parallel, llm::rank_of(parallel, {}), kernels);
  const auto last_stage =
      outside_layers_us(model, parallel, llm::rank_of(parallel, {0, 0, last, 0}), kernels);
  out += printf_string(
      "outside the transformer layers (compute per rank, ms; their collectives "
      "are in --detail groups):\n%-36s %12s %12s\n",
      "", "stage 0", ("stage " + std::to_string(last)).c_str());
  const std::pair<const char*, const char*> phases[] = {
      {"loss (cross entropy)", "loss"},
      {"gradient clipping (norm, scale)", "grad-clip"},
      {"optimizer step (multi-tensor Adam)", "optimizer"}};
  for (const auto& [label, phase] : phases)
    out += printf_string("  %-34s %12.3f %12.3f\n", label, first_stage.at(phase) / 1000,
                         last_stage.at(phase) / 1000);
  return out;
}

}  // namespace perfsim::scenario

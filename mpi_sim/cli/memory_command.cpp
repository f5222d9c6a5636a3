// `perfsim memory TRACE` (peak memory of the traced rank, replayed through the caching-allocator
// emulation) and `perfsim memory --llm ...` (closed forms for a GPT-style model). Rank 0 only.
#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>
#include <string>
#include <utility>

#include "generators/llm/llm_gradient_dtype.hpp"
#include "generators/llm/llm_model_config.hpp"
#include "generators/llm/llm_model_overrides.hpp"
#include "generators/llm/llm_parallel_config.hpp"
#include "hdf5/column_table.hpp"
#include "io/input_file.hpp"
#include "memory/kineto_memory.hpp"
#include "memory/llm_memory.hpp"
#include "memory/memory_report_json.hpp"
#include "memory/memory_timeline_table.hpp"
#include "memory/trace_memory.hpp"
#include "mpi_sim/cli/command_line.hpp"
#include "mpi_sim/cli/pipeline_split_options.hpp"
#include "mpi_sim/cli/shipped_config_option.hpp"
#include "perfsim/error.hpp"
#include "scenario/device_argument.hpp"
#include "trace_io/kineto_memory_events.hpp"
#include "trace_io/trace_format.hpp"

namespace perfsim::cli {
namespace {

namespace llm = generators::llm;

// The closed form's model: a model file (--model) or GPT shapes from flags (FFN 4h unless
// --ffn, multi-head, unfused attention with dropout as in Korthikanti et al. 2022).
struct LlmShapeFlags {
  int layers = 0;
  int hidden = 0;
  int heads = 0;
  int seq_len = 0;
  int micro_batch = 0;  // 0: 1 with shape flags, the model file's with --model
  int vocab = 0;
  int ffn_hidden = 0;  // 0 means 4 x hidden
  int dtype_bytes = 2;
  std::string dtype;      // "" : bf16 / --dtype-bytes, or the model file's
  int micro_batches = 0;  // per iteration per pipeline; 0: as many as pipeline stages
};

struct MemoryOptions {
  std::string trace;
  std::string gpu_device;
  std::string timeline_path;
  bool llm = false;
  std::string model_path;
  LlmShapeFlags shape;
  llm::ParallelConfig parallel;
  std::string recompute = "none";
  // --moe-expert-capacity-factor: > 0 replaces the model file's, < 0 dropless, 0 the file's.
  double moe_expert_capacity_factor = 0;
  std::string recompute_modules;           // Megatron-Core's --recompute-modules; empty: core_attn
  std::string grad_reduce_dtype = "auto";  // Megatron's default for the model's dtype
  // simulate's switches the closed form reads, with simulate's names and defaults.
  bool distributed_optimizer = false;
  std::string fp8_recipe = "delayed";
  bool cross_entropy_fusion = false;  // --cross-entropy-loss-fusion
  std::string cross_entropy_fusion_impl = "native";
  std::string moe_token_dispatcher = "alltoall";
  std::string device;  // name or file; gives the capacity
  std::string device_name;
  double capacity_GB = 0;  // overrides the device's; 0: the device's (unknown without one)
  double context_MiB = static_cast<double>(memory::kDefaultContextBytes) / (1024 * 1024);
  std::string format = "text";  // text, json (schema perfsim-memory/1) or csv (--llm stages)
};

memory::DeviceMemory device_memory(const MemoryOptions& options) {
  const Bytes context = static_cast<Bytes>(std::llround(options.context_MiB * 1024 * 1024));
  memory::DeviceMemory device;
  if (!options.device.empty())
    device = memory::device_memory_of(scenario::read_device_argument(options.device),
                                      options.capacity_GB, context);
  else if (options.capacity_GB > 0)
    device.capacity_bytes = static_cast<Bytes>(std::llround(options.capacity_GB * kBytesPerGB));
  device.context_bytes = context;
  if (!options.device_name.empty())
    device.name = options.device_name;
  return device;
}

// Without --model every shape flag is needed: llm::validate names the one left at 0.
llm::TransformerConfig model_from_flags(const LlmShapeFlags& shape, const llm::ParallelConfig& p) {
  llm::TransformerConfig model;
  model.name = "command-line model";
  model.source = "perfsim memory flags";
  model.layers = shape.layers;
  model.hidden = shape.hidden;
  model.heads = shape.heads;
  model.kv_heads = shape.heads;
  model.ffn_hidden = shape.ffn_hidden > 0 ? shape.ffn_hidden : 4 * shape.hidden;
  model.vocab = shape.vocab;
  model.seq_len = shape.seq_len;
  model.micro_batch = shape.micro_batch > 0 ? shape.micro_batch : 1;
  const int micro_batches = shape.micro_batches > 0 ? shape.micro_batches : p.pp;
  model.global_batch = micro_batches * model.micro_batch * p.dp;
  if (shape.dtype_bytes != 2 && shape.dtype_bytes != 4)
    throw InputError("<command line>", "--dtype-bytes",
                     "must be 2 (bf16) or 4 (fp32), got " + std::to_string(shape.dtype_bytes));
  model.dtype = shape.dtype_bytes == 2 ? DType::kBFloat16 : DType::kFloat32;
  model.attention = llm::AttentionKernel::kUnfused;
  model.dropout = true;
  llm::validate(model, "<command line>");
  return model;
}

// Every closed-form option needs --llm: given with a trace it would be silently ignored.
void add_llm_options(CLI::App& command, MemoryOptions& options, CLI::Option* llm_flag) {
  LlmShapeFlags& shape = options.shape;
  llm::ParallelConfig& parallel = options.parallel;
  const char* group = "LLM closed form (with --llm)";
  auto add = [&](const char* name, auto& value, const char* help) {
    return command.add_option(name, value, help)
        ->group(group)
        ->capture_default_str()
        ->needs(llm_flag);
  };
  auto add_flag = [&](const char* name, bool& value, const char* help) {
    return command.add_flag(name, value, help)->group(group)->needs(llm_flag);
  };
  CLI::Option* model_file =
      add("--model", options.model_path,
          "model file or name in configs/models instead of shapes (default: the shapes below)")
          ->transform(shipped_config("models"));
  auto add_shape = [&](const char* name, auto& value, const char* help) {
    add(name, value, help)->excludes(model_file);
  };
  // These six also replace a model file's value, as simulate's shape flags do.
  add("--layers", shape.layers, "transformer layers L (with --model: replaces the file's)");
  add("--hidden", shape.hidden, "hidden size h (with --model: replaces the file's)");
  add("--heads", shape.heads, "attention heads a (with --model: replaces the file's)");
  add("--seq,--seq-len", shape.seq_len,
      "sequence length s (--seq-len: as simulate spells it; with --model: replaces the file's)");
  add("--vocab", shape.vocab, "vocabulary size v (with --model: replaces the file's)");
  add("--ffn", shape.ffn_hidden, "MLP hidden size (0: 4h; with --model: replaces the file's)");
  add_shape("--dtype-bytes", shape.dtype_bytes, "bytes per weight and activation element");
  add("--dtype", shape.dtype,
      "training precision bf16, fp16 or fp8 (FP8 recipe: bf16 state plus FP8 weight copies; "
      "default: the model file's, else --dtype-bytes)")
      ->check(CLI::IsMember({"bf16", "fp16", "fp8"}));
  add_shape("--micro-batches", shape.micro_batches,
            "micro-batches per iteration (0: as many as p)");
  add("--micro-batch", shape.micro_batch, "micro-batch size b");
  add("--tp", parallel.tp, "tensor-parallel size t");
  add("--pp", parallel.pp, "pipeline stages p");
  add("--dp", parallel.dp, "data-parallel size");
  add("--cp", parallel.cp,
      "context-parallel size (each rank keeps the activations of s / CP tokens)");
  add("--ep", parallel.ep, "expert-parallel size (MoE model files; carved out of DP)");
  add("--etp", parallel.etp, "expert tensor-parallel size (MoE model files; default: TP)");
  add("--moe-imbalance", parallel.moe_imbalance, "MoE: max / mean expert load");
  add("--moe-expert-capacity-factor", options.moe_expert_capacity_factor,
      "MoE: Megatron-Core's token-drop capacity factor, as `simulate "
      "--moe-expert-capacity-factor` (negative: dropless; default: the model file's)");
  add_flag("--moe-pad-expert-input-to-capacity", parallel.moe_pad_to_capacity,
           "MoE: every expert's input padded to its capacity (needs a capacity factor)");
  add_flag("--moe-grouped-gemm,!--no-moe-grouped-gemm", parallel.moe_grouped_gemm,
           "MoE: grouped experts (default), or SequentialMLP, whose FP8 rows are padded to "
           "multiples of 16 per expert, as `simulate --no-moe-grouped-gemm`");
  add("--virtual-stages", parallel.virtual_stages, "model chunks per stage (interleaved 1F1B)");
  add("--pp-layers", parallel.pp_layers, "layers of each stage when uneven, e.g. 7,9,9,7")
      ->delimiter(',');
  add_pipeline_layout_option(command, parallel.pp_layout, "")->group(group)->needs(llm_flag);
  for (CLI::Option* option :
       add_pipeline_split_options(command,
                                  {parallel.first_stage_layers, parallel.last_stage_layers,
                                   parallel.account_for_embedding, parallel.account_for_loss},
                                  ""))
    option->group(group)->needs(llm_flag);
  add("--zero", parallel.zero_stage, "ZeRO stage 0..3");
  add("--global-batch", parallel.global_batch, "with --model: global batch (default: the file's)")
      ->needs(model_file);
  add("--recompute", options.recompute, "activation recomputation: none, selective, full");
  add("--recompute-modules", options.recompute_modules,
      "with --recompute selective: Megatron-Core's recompute modules, comma-separated "
      "(core_attn, layernorm, moe_act, mla_up_proj, mlp, shared_experts, moe; default core_attn)");
  add("--grad-reduce-dtype", options.grad_reduce_dtype,
      "main gradients fp32, bf16 or fp16, as `simulate --grad-reduce-dtype` (default "
      "Megatron's: fp16 for fp16 training, else fp32)")
      ->check(CLI::IsMember({"auto", "fp32", "bf16", "fp16"}));
  add_flag("--tp-comm-overlap", parallel.tp_comm_overlap,
           "Transformer Engine userbuffer TP overlap: its communication buffers");
  add_flag("--sequence-parallel", parallel.sequence_parallel, "sequence parallelism");
  // The switches of `simulate` that change what the closed form counts, spelled as there, so
  // that `memory --llm` and simulate's memory line agree for one layout.
  add_flag("--distributed-optimizer", options.distributed_optimizer,
           "Megatron's distributed optimizer: ZeRO 1 unless --zero says more, as `simulate "
           "--distributed-optimizer`");
  add("--fp8-recipe", options.fp8_recipe,
      "with fp8: delayed, current or blockwise, as `simulate --fp8-recipe` (blockwise gathers "
      "the linear inputs in bf16: they are kept so)");
  add_flag(
      "--fp8-all-gather,!--no-fp8-all-gather", parallel.fp8_all_gather,
      "with fp8 and SP: the linear inputs cast to FP8 before their TP all-gather, as `simulate "
      "--fp8-all-gather` (default on)");
  add_flag("--fp8-param-gather", parallel.fp8_param_gather,
           "with fp8 and the distributed optimizer: FP8 primary weights, as `simulate "
           "--fp8-param-gather` (1 byte per linear weight and its transpose, no bf16 copy; "
           "default off)");
  add_flag("--cross-entropy-loss-fusion", options.cross_entropy_fusion,
           "Megatron-Core's fused cross entropy, as `simulate --cross-entropy-loss-fusion` (what "
           "the loss keeps for its backward)");
  add("--cross-entropy-fusion-impl", options.cross_entropy_fusion_impl,
      "native or te, as `simulate --cross-entropy-fusion-impl`")
      ->check(CLI::IsMember({"native", "te"}));
  add("--moe-token-dispatcher", options.moe_token_dispatcher,
      "MoE: alltoall or flex, as `simulate --moe-token-dispatcher` (flex keeps the experts' "
      "output rows for the combine's backward)");
  add("--make-vocab-size-divisible-by", parallel.vocab_divisible_by,
      "pad the vocabulary to a multiple of this x TP, as `simulate "
      "--make-vocab-size-divisible-by`")
      ->check(CLI::PositiveNumber);
}

int run_llm_memory(MemoryOptions& options) {
  options.parallel.recompute = llm::parse_recompute(options.recompute, "--recompute");
  options.parallel.recompute_modules =
      llm::parse_recompute_modules(options.recompute_modules, "--recompute-modules", "");
  llm::TransformerConfig model;
  if (options.model_path.empty()) {
    model = model_from_flags(options.shape, options.parallel);
  } else {
    llm::ModelShapeOverrides overrides;
    overrides.layers = options.shape.layers;
    overrides.hidden = options.shape.hidden;
    overrides.heads = options.shape.heads;
    overrides.ffn_hidden = options.shape.ffn_hidden;
    overrides.vocab = options.shape.vocab;
    overrides.seq_len = options.shape.seq_len;
    model = llm::with_shape_overrides(llm::load_transformer_config(options.model_path), overrides,
                                      "<command line>");
    options.parallel.micro_batch = options.shape.micro_batch;
  }
  if (!options.shape.dtype.empty())
    model.dtype = llm::parse_training_dtype(options.shape.dtype, "--dtype", "");
  model.fp8_recipe = llm::parse_fp8_recipe(options.fp8_recipe, "--fp8-recipe", "");
  if (options.cross_entropy_fusion)
    model.cross_entropy_fusion = llm::parse_cross_entropy_fusion(options.cross_entropy_fusion_impl,
                                                                 "--cross-entropy-fusion-impl", "");
  options.parallel.moe_token_dispatcher =
      llm::parse_moe_token_dispatcher(options.moe_token_dispatcher, "--moe-token-dispatcher");
  if (options.distributed_optimizer)
    options.parallel.zero_stage = std::max(1, options.parallel.zero_stage);
  model = llm::with_run_capacity_factor(std::move(model), options.moe_expert_capacity_factor);
  options.parallel.gradient_dtype =
      llm::main_gradient_dtype(options.grad_reduce_dtype, model, "--grad-reduce-dtype");
  const memory::DeviceMemory device = device_memory(options);
  const memory::LlmMemoryEstimate estimate =
      memory::estimate_llm_memory(model, options.parallel, device);
  if (options.format == "json")
    std::cout << memory::llm_memory_json(model, options.parallel, estimate, device).dump(2) << "\n";
  else if (options.format == "csv")
    std::cout << memory::llm_memory_csv(estimate, device);
  else
    std::cout << memory::format_llm_memory(model, options.parallel, estimate, device);
  return 0;
}

}  // namespace

void add_memory_command(CLI::App& app, CommandRegistry& registry) {
  CLI::App* command = app.add_subcommand(
      "memory",
      "Predict peak GPU memory: from a trace (tensor lifetimes replayed through an emulation of "
      "the PyTorch caching allocator) or, with --llm, by closed forms for a GPT-style model");
  auto options = std::make_shared<MemoryOptions>();
  CLI::Option* trace_option =
      command->add_option("TRACE", options->trace,
                          "execution or Kineto trace: .json, .json.gz or archive.tar.gz:member");
  CLI::Option* llm_flag =
      command->add_flag("--llm", options->llm, "closed-form estimate instead of a trace")
          ->excludes(trace_option);
  command
      ->add_option("--gpu-device", options->gpu_device,
                   "tensor device to follow (default: the busiest cuda:N in the trace)")
      ->excludes(llm_flag);
  command->add_option("--device", options->device,
                      "GPU whose capacity decides the verdict: a device file "
                      "(configs/devices/*.json) or a name (A100-80GB); default with --llm: "
                      "A100-80GB, for traces: no verdict");
  command
      ->add_option("--capacity-GB", options->capacity_GB,
                   "device memory in GB (1e9 bytes), overriding the device file's "
                   "hbm_capacity_bytes")
      ->check(CLI::NonNegativeNumber);
  command
      ->add_option("--context-MiB", options->context_MiB,
                   "CUDA context and library memory outside the allocator (seed 003 Sec. 3.3)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  command
      ->add_option("--timeline", options->timeline_path,
                   "write live/allocated/reserved bytes per op to this HDF5 file "
                   "(group /memory_timeline; default: none)")
      ->excludes(llm_flag);
  command->add_option("--device-name", options->device_name,
                      "device name for the report (default: the device file's)");
  command
      ->add_option("--format", options->format,
                   "text; json (schema perfsim-memory/1, sizes in bytes, see "
                   "docs/output-formats.md); csv (--llm only: one row per pipeline stage)")
      ->check(CLI::IsMember({"text", "json", "csv"}))
      ->capture_default_str();
  add_llm_options(*command, *options, llm_flag);

  registry.add(command, RankScope::kRankZeroOnly, [options](const CommandContext&) -> int {
    if (options->llm) {
      if (options->device.empty() && options->capacity_GB == 0)
        options->device = "A100-80GB";
      return run_llm_memory(*options);
    }
    if (options->trace.empty())
      throw InputError("<command line>", "TRACE", "a trace file is required (or --llm)");
    if (options->format == "csv")
      throw InputError("<command line>", "--format",
                       "csv is the per-stage table of --llm; use json for a trace");
    const memory::DeviceMemory device = device_memory(*options);
    const io::InputBytes input = io::read_input(options->trace);
    if (trace_io::detect_trace_format(input) == trace_io::TraceFormat::kKineto) {
      // A Kineto trace names no tensor storage to replay, but records the allocator itself.
      const memory::KinetoMemoryReport report = memory::kineto_memory_report(
          input.source, trace_io::read_kineto_memory_events(input), device, options->gpu_device);
      if (options->format == "json") {
        std::cout << memory::kineto_memory_json(report, device).dump(2) << "\n";
        return 0;
      }
      std::cout << memory::format_kineto_memory_report(report);
      std::cout << "  verdict: " << memory::format_verdict(report.verdict, device) << "\n";
      return 0;
    }
    const Trace trace = trace_io::load_trace(input);
    const memory::TraceMemoryReport report =
        memory::trace_memory_report(trace, device, options->gpu_device);
    if (options->format == "json" && options->timeline_path.empty()) {
      std::cout << memory::trace_memory_json(report, device).dump(2) << "\n";
      return 0;
    }
    if (options->format == "json")
      throw InputError("<command line>", "--format",
                       "json prints the report alone; write --timeline in a separate run");
    std::cout << memory::format_trace_memory_report(report);
    std::cout << "  verdict: " << memory::format_verdict(report.verdict, device) << "\n";
    if (!options->timeline_path.empty()) {
      h5::write_table(options->timeline_path, "/memory_timeline",
                      memory::memory_timeline_table(report));
      std::cout << "  timeline: " << options->timeline_path << " (/memory_timeline, "
                << report.timeline.size() << " ops)\n";
    }
    return 0;
  });
}

}  // namespace perfsim::cli

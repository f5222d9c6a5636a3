// `perfsim memory TRACE` (peak memory of the traced rank, replayed through the caching-allocator
// emulation) and `perfsim memory --llm ...` (closed forms for a GPT-style model). Rank 0 only.
#include <cmath>
#include <iostream>
#include <map>
#include <memory>
#include <string>

#include "hdf5/column_table.hpp"
#include "memory/llm_memory.hpp"
#include "memory/memory_timeline_table.hpp"
#include "memory/trace_memory.hpp"
#include "mpi_sim/cli/command_line.hpp"
#include "perfsim/error.hpp"
#include "trace_io/trace_format.hpp"

namespace perfsim::cli {
namespace {

struct MemoryOptions {
  std::string trace;
  std::string gpu_device;
  std::string timeline_path;
  bool llm = false;
  memory::LlmMemoryConfig config;
  std::string recompute = "none";
  std::string device_name;
  double capacity_GB = 0;  // 0: unknown for traces, 80 (A100-80GB) for --llm
  double context_MiB = static_cast<double>(memory::kDefaultContextBytes) / (1024 * 1024);
};

memory::Recompute parse_recompute(const std::string& name) {
  static const std::map<std::string, memory::Recompute> kNames = {
      {"none", memory::Recompute::kNone},
      {"selective", memory::Recompute::kSelective},
      {"full", memory::Recompute::kFull}};
  auto it = kNames.find(name);
  if (it == kNames.end())
    throw InputError("<command line>", "--recompute",
                     "'" + name + "' is not one of none, selective, full");
  return it->second;
}

memory::DeviceMemory device_memory(const MemoryOptions& options, double default_capacity_GB) {
  memory::DeviceMemory device;
  device.name = options.device_name;
  const double capacity_GB = options.capacity_GB > 0 ? options.capacity_GB : default_capacity_GB;
  if (capacity_GB > 0)
    device.capacity_bytes = static_cast<Bytes>(std::llround(capacity_GB * kBytesPerGB));
  device.context_bytes = static_cast<Bytes>(std::llround(options.context_MiB * 1024 * 1024));
  return device;
}

// Every closed-form option needs --llm: given with a trace it would be silently ignored.
void add_llm_options(CLI::App& command, MemoryOptions& options, CLI::Option* llm_flag) {
  memory::LlmMemoryConfig& config = options.config;
  const char* group = "LLM closed form (with --llm)";
  auto add = [&](const char* name, auto& value, const char* help) {
    command.add_option(name, value, help)->group(group)->capture_default_str()->needs(llm_flag);
  };
  add("--layers", config.layers, "transformer layers L");
  add("--hidden", config.hidden, "hidden size h");
  add("--heads", config.heads, "attention heads a");
  add("--seq", config.seq_len, "sequence length s");
  add("--micro-batch", config.micro_batch, "micro-batch size b");
  add("--vocab", config.vocab, "vocabulary size v");
  add("--ffn", config.ffn_hidden, "MLP hidden size (0: 4h)");
  add("--dtype-bytes", config.dtype_bytes, "bytes per weight and activation element");
  add("--tp", config.tensor_parallel, "tensor-parallel size t");
  add("--pp", config.pipeline_parallel, "pipeline stages p");
  add("--dp", config.data_parallel, "data-parallel size");
  add("--virtual-stages", config.virtual_stages, "model chunks per stage (interleaved 1F1B)");
  add("--zero", config.zero_stage, "ZeRO stage 0..3");
  add("--micro-batches", config.micro_batches, "micro-batches per iteration (0: as many as p)");
  add("--recompute", options.recompute, "activation recomputation: none, selective, full");
  command.add_flag("--sequence-parallel", config.sequence_parallel, "sequence parallelism")
      ->group(group)
      ->needs(llm_flag);
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
  command
      ->add_option("--capacity-GB", options->capacity_GB,
                   "device memory in GB (1e9 bytes); default unknown for traces, 80 "
                   "(A100-80GB, hbm_capacity_bytes of its device file) with --llm")
      ->check(CLI::NonNegativeNumber);
  command
      ->add_option("--context-MiB", options->context_MiB,
                   "CUDA context and library memory outside the allocator (seed 003 Sec. 3.3)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  command
      ->add_option("--timeline", options->timeline_path,
                   "write live/allocated/reserved bytes per op to this HDF5 file "
                   "(group /memory_timeline)")
      ->excludes(llm_flag);
  command->add_option("--device-name", options->device_name, "device name for the report");
  add_llm_options(*command, *options, llm_flag);

  registry.add(command, RankScope::kRankZeroOnly, [options](const CommandContext&) -> int {
    if (options->llm) {
      constexpr double kA100CapacityGB = 80;
      MemoryOptions& opts = *options;
      if (opts.device_name.empty() && opts.capacity_GB == 0)
        opts.device_name = "A100-80GB";
      opts.config.recompute = parse_recompute(opts.recompute);
      const memory::DeviceMemory device = device_memory(opts, kA100CapacityGB);
      const memory::LlmMemoryEstimate estimate = memory::estimate_llm_memory(opts.config, device);
      std::cout << memory::format_llm_memory(opts.config, estimate, device);
      return 0;
    }
    if (options->trace.empty())
      throw InputError("<command line>", "TRACE", "a trace file is required (or --llm)");
    const Trace trace = trace_io::load_trace(options->trace);
    const memory::DeviceMemory device = device_memory(*options, 0);
    const memory::TraceMemoryReport report =
        memory::trace_memory_report(trace, device, options->gpu_device);
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

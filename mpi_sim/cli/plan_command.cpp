// `perfsim plan MODEL --gpus N --topology T --device D`: every layout of the model over N GPUs
// that divides it (planner/layout_enumerator.hpp), minus those that do not fit in memory
// (memory/llm_memory.hpp), simulated best bound first until no remaining layout can enter the
// top K (planner/plan_search.hpp). Each layout is simulated with one representative rank per
// pipeline stage (plan_simulation.hpp). Rank 0 only; --jobs simulates layouts on threads.

#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "devices/device_spec.hpp"
#include "generators/llm/llm_model_config.hpp"
#include "io/atomic_file.hpp"
#include "io/input_file.hpp"
#include "memory/device_memory.hpp"
#include "mpi_sim/cli/command_line.hpp"
#include "mpi_sim/cli/pipeline_split_options.hpp"
#include "mpi_sim/cli/plan_simulate_arguments.hpp"
#include "mpi_sim/cli/simulate_arguments.hpp"
#include "mpi_sim/cli/terminal.hpp"
#include "mpi_sim/cli/topology_size_options.hpp"
#include "perfsim/error.hpp"
#include "planner/layout_enumerator.hpp"
#include "planner/plan_search.hpp"
#include "report/html_report.hpp"
#include "report/summary_screen.hpp"
#include "scenario/config_path.hpp"
#include "scenario/device_argument.hpp"
#include "scenario/llm_calibration.hpp"
#include "scenario/llm_report.hpp"
#include "scenario/plan_report.hpp"
#include "scenario/plan_simulation.hpp"
#include "topology/node_resize.hpp"
#include "topology/topology.hpp"

namespace perfsim::cli {
namespace {

namespace llm = generators::llm;
using Clock = std::chrono::steady_clock;

struct PlanOptions {
  std::string model;
  int gpus = 0;
  std::string topology;
  std::string device;
  int global_batch = 0;
  std::size_t top = 5;
  int jobs = 1;
  int max_micro_batch = 8;
  int max_virtual_stages = 4;
  double capacity_GB = 0;
  double context_MiB = static_cast<double>(memory::kDefaultContextBytes) / (1024 * 1024);
  std::string assets;
  std::string calibration;  // "": the shipped one
  bool tp_overlap = false;
  bool tp_comm_overlap = false;
  bool moe_a2a_overlap = false;
  bool delay_wgrad_compute = false;
  bool moe_shared_expert_overlap = false;
  std::string moe_token_dispatcher = "alltoall";
  std::string moe_flex_backend = "deepep";
  int moe_deepep_num_sms = 20;
  int moe_hybridep_num_sms = 16;
  std::string dtype;                  // "": the model file's
  bool bias_swiglu_fusion = true;     // Megatron-Core's fused SwiGLU
  bool rope_fusion = true;            // Transformer Engine's fused rotary embedding
  bool cross_entropy_fusion = false;  // Megatron-Core's fused cross entropy
  std::string cross_entropy_fusion_impl = "native";
  int max_cp = 8;
  bool overlap_grad_reduce = false;
  bool overlap_param_gather = false;
  bool fp8_param_gather = false;
  std::string recompute_modules = "core_attn";           // Megatron-Core's default list
  std::vector<std::string> orders = {"tp-cp-ep-dp-pp"};  // rank orders tried per layout
  bool exhaustive = false;
  scenario::TopologySize topology_size;  // --nodes, --gpus-per-node
  std::string format = "text";
  bool quiet = false;
  std::string report_path;  // --report: HTML, "" = none
  bool account_for_embedding = false;
  bool account_for_loss = false;
  std::string pp_layout;  // Megatron-Core's layout string; empty: not set
};

void write_plan_html(const PlanOptions& options, const scenario::PlanRequest& request,
                     const scenario::PlanOutcome& outcome, const scenario::BestLayoutReport* best,
                     const std::string& device_name) {
  const report::PlanPage page = scenario::plan_page(request, outcome, device_name);
  std::string html;
  if (best) {
    const auto kind_of = [parallel = best->parallel](const std::string& group) {
      return scenario::llm_group_kind(group, parallel);
    };
    html = report::render_plan_html(page, &best->report, best->results, kind_of);
  } else {
    html = report::render_plan_html(page, nullptr, {}, report::group_kind);
  }
  report::write_html_report(options.report_path, html);
  if (!options.quiet)
    std::cerr << "perfsim plan: HTML report written to " << options.report_path << "\n";
}

// The chosen layout as a `perfsim simulate` command: the plan's inputs as given, the layout's
// settings and switches.
std::string best_simulate_command(const PlanOptions& options, const llm::ParallelConfig& layout) {
  PlanSimulateSetting setting;
  setting.model_path = options.model;
  setting.topology_path = options.topology;
  setting.topology_size = options.topology_size;
  setting.device = options.device;
  setting.dtype = options.dtype;
  setting.bias_swiglu_fusion = options.bias_swiglu_fusion;
  setting.rope_fusion = options.rope_fusion;
  setting.cross_entropy_fusion = options.cross_entropy_fusion;
  setting.cross_entropy_fusion_impl = options.cross_entropy_fusion_impl;
  setting.assets = options.assets;
  setting.calibration = options.calibration;
  return simulate_command_line(
      llm_simulate_arguments(plan_layout_simulate_options(setting, layout)));
}

int run_plan(const PlanOptions& options) {
  const auto start = Clock::now();
  if (!options.report_path.empty())
    io::check_writable(options.report_path);
  llm::TransformerConfig model =
      llm::load_transformer_config(scenario::config_path(options.model, "models"));
  if (!options.dtype.empty())
    model.dtype = llm::parse_training_dtype(options.dtype, "--dtype", "");
  model.bias_swiglu_fusion = options.bias_swiglu_fusion;
  model.rope_fusion = options.rope_fusion;
  model.cross_entropy_fusion = options.cross_entropy_fusion ? llm::parse_cross_entropy_fusion(
                                                                  options.cross_entropy_fusion_impl,
                                                                  "--cross-entropy-fusion-impl", "")
                                                            : llm::CrossEntropyFusion::kNone;
  const topology::Topology topology = topology::resized(
      topology::load_topology(scenario::config_path(options.topology, "topologies")),
      options.topology_size.nodes, options.topology_size.gpus_per_node);
  const devices::DeviceSpec device = scenario::read_device_argument(options.device);
  const memory::DeviceMemory device_memory =
      memory::device_memory_of(device, options.capacity_GB,
                               static_cast<Bytes>(std::llround(options.context_MiB * 1024 * 1024)));
  const int gpus = options.gpus > 0 ? options.gpus : topology.world_size();
  if (gpus > topology.world_size())
    throw InputError(topology.source, "nodes",
                     "--gpus " + std::to_string(gpus) + " but the topology has " +
                         std::to_string(topology.world_size()) + " GPUs");

  scenario::PlanRequest request;
  request.model = model;
  request.topology = topology;
  request.device_json = io::read_file_decompressed(device.file);
  request.device_file = device.file;
  request.device_memory = device_memory;
  request.limits.gpus = gpus;
  request.limits.gpus_per_node = topology.node.gpus;
  request.limits.global_batch = options.global_batch;
  request.limits.max_micro_batch = options.max_micro_batch;
  request.limits.max_virtual_stages = options.max_virtual_stages;
  request.limits.account_for_embedding = options.account_for_embedding;
  request.limits.account_for_loss = options.account_for_loss;
  request.limits.pp_layout = options.pp_layout;
  request.limits.overlap_tp_backward = options.tp_overlap;
  request.limits.tp_comm_overlap = options.tp_comm_overlap;
  request.limits.moe_a2a_overlap = options.moe_a2a_overlap;
  // Megatron's precondition, refused by `simulate`'s rule: without the all-to-all overlap no
  // layout could run the delayed weight gradients.
  llm::ParallelConfig switches;
  switches.delay_wgrad_compute = options.delay_wgrad_compute;
  switches.moe_a2a_overlap = options.moe_a2a_overlap;
  if (const std::optional<std::string> problem = llm::delay_wgrad_compute_problem(switches))
    throw InputError("--delay-wgrad-compute", "", *problem);
  request.limits.delay_wgrad_compute = options.delay_wgrad_compute;
  request.limits.moe_shared_expert_overlap = options.moe_shared_expert_overlap;
  request.limits.moe_token_dispatcher =
      llm::parse_moe_token_dispatcher(options.moe_token_dispatcher, "--moe-token-dispatcher");
  request.limits.moe_flex_backend =
      llm::parse_moe_flex_backend(options.moe_flex_backend, "--moe-flex-backend");
  request.limits.moe_deepep_num_sms = options.moe_deepep_num_sms;
  request.limits.moe_hybridep_num_sms = options.moe_hybridep_num_sms;
  request.limits.max_context_parallel = options.max_cp;
  request.limits.overlap_grad_reduce = options.overlap_grad_reduce;
  request.limits.overlap_param_gather = options.overlap_param_gather;
  request.limits.fp8_param_gather = options.fp8_param_gather;
  request.limits.recompute_modules =
      llm::parse_recompute_modules(options.recompute_modules, "--recompute-modules", "");
  request.limits.orders.clear();
  for (const std::string& order : options.orders)
    request.limits.orders.push_back(llm::parse_rank_order(order, "--order"));
  request.top = options.top;
  request.jobs = options.jobs;
  request.exhaustive = options.exhaustive;
  request.assets_path = options.assets;
  request.calibration = scenario::calibration_argument(options.calibration, device.name);
  if (!options.quiet)
    std::cerr << "perfsim plan: " << model.name << " on " << gpus << " x " << device.name << " ("
              << topology.name << "), capacity "
              << memory::format_bytes(device_memory.capacity_bytes.value_or(0))
              << (options.exhaustive ? ", every fitting layout simulated"
                                     : ", best lower bound first, pruned when beaten")
              << "\n";
  // On a terminal one status line rewritten in place; elsewhere (a batch job's log) a plain
  // line at most once a minute, so that a search of many large layouts still shows it runs.
  const bool terminal = stderr_reaches_terminal();
  auto last_logged = Clock::now();
  if (!options.quiet && terminal) {
    request.progress = [&](const planner::SearchProgress& progress) {
      const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
      if (progress.bounded < progress.candidates) {
        std::fprintf(stderr, "\r  lower bounds %zu/%zu (%.1f s)\033[K", progress.bounded,
                     progress.candidates, elapsed);
      } else if (progress.latest) {
        std::fprintf(stderr, "\r  simulated %zu/%zu (%.1f s): %s %.3f s, best %.3f s\033[K",
                     progress.simulated, progress.candidates, elapsed,
                     planner::short_layout_name(progress.latest->parallel).c_str(),
                     progress.latest->iteration_us / 1e6, progress.best_us / 1e6);
      } else {
        std::fprintf(stderr, "\r\033[K");
      }
    };
  } else if (!options.quiet) {
    request.progress = [&](const planner::SearchProgress& progress) {
      const auto now = Clock::now();
      if (now - last_logged < std::chrono::seconds(60))
        return;
      last_logged = now;
      const double elapsed = std::chrono::duration<double>(now - start).count();
      if (progress.bounded < progress.candidates)
        std::fprintf(stderr, "  lower bounds %zu/%zu (%.0f s)\n", progress.bounded,
                     progress.candidates, elapsed);
      else
        std::fprintf(stderr, "  simulated %zu/%zu, %zu pruned (%.0f s), best %.3f s\n",
                     progress.simulated, progress.candidates, progress.pruned, elapsed,
                     progress.best_us / 1e6);
    };
  }
  const scenario::PlanOutcome outcome = scenario::plan_layouts(request);
  if (request.progress && terminal)
    std::fprintf(stderr, "\r\033[K");
  const planner::SearchResult& result = outcome.search;
  std::optional<scenario::BestLayoutReport> best;
  if (!result.top.empty())
    best = scenario::best_layout_report(request, result.top.front(), device.name,
                                        device.gemm_peak_flops_per_s(model.activation_dtype()));
  const double wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  if (best) {
    best->report.wall_s = wall_s;
  }
  if (!options.report_path.empty())
    write_plan_html(options, request, outcome, best ? &*best : nullptr, device.name);
  if (options.format == "json") {
    auto doc = scenario::plan_json(request, outcome, best ? &*best : nullptr, wall_s);
    doc["best_simulate_command"] =
        best ? decltype(doc)(best_simulate_command(options, best->parallel)) : decltype(doc)();
    std::cout << doc.dump(2) << "\n";
    return 0;
  }
  if (options.format == "csv") {
    std::cout << scenario::plan_csv(outcome);
    return 0;
  }

  std::cout << "perfsim plan: " << model.name << " (" << model.layers << " layers, hidden "
            << model.hidden << ", global batch "
            << (options.global_batch > 0 ? options.global_batch : model.global_batch) << ") on "
            << gpus << " x " << device.name << ", " << topology.name << "\n";
  std::cout << "  " << outcome.layouts << " layouts divide the model, " << outcome.out_of_memory
            << " out of memory, " << result.simulated << " simulated, " << result.pruned
            << " pruned by their lower bound\n";
  if (best)
    std::cout << "best layout:\n"
              << report::format_summary_screen(best->report, report::kSummaryScreenLines - 3);
  if (const auto leanest = scenario::leanest_not_fitting(outcome))
    std::cout << scenario::nothing_fits_text(*leanest, request.device_memory);
  std::cout << "\ntop " << result.top.size() << " by iteration time:\n";
  std::cout << planner::format_plan_table(result.top);
  if (best)
    std::cout << "the best layout with every rank: "
              << best_simulate_command(options, best->parallel) << "\n";
  char footer[160];
  std::snprintf(footer, sizeof footer, "planned in %.1f s wall\n", wall_s);
  std::cout << footer;
  return 0;
}

}  // namespace

void add_plan_command(CLI::App& app, CommandRegistry& registry) {
  CLI::App* command = app.add_subcommand(
      "plan",
      "Search parallel layouts (TP, PP and virtual stages, DP, micro-batch, ZeRO, sequence "
      "parallelism, recomputation) of an LLM over N GPUs: drop those that do not fit in "
      "memory, simulate the rest, print the fastest");
  auto options = std::make_shared<PlanOptions>();
  command
      ->add_option("MODEL", options->model,
                   "model file or name in configs/models (korthikanti-175b)")
      ->required();
  command->add_option("--gpus", options->gpus, "GPUs to use (default: the whole topology)")
      ->check(CLI::PositiveNumber);
  command
      ->add_option("--topology", options->topology,
                   "topology file or name in configs/topologies (dgx-a100-8node)")
      ->required();
  add_topology_size_options(*command, options->topology_size);
  command
      ->add_option("--device", options->device,
                   "GPU: device file or name in configs/devices (A100-80GB); its capacity "
                   "decides what fits")
      ->required();
  command
      ->add_option("--global-batch", options->global_batch,
                   "global batch in sequences (default: the model file's)")
      ->check(CLI::PositiveNumber);
  command->add_option("--top", options->top, "layouts to print")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  command->add_option("--jobs", options->jobs, "layouts simulated at once (threads)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  command->add_option("--max-micro-batch", options->max_micro_batch, "largest micro-batch tried")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  command
      ->add_option("--max-virtual-stages", options->max_virtual_stages,
                   "most model chunks per pipeline rank tried (interleaved 1F1B)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  command
      ->add_option("--capacity-GB", options->capacity_GB,
                   "device memory in GB (1e9 bytes), overriding the device file's")
      ->check(CLI::NonNegativeNumber);
  command
      ->add_option("--context-MiB", options->context_MiB,
                   "CUDA context and library memory outside the allocator")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  command->add_option(
      "--assets", options->assets,
      "fitted collective curves (`perfsim fit`); default: the shipped ones where they "
      "cover the topology, else nominal curves");
  command->add_option(
      "--calibration", options->calibration,
      "end-to-end calibration applied to every layout (as `perfsim simulate "
      "--calibration`): a file from `perfsim validate runs --fit-calibration`, or "
      "none; default: the shipped one of the device's platform (as `perfsim simulate`)");
  command
      ->add_option("--dtype", options->dtype,
                   "training precision bf16, fp16 or fp8 (default: the model file's)")
      ->check(CLI::IsMember({"bf16", "fp16", "fp8"}));
  command
      ->add_option("--max-cp", options->max_cp,
                   "largest context-parallel degree tried (Megatron CP, flash-attention models "
                   "only; 1: none)")
      ->check(CLI::PositiveNumber);
  command
      ->add_option("--recompute-modules", options->recompute_modules,
                   "the selective-recomputation layouts recompute these Megatron-Core modules, "
                   "comma-separated (core_attn, layernorm, moe_act, mla_up_proj, mlp, "
                   "shared_experts, moe; see "
                   "`simulate --recompute-modules`)")
      ->capture_default_str();
  command->add_flag("--overlap-grad-reduce", options->overlap_grad_reduce,
                    "every layout reduces gradients in buckets under the backward (see "
                    "`simulate --overlap-grad-reduce`)");
  command->add_flag("--fp8-param-gather", options->fp8_param_gather,
                    "with fp8 (delayed or current scaling): the ZeRO 1/2 layouts keep FP8 "
                    "primary weights, as `simulate --fp8-param-gather` (memory filter and "
                    "simulations; default off)");
  command->add_flag("--overlap-param-gather", options->overlap_param_gather,
                    "ZeRO 1/2/3 layouts all-gather parameters under the first forward, with "
                    "--overlap-grad-reduce as Megatron requires");
  add_pipeline_split_accounting_flags(*command, options->account_for_embedding,
                                      options->account_for_loss, "every layout: ");
  add_pipeline_layout_option(*command, options->pp_layout,
                             "every layout (only PP x virtual stages equal to its stages): ");
  command->add_flag("--tp-overlap", options->tp_overlap,
                    "overlap backward TP collectives (see `simulate --tp-overlap`)");
  command
      ->add_option("--order", options->orders,
                   "rank orders tried for each layout, comma-separated (Megatron-Core's order, "
                   "fastest-varying first; e.g. tp-cp-ep-dp-pp,tp-cp-ep-pp-dp also tries "
                   "pipeline stages inside a node); orders Megatron refuses for a layout and "
                   "orders placing it as an earlier one does are skipped")
      ->delimiter(',')
      ->capture_default_str();
  command->add_flag("--bias-swiglu-fusion,!--no-bias-swiglu-fusion", options->bias_swiglu_fusion,
                    "gated FFNs: Megatron-Core's fused SwiGLU (default; see `simulate "
                    "--no-bias-swiglu-fusion`)");
  command->add_flag("--rope-fusion,!--no-rope-fusion", options->rope_fusion,
                    "rotary models: Transformer Engine's fused rotary embedding (default; see "
                    "`simulate --no-rope-fusion`)");
  command->add_flag("--cross-entropy-loss-fusion,!--no-cross-entropy-loss-fusion",
                    options->cross_entropy_fusion,
                    "Megatron-Core's fused cross entropy (default off; see `simulate "
                    "--cross-entropy-loss-fusion`)");
  command
      ->add_option("--cross-entropy-fusion-impl", options->cross_entropy_fusion_impl,
                   "native or te (see `simulate --cross-entropy-fusion-impl`)")
      ->check(CLI::IsMember({"native", "te"}))
      ->capture_default_str();
  command->add_flag("--tp-comm-overlap", options->tp_comm_overlap,
                    "sequence-parallel layouts use Transformer Engine's userbuffer TP overlap "
                    "(see `simulate --tp-comm-overlap`)");
  command->add_flag("--moe-a2a-overlap", options->moe_a2a_overlap,
                    "MoE layouts Megatron-Core allows it on (EP > 1, PP 1 or interleaved, no full "
                    "recomputation) overlap the EP all-to-alls with the other micro-batch's "
                    "compute (see `simulate --moe-a2a-overlap`)");
  command->add_flag("--delay-wgrad-compute", options->delay_wgrad_compute,
                    "with --moe-a2a-overlap: the layouts that run it also delay their weight "
                    "gradients beside the backward's all-to-alls (see `simulate "
                    "--delay-wgrad-compute`)");
  command->add_flag("--moe-shared-expert-overlap", options->moe_shared_expert_overlap,
                    "MoE layouts Megatron-Core allows it on (shared experts, EP > 1, the alltoall "
                    "dispatcher, not running --moe-a2a-overlap) run the shared experts beside the "
                    "EP all-to-alls (see `simulate --moe-shared-expert-overlap`)");
  command
      ->add_option("--moe-token-dispatcher", options->moe_token_dispatcher,
                   "alltoall, or flex: MoE layouts the flex dispatcher is modelled on (EP > 1, "
                   "expert TP 1, the same number of EP ranks on every node of the EP group) use "
                   "it, the others alltoall (see `simulate --moe-token-dispatcher`)")
      ->check(CLI::IsMember({"alltoall", "flex"}))
      ->capture_default_str();
  command
      ->add_option("--moe-flex-backend", options->moe_flex_backend,
                   "the flex layouts' backend, deepep or hybridep (see `simulate "
                   "--moe-flex-backend`)")
      ->check(CLI::IsMember({"deepep", "hybridep"}))
      ->capture_default_str();
  command
      ->add_option("--moe-deepep-num-sms", options->moe_deepep_num_sms,
                   "SMs DeepEP's kernels hold (Megatron-Core moe_deepep_num_sms)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  command
      ->add_option("--moe-hybridep-num-sms", options->moe_hybridep_num_sms,
                   "SMs HybridEP's kernels hold (Megatron-Core moe_hybridep_num_sms)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  command->add_flag("--exhaustive", options->exhaustive,
                    "simulate every layout that fits (no lower-bound pruning)");
  command
      ->add_option("--format", options->format,
                   "standard output: text (the best layout's summary, then the ranking), json "
                   "(schema perfsim-plan/1, docs/output-formats.md) or csv (the ranking)")
      ->check(CLI::IsMember({"text", "json", "csv"}))
      ->capture_default_str();
  command->add_flag("--quiet", options->quiet,
                    "no progress on standard error (on a terminal a status line; elsewhere a "
                    "line at most once a minute)");
  command->add_option("--report", options->report_path,
                      "also write a self-contained HTML report to this file: every layout "
                      "ranked with why it was not chosen, and the chosen layout's charts "
                      "(inline SVG, no network; default: none)");
  registry.add(command, RankScope::kRankZeroOnly,
               [options](const CommandContext&) { return run_plan(*options); });
}

}  // namespace perfsim::cli

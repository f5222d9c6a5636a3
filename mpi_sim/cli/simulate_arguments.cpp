#include "mpi_sim/cli/simulate_arguments.hpp"

#include <charconv>
#include <filesystem>

#include "perfsim/error.hpp"
#include "scenario/config_path.hpp"

namespace perfsim::cli {
namespace {

// The shortest text that reads back as the same double.
std::string exact(double value) {
  char buffer[64];
  const auto [end, error] = std::to_chars(buffer, buffer + sizeof buffer, value);
  return error == std::errc() ? std::string(buffer, end) : std::to_string(value);
}

// A shipped config by its name when the name finds exactly this file (config_path), else the
// path as given.
std::string config_argument(const std::string& path, const char* folder) {
  const std::filesystem::path file(path);
  const std::string stem = file.stem().string();
  if (file.extension() != ".json" || file.parent_path().filename() != folder ||
      std::filesystem::exists(stem))
    return path;
  try {
    std::error_code error;
    if (std::filesystem::equivalent(scenario::config_path(stem, folder), file, error))
      return stem;
  } catch (const InputError&) {
  }
  return path;
}

}  // namespace

std::vector<std::string> llm_simulate_arguments(const scenario::LlmSimulateOptions& options) {
  if (options.embedded_default)
    throw InputError("<embedded default scenario>", "", "has no simulate flags");
  const scenario::LlmSimulateOptions defaults;
  std::vector<std::string> args;
  auto value = [&args](const char* flag, const std::string& text) {
    args.push_back(flag);
    args.push_back(text);
  };
  auto number_if = [&](const char* flag, auto given, auto by_default) {
    if (given != by_default)
      value(flag, std::to_string(given));
  };
  auto flag_if = [&args](const char* flag, bool on) {
    if (on)
      args.push_back(flag);
  };
  if (!options.model_path.empty())
    value("--model", config_argument(options.model_path, "models"));
  const generators::llm::ModelShapeOverrides& shape = options.shape;
  number_if("--layers", shape.layers, 0);
  number_if("--hidden", shape.hidden, 0);
  number_if("--heads", shape.heads, 0);
  number_if("--kv-heads", shape.kv_heads, 0);
  number_if("--head-dim", shape.head_dim, 0);
  number_if("--ffn-hidden", shape.ffn_hidden, 0);
  number_if("--vocab", shape.vocab, 0);
  number_if("--seq-len", shape.seq_len, 0);
  if (!shape.attention.empty())
    value("--attention", shape.attention);
  if (shape.dropout)
    args.push_back(*shape.dropout ? "--dropout" : "--no-dropout");
  if (shape.gated_ffn)
    args.push_back(*shape.gated_ffn ? "--gated-ffn" : "--no-gated-ffn");
  if (!shape.position_embedding.empty())
    value("--position-embedding", shape.position_embedding);
  if (shape.tied_embeddings)
    args.push_back(*shape.tied_embeddings ? "--tied-embeddings" : "--no-tied-embeddings");

  value("--tp", std::to_string(options.tp));
  value("--pp", std::to_string(options.pp));
  value("--dp", std::to_string(options.dp));
  number_if("--cp", options.cp, defaults.cp);
  number_if("--ep", options.ep, defaults.ep);
  number_if("--etp", options.etp, defaults.etp);
  if (options.moe_imbalance != defaults.moe_imbalance)
    value("--moe-imbalance", exact(options.moe_imbalance));
  number_if("--virtual-stages", options.virtual_stages, defaults.virtual_stages);
  if (!options.pp_layers.empty()) {
    std::string list;
    for (int layers : options.pp_layers)
      list += (list.empty() ? "" : ",") + std::to_string(layers);
    value("--pp-layers", list);
  }
  if (!options.pp_layout.empty())
    value("--pp-layout", options.pp_layout);
  number_if("--first-stage-layers", options.first_stage_layers, defaults.first_stage_layers);
  number_if("--last-stage-layers", options.last_stage_layers, defaults.last_stage_layers);
  flag_if("--account-for-embedding-in-pipeline-split", options.account_for_embedding);
  flag_if("--account-for-loss-in-pipeline-split", options.account_for_loss);
  number_if("--micro-batch", options.micro_batch, defaults.micro_batch);
  number_if("--global-batch", options.global_batch, defaults.global_batch);
  if (options.order != defaults.order)
    value("--order", options.order);
  flag_if("--sequence-parallel", options.sequence_parallel);
  if (options.recompute != defaults.recompute)
    value("--recompute", options.recompute);
  if (!options.recompute_modules.empty())
    value("--recompute-modules", options.recompute_modules);
  number_if("--zero", options.zero_stage, defaults.zero_stage);
  if (options.bucket_mb != defaults.bucket_mb)
    value("--bucket-mb", exact(options.bucket_mb));
  if (!options.dtype.empty())
    value("--dtype", options.dtype);
  if (options.fp8_recipe != defaults.fp8_recipe)
    value("--fp8-recipe", options.fp8_recipe);
  flag_if("--no-fp8-all-gather", !options.fp8_all_gather);
  flag_if("--fp8-param-gather", options.fp8_param_gather);
  flag_if("--distributed-optimizer", options.distributed_optimizer);
  if (options.grad_reduce_dtype != defaults.grad_reduce_dtype)
    value("--grad-reduce-dtype", options.grad_reduce_dtype);
  flag_if("--overlap-grad-reduce", options.overlap_grad_reduce);
  flag_if("--overlap-param-gather", options.overlap_param_gather);
  number_if("--make-vocab-size-divisible-by", options.vocab_divisible_by,
            defaults.vocab_divisible_by);
  flag_if("--tp-overlap", options.tp_overlap);
  number_if("--comm-sms", options.comm_sms, defaults.comm_sms);
  flag_if("--no-comm-hbm-sharing", !options.comm_hbm_sharing);
  flag_if("--tp-comm-overlap", options.tp_comm_overlap);
  flag_if("--no-overlap-p2p-comm", !options.overlap_p2p_comm);
  flag_if("--p2p-scatter-gather", options.p2p_scatter_gather);
  flag_if("--moe-a2a-overlap", options.moe_a2a_overlap);
  flag_if("--delay-wgrad-compute", options.delay_wgrad_compute);
  flag_if("--moe-shared-expert-overlap", options.moe_shared_expert_overlap);
  flag_if("--moe-router-fusion", options.moe_router_fusion);
  flag_if("--moe-permute-fusion", options.moe_permute_fusion);
  flag_if("--moe-router-force-load-balancing", options.moe_router_force_load_balancing);
  if (options.moe_expert_capacity_factor != defaults.moe_expert_capacity_factor)
    value("--moe-expert-capacity-factor", exact(options.moe_expert_capacity_factor));
  flag_if("--moe-pad-expert-input-to-capacity", options.moe_pad_expert_input_to_capacity);
  flag_if("--no-moe-grouped-gemm", !options.moe_grouped_gemm);
  if (!options.moe_router_dtype.empty())
    value("--moe-router-dtype", options.moe_router_dtype);
  if (!options.moe_token_dispatcher.empty())
    value("--moe-token-dispatcher", options.moe_token_dispatcher);
  if (!options.moe_flex_backend.empty())
    value("--moe-flex-backend", options.moe_flex_backend);
  number_if("--moe-deepep-num-sms", options.moe_deepep_num_sms, defaults.moe_deepep_num_sms);
  number_if("--moe-hybridep-num-sms", options.moe_hybridep_num_sms, defaults.moe_hybridep_num_sms);
  flag_if("--no-bias-swiglu-fusion", !options.bias_swiglu_fusion);
  flag_if("--no-rope-fusion", !options.rope_fusion);
  flag_if("--cross-entropy-loss-fusion", options.cross_entropy_fusion);
  if (options.cross_entropy_fusion_impl != defaults.cross_entropy_fusion_impl)
    value("--cross-entropy-fusion-impl", options.cross_entropy_fusion_impl);
  flag_if("--get-batch-sync", options.get_batch_sync);
  flag_if("--timer-syncs", options.timer_syncs);
  if (options.link_sharing != defaults.link_sharing)
    value("--link-sharing", options.link_sharing ? "on" : "off");
  if (!options.topology_path.empty())
    value("--topology", config_argument(options.topology_path, "topologies"));
  number_if("--nodes", options.topology_size.nodes, 0);
  number_if("--gpus-per-node", options.topology_size.gpus_per_node, 0);
  if (!options.device_path.empty())
    value("--device", options.device_path);
  if (!options.assets_path.empty())
    value("--assets", options.assets_path);
  if (!options.calibration.empty())
    value("--calibration", options.calibration);
  return args;
}

std::string simulate_command_line(const std::vector<std::string>& arguments) {
  std::string line = "perfsim simulate";
  for (const std::string& argument : arguments) {
    const bool plain =
        !argument.empty() && argument.find_first_not_of(
                                 "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                 "0123456789-_./,:=+@%") == std::string::npos;
    if (plain) {
      line += " " + argument;
      continue;
    }
    std::string quoted = "'";
    for (char c : argument)
      quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    line += " " + quoted + "'";
  }
  return line;
}

}  // namespace perfsim::cli

#include "mpi_sim/cli/plan_simulate_arguments.hpp"

namespace perfsim::cli {

namespace llm = generators::llm;

scenario::LlmSimulateOptions plan_layout_simulate_options(const PlanSimulateSetting& setting,
                                                          const llm::ParallelConfig& layout) {
  scenario::LlmSimulateOptions options;
  options.model_path = setting.model_path;
  options.topology_path = setting.topology_path;
  options.topology_size = setting.topology_size;
  options.device_path = setting.device;
  options.dtype = setting.dtype;
  options.bias_swiglu_fusion = setting.bias_swiglu_fusion;
  options.rope_fusion = setting.rope_fusion;
  options.cross_entropy_fusion = setting.cross_entropy_fusion;
  options.cross_entropy_fusion_impl = setting.cross_entropy_fusion_impl;
  options.assets_path = setting.assets;
  options.calibration = setting.calibration;

  options.tp = layout.tp;
  options.pp = layout.pp;
  options.dp = layout.dp;
  options.cp = layout.cp;
  options.ep = layout.ep;
  options.etp = layout.etp;
  options.virtual_stages = layout.virtual_stages;
  options.pp_layout = layout.pp_layout;
  options.account_for_embedding = layout.account_for_embedding;
  options.account_for_loss = layout.account_for_loss;
  options.first_stage_layers = layout.first_stage_layers;
  options.last_stage_layers = layout.last_stage_layers;
  options.micro_batch = layout.micro_batch;
  options.global_batch = layout.global_batch;
  options.order = llm::rank_order_name(layout.order);
  options.sequence_parallel = layout.sequence_parallel;
  options.recompute = std::string(llm::recompute_name(layout.recompute));
  if (!layout.recompute_modules.is_default())
    options.recompute_modules = llm::recompute_modules_name(layout.recompute_modules);
  options.zero_stage = layout.zero_stage;
  options.overlap_grad_reduce = layout.overlap_grad_reduce;
  options.overlap_param_gather = layout.overlap_param_gather;
  options.fp8_param_gather = layout.fp8_param_gather;
  options.tp_overlap = layout.overlap_tp_backward;
  options.tp_comm_overlap = layout.tp_comm_overlap;
  options.moe_a2a_overlap = layout.moe_a2a_overlap;
  options.delay_wgrad_compute = layout.delay_wgrad_compute;
  options.moe_shared_expert_overlap = layout.moe_shared_expert_overlap;
  // The dispatcher's flags only where the layout runs flex (simulate's defaults otherwise).
  if (layout.moe_flex()) {
    options.moe_token_dispatcher =
        std::string(llm::moe_token_dispatcher_name(layout.moe_token_dispatcher));
    options.moe_flex_backend = std::string(llm::moe_flex_backend_name(layout.moe_flex_backend));
    options.moe_deepep_num_sms = layout.moe_deepep_num_sms;
    options.moe_hybridep_num_sms = layout.moe_hybridep_num_sms;
  }
  return options;
}

}  // namespace perfsim::cli

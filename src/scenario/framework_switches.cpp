#include "scenario/framework_switches.hpp"

#include <algorithm>
#include <optional>

namespace perfsim::scenario {
namespace {

// Records `flag` when the framework changes `target` to `value`.
template <class T>
void set_switch(T& target, const T& value, const std::string& flag,
                std::vector<std::string>& changed) {
  if (target == value)
    return;
  target = value;
  changed.push_back(flag);
}

template <class T>
void set_if_framework_says(bool stated, const std::optional<T>& framework_value, T& target,
                           const std::string& flag, std::vector<std::string>& changed) {
  if (!stated && framework_value)
    set_switch(target, *framework_value, flag, changed);
}

}  // namespace

std::vector<std::string> apply_framework_switches(const validation::FrameworkPreset& framework,
                                                  FrameworkModelTraits model,
                                                  const StatedSwitches& stated,
                                                  LlmSimulateOptions& options) {
  std::vector<std::string> changed;
  generators::llm::ModelShapeOverrides& shape = options.shape;
  if (!stated.attention && framework.attention)
    set_switch(shape.attention, *framework.attention, "--attention " + *framework.attention,
               changed);
  if (!stated.dropout && framework.dropout)
    set_switch(shape.dropout, std::optional<bool>(*framework.dropout),
               *framework.dropout ? "--dropout" : "--no-dropout", changed);
  if (!stated.etp && framework.expert_tp_one && model.moe && options.ep > 1)
    set_switch(options.etp, 1, "--etp 1", changed);

  // A switch applies only where simulate can run it (the recipes set them where they run):
  // FP8 primary weights with the distributed optimizer (ZeRO 1/2) and per-tensor scaling, the
  // parameter all-gather overlap with a sharded optimizer, the userbuffer TP overlap not with
  // multi-latent attention or ZeRO-3.
  const int zero =
      options.distributed_optimizer ? std::max(1, options.zero_stage) : options.zero_stage;
  if (!stated.fp8_param_gather && framework.fp8_param_gather_on_fp8 && options.dtype == "fp8" &&
      (zero == 1 || zero == 2) && options.fp8_recipe != "blockwise")
    set_switch(options.fp8_param_gather, true, "--fp8-param-gather", changed);
  if (!stated.grad_reduce_dtype && framework.grad_reduce_dtype)
    set_switch(options.grad_reduce_dtype, *framework.grad_reduce_dtype,
               "--grad-reduce-dtype " + *framework.grad_reduce_dtype, changed);
  set_if_framework_says(stated.overlap_grad_reduce, framework.overlap_grad_reduce,
                        options.overlap_grad_reduce, "--overlap-grad-reduce", changed);
  if (zero >= 1)
    set_if_framework_says(stated.overlap_param_gather, framework.overlap_param_gather,
                          options.overlap_param_gather, "--overlap-param-gather", changed);
  const bool userbuffer_overlap = framework.tp_comm_overlap_with_sequence_parallel && !model.mla &&
                                  zero != 3 && options.sequence_parallel && options.tp > 1 &&
                                  (!model.moe || framework.tp_comm_overlap_on_moe);
  if (!stated.tp_comm_overlap && userbuffer_overlap)
    set_switch(options.tp_comm_overlap, true, "--tp-comm-overlap", changed);
  if (framework.overlap_p2p_comm)
    set_if_framework_says(
        stated.overlap_p2p_comm, framework.overlap_p2p_comm, options.overlap_p2p_comm,
        *framework.overlap_p2p_comm ? "--overlap-p2p-comm" : "--no-overlap-p2p-comm", changed);
  if (framework.p2p_scatter_gather)
    set_if_framework_says(
        stated.p2p_scatter_gather, framework.p2p_scatter_gather, options.p2p_scatter_gather,
        *framework.p2p_scatter_gather ? "--p2p-scatter-gather" : "--no-p2p-scatter-gather",
        changed);
  if (model.moe && framework.moe_router_and_permute_fusion) {
    if (!stated.moe_router_fusion)
      set_switch(options.moe_router_fusion, true, "--moe-router-fusion", changed);
    if (!stated.moe_permute_fusion)
      set_switch(options.moe_permute_fusion, true, "--moe-permute-fusion", changed);
  }
  if (!stated.cross_entropy_fusion && framework.cross_entropy_fusion &&
      *framework.cross_entropy_fusion != "none") {
    set_switch(options.cross_entropy_fusion, true, "--cross-entropy-loss-fusion", changed);
    set_switch(options.cross_entropy_fusion_impl, *framework.cross_entropy_fusion,
               "--cross-entropy-fusion-impl " + *framework.cross_entropy_fusion, changed);
  }
  set_if_framework_says(stated.get_batch_sync, framework.get_batch_sync, options.get_batch_sync,
                        "--get-batch-sync", changed);
  set_if_framework_says(stated.timer_syncs, framework.timer_syncs, options.timer_syncs,
                        "--timer-syncs", changed);
  return changed;
}

}  // namespace perfsim::scenario

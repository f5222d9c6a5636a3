#pragma once
// What a training framework sets where a run-table row leaves a switch cell empty (RUNS.csv
// column `framework`, `validate runs --framework`). A published run rarely lists every switch
// its recipe set; these are the switches the shipped tables' rows state for their framework,
// each read from the framework's code or recipes (configs/validation/PUBLISHED.md):
//   megatron-core      (default) Megatron-LM's current defaults: nothing is set.
//   megatron-lm-2021   Megatron-LM 2020-2022 (Narayanan et al. 2021, Korthikanti et al. 2022):
//                      non-flash attention, dropout, get_batch waits for the GPU, the timers
//                      synchronize the device, the stage-boundary scatter/gather, no p2p overlap.
//   megatron-deepspeed Megatron-DeepSpeed (vTrain's runs): non-flash attention, dropout,
//                      get_batch waits for the GPU.
//   nemo               NeMo 2.0 performance recipes (24.07-24.12, Megatron-Core): gradient
//                      reduce-scatter and parameter all-gather overlapped, Transformer Engine's
//                      TP communication overlap where sequence parallelism runs over TP > 1.
//   megatron-bridge    Megatron-Bridge performance recipes (25.x-26.x): as nemo, plus bf16
//                      gradient reduction, Transformer Engine's fused cross entropy, FP8
//                      primary weights on FP8 runs, and on MoE models the router and
//                      permutation fusions, expert tensor parallel size 1 and no TP
//                      communication overlap.
// A cell the row gives always wins; what a preset sets is a row's default, nothing more.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace perfsim::validation {

struct FrameworkPreset {
  std::string_view name;
  std::optional<std::string> attention;  // flash | unfused
  std::optional<bool> dropout;
  std::optional<bool> get_batch_sync;
  std::optional<bool> timer_syncs;
  std::optional<bool> p2p_scatter_gather;
  std::optional<bool> overlap_p2p_comm;
  std::optional<bool> overlap_grad_reduce;
  std::optional<bool> overlap_param_gather;
  bool tp_comm_overlap_with_sequence_parallel = false;  // on where SP runs over TP > 1
  bool tp_comm_overlap_on_moe = false;                  // ... on MoE models too
  std::optional<std::string> grad_reduce_dtype;
  std::optional<std::string> cross_entropy_fusion;  // none | native | te
  bool fp8_param_gather_on_fp8 = false;
  bool moe_router_and_permute_fusion = false;
  bool expert_tp_one = false;  // expert tensor parallel size 1 on MoE models (else TP)
};

// Throws InputError naming the known frameworks for an unknown name. "" is megatron-core.
const FrameworkPreset& framework_preset(std::string_view name);
std::vector<std::string_view> framework_names();

}  // namespace perfsim::validation

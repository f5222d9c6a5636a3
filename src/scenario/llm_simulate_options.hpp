#pragma once
// `perfsim simulate --model ...`: a generated LLM training iteration instead of traces.
#include <string>
#include <vector>

#include "generators/llm/llm_model_overrides.hpp"
#include "scenario/topology_size.hpp"

namespace perfsim::scenario {

struct LlmSimulateOptions {
  std::string model_path;  // configs/models/*.json; empty: the shape below, else no LLM workload
  // --layers, --hidden, ...: over the model file's values, or without one the whole model
  // (generators/llm/llm_model_overrides.hpp).
  generators::llm::ModelShapeOverrides shape;
  int tp = 1;
  int pp = 1;
  int dp = 1;
  int cp = 1;                  // context parallelism (Megatron CP, ring attention)
  int ep = 1;                  // expert parallelism (MoE models), carved out of DP x CP
  int etp = 0;                 // expert tensor parallelism (MoE models); 0: = TP
  double moe_imbalance = 1.0;  // max / mean expert load
  int virtual_stages = 1;      // interleaved 1F1B when > 1
  std::vector<int> pp_layers;  // layers per stage when uneven; empty: equal
  // Megatron-Core's --pipeline-model-parallel-layout (llm_pipeline_layout.hpp); empty: not set.
  std::string pp_layout = {};
  int micro_batch = 0;   // 0: the model file's
  int global_batch = 0;  // 0: the model file's
  // Rank order of the parallel dimensions, fastest first (Megatron-Core's `order`).
  std::string order = "tp-cp-ep-dp-pp";
  bool sequence_parallel = false;
  std::string recompute = "none";
  // Megatron-Core's --recompute-modules (with selective recompute); empty: core_attn.
  std::string recompute_modules;
  int zero_stage = 0;
  double bucket_mb = 0;                    // 0: Megatron's max(40e6, 1e6 x DP) parameters
  bool overlap_grad_reduce = false;        // Megatron --overlap-grad-reduce
  std::string grad_reduce_dtype = "auto";  // Megatron's default; fp32, bf16, fp16
  bool distributed_optimizer = false;      // Megatron --use-distributed-optimizer (ZeRO 1)
  bool overlap_param_gather = false;       // Megatron --overlap-param-gather
  int vocab_divisible_by = 128;            // Megatron's --make-vocab-size-divisible-by
  bool tp_overlap = false;                 // overlap backward TP collectives (see ParallelConfig)
  int comm_sms = 24;                       // SMs a NCCL kernel holds beside an overlapped GEMM
  bool comm_hbm_sharing = true;            // overlapped collectives also take HBM bandwidth
  bool tp_comm_overlap = false;            // Transformer Engine userbuffer TP overlap
  bool overlap_p2p_comm = true;            // Megatron overlap_p2p_comm (interleaved only)
  bool moe_a2a_overlap = false;            // Megatron-Core --overlap-moe-expert-parallel-comm
  bool delay_wgrad_compute = false;        // Megatron-Core --delay-wgrad-compute
  bool moe_shared_expert_overlap = false;  // Megatron-Core --moe-shared-expert-overlap
  bool moe_router_fusion = false;          // Megatron-Core --moe-router-fusion
  bool moe_permute_fusion = false;         // Megatron-Core --moe-permute-fusion
  bool moe_router_force_load_balancing = false;  // --moe-router-force-load-balancing
  // --moe-expert-capacity-factor: > 0 replaces the model file's capacity factor, < 0 makes the
  // run dropless (Megatron-Bridge's -1.0 for None), 0 keeps the file's.
  double moe_expert_capacity_factor = 0;
  bool moe_pad_expert_input_to_capacity = false;  // --moe-pad-expert-input-to-capacity
  bool moe_grouped_gemm = true;                   // --no-moe-grouped-gemm: SequentialMLP
  std::string moe_router_dtype;                   // --moe-router-dtype: "" or fp32
  std::string moe_token_dispatcher;    // --moe-token-dispatcher: "" (alltoall), alltoall, flex
  std::string moe_flex_backend;        // --moe-flex-backend: "" (deepep), deepep, hybridep
  int moe_deepep_num_sms = 20;         // --moe-deepep-num-sms (Megatron's default)
  int moe_hybridep_num_sms = 16;       // --moe-hybridep-num-sms
  bool p2p_scatter_gather = false;     // Megatron-LM's stage-boundary scatter/gather
  std::string dtype;                   // "" : the model file's; bf16, fp16, fp8
  bool fp8_all_gather = true;          // FP8 + SP: linear inputs all-gathered in FP8 (TE)
  bool fp8_param_gather = false;       // FP8 primary weights (Megatron --fp8-param-gather)
  std::string fp8_recipe = "delayed";  // delayed | current (tensorwise) | blockwise
  bool bias_swiglu_fusion = true;      // Megatron-Core's fused SwiGLU (gated FFNs)
  bool rope_fusion = true;             // Transformer Engine's fused rotary embedding
  bool cross_entropy_fusion = false;   // Megatron-Core's fused cross entropy
  std::string cross_entropy_fusion_impl = "native";  // native | te
  bool get_batch_sync = false;  // get_batch waits for the GPU (Megatron-DeepSpeed)
  bool timer_syncs = false;     // Megatron-LM 2020-22 timers sync each fwd/bwd step
  bool link_sharing = true;     // concurrent collectives share NIC/NVLink bandwidth
  std::string topology_path;    // required with --model
  TopologySize topology_size;   // --nodes, --gpus-per-node
  std::string device_path;      // required with --model
  std::string assets_path;      // fitted collective curves; "": shipped if they cover
  std::string calibration;      // end-to-end calibration: "" shipped, "none", a file
  // The embedded default scenario (generators/llm/llm_default_scenario.hpp): model, topology
  // and device come from text compiled into the binary instead of the paths above.
  bool embedded_default = false;
  // Megatron-Core's pipeline split (generators/llm/llm_pipeline_split.hpp): first / last
  // stage's layers (0: not set), the embedding / the loss counted as a layer.
  int first_stage_layers = 0;
  int last_stage_layers = 0;
  bool account_for_embedding = false;
  bool account_for_loss = false;

  // --framework (scenario/framework_switches.hpp): its name ("" none) and the switches it set
  // where the command line gave none, as they read on a command line (for the output).
  std::string framework;
  std::vector<std::string> framework_switches;

  bool requested() const { return !model_path.empty() || !shape.empty() || embedded_default; }
  int world_size() const { return tp * cp * pp * dp; }
};

}  // namespace perfsim::scenario

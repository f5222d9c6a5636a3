#pragma once
// A table of measured training runs (RUNS.csv, README "Validating against measured runs"): one
// row per run, the layout it used and one measured figure. Rows are independent: a row whose
// cells are bad keeps its problem in `error` and the table still loads.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace perfsim::validation {

// Which measured column the table carries; converted to an iteration time with the row's
// model FLOPs or tokens where needed.
enum class MeasuredKind { kIterationSeconds, kTflopsPerGpu, kTokensPerSecondPerGpu };

struct RunRow {
  int line = 0;  // 1-based line in the file, for messages
  std::string name;
  std::string group;
  std::string model;  // a file or a name in configs/models; empty: the inline shape below
  // Inline model shape (or overrides of the model file's values); 0 / empty: not given.
  int layers = 0, hidden = 0, heads = 0, kv_heads = 0, ffn_hidden = 0, vocab = 0, seq_len = 0;
  int head_dim = 0;       // Megatron's kv_channels; 0: the model file's, else hidden / heads
  std::string attention;  // flash | unfused; empty: the model file's (inline: flash)
  std::optional<bool> dropout;
  std::optional<bool> gated_ffn;
  std::string position_embedding;       // learned | rope; empty: the model file's (inline: learned)
  std::optional<bool> tied_embeddings;  // empty: the model file's (inline: tied)
  int gpus = 0;
  int tp = 1, pp = 1, dp = 1, cp = 1, ep = 1, virtual_stages = 1;
  int etp = 0;        // expert tensor parallel size (MoE); 0 (empty cell): TP, Megatron's default
  std::string order;  // Megatron-Core's rank order (tp-cp-ep-pp-dp, ...); empty: the default
  int micro_batch = 0, global_batch = 0;
  std::string recompute = "none";
  // Megatron-Core's --recompute-modules with selective recompute, names separated by spaces or
  // '+' (generators/llm/llm_recompute_modules.hpp); empty: core_attn.
  std::string recompute_modules;
  bool sequence_parallel = false;
  std::string dtype = "bf16";
  bool distributed_optimizer = false;
  // ZeRO stage 0-3 (simulate --zero); 3 shards parameters too, as FSDP and DeepSpeed ZeRO-3 do.
  // With distributed_optimizer 1 the stage is at least 1.
  int zero_stage = 0;
  // FP8 primary weights (simulate --fp8-param-gather); nullopt (empty cell): the framework's.
  std::optional<bool> fp8_param_gather;
  // Main-gradient dtype (fp32 | bf16 | fp16 | auto: Megatron's default for the training dtype,
  // llm_gradient_dtype.hpp: fp16 for fp16 training, else fp32); empty: the framework's, else auto.
  std::string grad_reduce_dtype;
  // MoE routing imbalance, tokens of the busiest expert over the mean (simulate --moe-imbalance);
  // 1 (empty cell): balanced, as Megatron-Bridge's benchmarks force it.
  double moe_imbalance = 1.0;
  // The overlap switches a Megatron/NeMo recipe sets; nullopt (empty cell): the simulator's
  // default (ParallelConfig).
  std::optional<bool> overlap_grad_reduce;
  std::optional<bool> overlap_param_gather;
  std::optional<bool> tp_comm_overlap;
  std::optional<bool> overlap_p2p_comm;
  std::optional<bool> p2p_scatter_gather;  // Megatron-LM's stage-boundary scatter/gather
  // Megatron-Core's --overlap-moe-expert-parallel-comm (Megatron-Bridge moe_a2a_overlap): EP
  // all-to-alls overlapped with another micro-batch's compute; 0 (empty cell): off.
  bool moe_a2a_overlap = false;
  // Megatron-Core's --delay-wgrad-compute (needs moe_a2a_overlap); 0 (empty cell): off.
  bool delay_wgrad_compute = false;
  // Megatron-Core's --moe-shared-expert-overlap; 0 (empty cell): off.
  bool moe_shared_expert_overlap = false;
  // Megatron-Core's MoE kernel switches (TransformerConfig moe_router_fusion,
  // moe_permute_fusion, moe_router_force_load_balancing); 0 (empty cell): off, its default.
  std::optional<bool> moe_router_fusion;  // nullopt (empty cell): the framework's, else off
  std::optional<bool> moe_permute_fusion;
  bool moe_router_force_load_balancing = false;
  // Megatron-Core's moe_expert_capacity_factor (> 0; negative: dropless, as Megatron-Bridge's
  // -1.0) and moe_pad_expert_input_to_capacity; empty cells: the model file's factor, no pad.
  double moe_expert_capacity_factor = 0;
  bool moe_pad_expert_input_to_capacity = false;
  // Megatron-Core's moe_grouped_gemm (0: SequentialMLP); empty: grouped, perfsim's default.
  std::optional<bool> moe_grouped_gemm;
  // Megatron-Core's moe_router_dtype: "fp32", or empty (None, its default: the input's dtype).
  std::string moe_router_dtype;
  // Megatron-Core's --moe-token-dispatcher-type (alltoall | flex) and, with flex,
  // moe_flex_dispatcher_backend (deepep | hybridep); empty: alltoall / deepep.
  std::string moe_token_dispatcher;
  std::string moe_flex_backend;
  // Megatron-Core's element-wise fusions; nullopt (empty cell): on, Megatron-LM's default.
  std::optional<bool> bias_swiglu_fusion;
  std::optional<bool> rope_fusion;
  // Megatron-Core's cross-entropy fusion: none | native | te; empty: none (Megatron-LM's
  // default).
  std::string cross_entropy_fusion;
  // Transformer Engine's FP8 recipe with dtype fp8: delayed | current (Megatron's tensorwise,
  // Megatron-Bridge's FP8-CS); empty: delayed.
  std::string fp8_recipe;
  // get_batch waits for the GPU each micro-batch (Megatron-DeepSpeed, Megatron-LM before 2024);
  // 0: Megatron-Core's get_batch, no wait (generators/llm/llm_parallel_config.hpp).
  std::optional<bool> get_batch_sync;  // nullopt (empty cell): the framework's, else 0
  // Megatron-LM 2020-2022's timers synchronize the device at the start and stop of every
  // micro-batch's forward and backward; 0: Megatron-Core's dummy timers (no syncs).
  std::optional<bool> timer_syncs;  // nullopt (empty cell): the framework's, else 0
  // The training framework whose switches fill the empty cells (validation/framework_presets.hpp);
  // empty: megatron-core (Megatron-LM's current defaults) or validate runs --framework.
  std::string framework;
  std::string device;
  std::string topology;
  int nodes = 0;  // 0: gpus / GPUs per node of the topology
  // Megatron-Core's pipeline split (llm_pipeline_split.hpp); 0 / false: not set.
  int first_stage_layers = 0, last_stage_layers = 0;
  bool account_for_embedding = false, account_for_loss = false;
  // Each stage's or virtual stage's layers (ParallelConfig::pp_layers; ';' between them in
  // the cell) and Megatron-Core's layout string (ParallelConfig::pp_layout); empty: not set.
  std::vector<int> pp_layers = {};
  std::string pp_layout = {};
  double measured = 0;
  MeasuredKind measured_kind = MeasuredKind::kIterationSeconds;
  std::string error;  // non-empty: this row cannot be simulated, and why
};

struct RunTable {
  std::string source;
  MeasuredKind measured_kind = MeasuredKind::kIterationSeconds;
  std::vector<RunRow> rows;
};

// Throws InputError for a table that cannot be read at all (no header, an unknown column, no
// or two measured columns, a row with the wrong number of cells); problems of single cells go
// to that row's `error`.
RunTable parse_run_table(std::string_view csv_text, const std::string& source);
RunTable load_run_table(const std::string& path);

// The column names, in the documented order.
const std::vector<std::string>& run_table_columns();
std::string_view measured_column_name(MeasuredKind kind);

}  // namespace perfsim::validation

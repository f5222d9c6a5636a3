#pragma once
// How an LLM training job is split over GPUs, and the process groups that split implies.
// Ranks are laid out the way Megatron-Core lays them out, in the order `order` names the
// dimensions, fastest first (generators/llm/llm_rank_order.hpp, llm_rank_mesh.hpp). The default
// tp-cp-ep-dp-pp puts tensor parallel innermost, so a TP group is TP consecutive ranks inside one
// node; context parallel next, then data parallel; pipeline stages outermost:
//   rank = tp_rank + TP * (cp_rank + CP * (dp_rank + DP * pp_rank)).
// With context parallelism the gradients are reduced over the DP x CP ranks (Megatron's
// data-parallel group with context parallelism): the "dp/<i>" groups then hold DP x CP ranks.
// Expert parallelism (MoE models) is carved out of those DP x CP ranks, as Megatron-LM's
// expert mesh (the same order with CP 1, expert tensor parallel ETP, TP by default) does: with the
// default order and d = cp_rank + CP x dp_rank, the EP rank is d mod EP and the
// expert-data-parallel rank d / EP. The "ep/<i>" groups (EP ranks) exchange routed tokens; the
// "edp/<i>" groups (DP x CP / EP ranks) reduce the expert gradients.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "generators/llm/llm_model_config.hpp"
#include "generators/llm/llm_rank_order.hpp"
#include "generators/llm/llm_recompute_modules.hpp"
#include "perfsim/comm.hpp"
#include "perfsim/units.hpp"

namespace perfsim::generators::llm {

enum class Recompute { kNone, kSelective, kFull };

// The bus bandwidth (GB/s, as nccl-tests counts it) each kind of group's collectives reach on
// the cluster (llm_collective_bus_rates.hpp). A collective overlapped with compute takes HBM
// bandwidth in proportion to it (kernels/comm_hbm_traffic.hpp). 0: HBM sharing not modelled.
enum class MoeTokenDispatcher { kAllToAll, kFlex };
enum class MoeFlexBackend { kDeepEp, kHybridEp };
std::string_view moe_token_dispatcher_name(MoeTokenDispatcher dispatcher);
std::string_view moe_flex_backend_name(MoeFlexBackend backend);
// "alltoall" / "flex", "deepep" / "hybridep"; throws InputError(flag, "", problem) otherwise.
MoeTokenDispatcher parse_moe_token_dispatcher(std::string_view text, const std::string& flag);
MoeFlexBackend parse_moe_flex_backend(std::string_view text, const std::string& flag);

struct CollectiveBusRates {
  double tp_GBps = 0;
  double dp_GBps = 0;  // the gradient group (DP x CP)
  double cp_GBps = 0;
  double ep_GBps = 0;  // the expert-parallel all-to-all group
};
std::string_view recompute_name(Recompute recompute);
// "none", "selective", "full"; throws InputError(flag, "", problem) otherwise.
Recompute parse_recompute(std::string_view text, const std::string& flag);

// Transformer Engine's default userbuffer config (initialize_ub in
// transformer_engine/pytorch/module/base.py, get_default_config), used by Megatron-LM and NeMo
// when no ub_cfgs override it:
// - "pipeline" (proj_fprop, fc2_fprop): num_splits 4 chunks of tokens, num_sm 16 for the
//   reduce-scatter kernel, set_sm_margin: every chunk GEMM runs on SMs - 16.
// - "bulk" (qkv/fc1_dgrad all-gather, qkv/fc1_wgrad reduce-scatter): num_sm 16, set_sm_margin.
// - "ring_exchange" (qkv_fprop, fc1_fprop, proj_dgrad, fc2_dgrad): num_splits TP, use_ce (the
//   chunks move by copy engine), set_sm_margin false: the GEMMs keep every SM.
inline constexpr int kUserbufferPipelineSplits = 4;
inline constexpr int kUserbufferPipelineCommSms = 16;
inline constexpr int kUserbufferBulkCommSms = 16;

struct ParallelConfig {
  int tp = 1;
  int pp = 1;
  int dp = 1;
  // Context parallelism (Megatron CP, ring attention): each rank of a CP group holds 1/CP of
  // every sequence (load-balanced causal chunks); attention passes the K/V chunks around the
  // CP ring point-to-point, each step's transfer under the previous step's attention.
  int cp = 1;
  // Expert parallelism (Megatron --expert-model-parallel-size): each MoE layer's routed experts
  // split over EP ranks of the DP x CP group; tokens reach their experts by all-to-all(v).
  int ep = 1;
  // Expert tensor parallelism (Megatron-Core --expert-tensor-parallel-size): each expert's FFN
  // split over ETP ranks, the expert layers' grid ETP x EP x expert-DP (expert-DP =
  // TP x CP x DP / (ETP x EP)). 0: ETP = TP, Megatron's default (arguments.py).
  int etp = 0;
  // Routing imbalance: the tokens the busiest expert receives over the mean (max / mean load,
  // 1: perfectly balanced, at most num_experts / top_k). The all-to-all synchronizes the EP
  // group, so every rank is modelled as that busiest one: its grouped GEMMs and the
  // all-to-all bytes grow by this factor (capped by a capacity factor, which drops the rest).
  double moe_imbalance = 1.0;
  int virtual_stages = 1;          // model chunks per pipeline rank (interleaved 1F1B when > 1)
  bool sequence_parallel = false;  // TP collectives become reduce-scatter / all-gather
  Recompute recompute = Recompute::kNone;
  // With selective recompute: the submodules recomputed (Megatron-Core's --recompute-modules,
  // llm_recompute_modules.hpp); the default, core_attn, is Korthikanti et al.'s selective.
  RecomputeModules recompute_modules = {};
  // Whether selective recompute covers `module` (a RecomputeModules flag).
  bool recomputes(bool RecomputeModules::*module) const {
    return recompute == Recompute::kSelective && recompute_modules.*module;
  }
  int zero_stage = 0;  // 0: DDP all-reduce; 1, 2: reduce-scatter grads + all-gather
                       // params; 3: also all-gather params per layer
  // Data-parallel gradient reduction as Megatron-LM's DistributedDataParallel runs it.
  // overlap_grad_reduce (--overlap-grad-reduce, default off in Megatron-LM): gradients are
  // reduced in buckets during the backward pass of the last micro-batch, each bucket posted
  // as soon as its layers' gradients exist; the compute ops until the next bucket is posted
  // run beside it (contention, comm_sms). Off: each model chunk's gradients are reduced in
  // one collective after the pipeline schedule (Megatron's finish_grad_sync).
  bool overlap_grad_reduce = false;
  // With overlap: the bucket size; 0 is Megatron's default, max(40e6, 1e6 x DP) parameters.
  Bytes bucket_bytes = 0;
  // ZeRO 1/2 (Megatron's --use-distributed-optimizer is ZeRO 1): the updated parameters are
  // all-gathered after the optimizer step, or with overlap_param_gather at the start of the
  // next iteration's forward (modelled at the start of this one: buckets of consecutive layers
  // in forward order, each layer's first forward waiting for its bucket and running beside
  // the gathers in flight).
  bool overlap_param_gather = false;
  DType gradient_dtype = DType::kFloat32;  // Megatron reduces fp32 main grads
  // Backward TP collectives overlap the GEMMs that do not need them when true, as Megatron-LM
  // and Transformer Engine issue them (asynchronous data-gradient all-reduce under the
  // weight-gradient GEMM; with SP the input all-gather under the data-gradient GEMM and the
  // reduce-scatter under the weight-gradient GEMM), each GEMM slowed by the SMs the NCCL
  // kernel holds (comm_sms). Off by default: with that contention the Korthikanti et al. 2022
  // layer times without SP are still 9-16 % short (the collective itself would have to slow
  // down beside the GEMM, which the collective model does not know), while waiting matches
  // every row (tests/golden/llm_korthikanti_test.cpp prints both).
  bool overlap_tp_backward = false;
  // SMs a NCCL collective kernel holds while it runs: one CTA per channel. NCCL builds 24 ring
  // channels on an 8-GPU NVSwitch node (DGX A100: "Channel 23/24" in NCCL INFO logs, e.g.
  // NVIDIA/nccl-tests#100, NVIDIA/nccl#578). A compute kernel overlapped with a collective
  // runs on the remaining SMs (attribute "contention_sms"); 0 models overlap as free.
  int comm_sms = 24;
  // Bus bandwidth of the overlapped collectives, from the topology; with it each compute op
  // beside one also loses the HBM bandwidth that collective moves (attribute
  // "contention_hbm_GBps", kernels/comm_contention.hpp). Zero: SM contention only.
  CollectiveBusRates bus_rates = {};
  // Transformer Engine's userbuffer TP overlap (Megatron --tp-comm-overlap, TE ub_tp_comm_overlap;
  // needs sequence parallelism and TP > 1): every SP all-gather and reduce-scatter of the
  // linear layers is split and pipelined with its GEMM as TE's default ub config does it
  // (generators/llm/llm_userbuffer_overlap.cpp). Replaces overlap_tp_backward for those layers.
  bool tp_comm_overlap = false;
  // Megatron-LM's overlap_p2p_comm: with the interleaved schedule each stage-boundary receive is
  // posted one compute step ahead and runs beside it (off: just before the step that reads it).
  // Megatron-LM's default (--no-overlap-p2p-communication turns it off); it applies only with
  // virtual_stages > 1, as Megatron turns it off for the non-interleaved schedule.
  bool overlap_p2p_comm = true;
  // Megatron-Core's --overlap-moe-expert-parallel-comm (Megatron-Bridge moe_a2a_overlap): in the
  // 1F1B steady state one micro-batch's forward and another's backward run as one combined step,
  // split at the MoE all-to-alls, so each EP all-to-all of one runs on the communication stream
  // beside the other's attention or expert compute (llm_combined_step.hpp). Megatron's
  // preconditions (transformer_config.py): EP > 1, the alltoall (or flex) dispatcher, with
  // PP > 1 the interleaved schedule, no full recomputation, a bf16/fp16 model, at most one MTP
  // layer; one more warm-up forward with interleaving (schedules.py).
  bool moe_a2a_overlap = false;
  // Megatron-Core's --delay-wgrad-compute (needs moe_a2a_overlap): the weight-gradient GEMMs of
  // the experts, shared experts and attention run after the layer's next all-to-all is posted,
  // beside it (llm_delayed_wgrad.hpp, llm_combined_step.hpp).
  bool delay_wgrad_compute = false;
  // Megatron-Core's --moe-shared-expert-overlap (shared_experts.py): the shared experts run on
  // their own stream, fc1 beside the dispatch all-to-all, fc2 beside the combine's, the mirror
  // in the backward (llm_moe_shared_overlap.cpp). Not with moe_a2a_overlap.
  bool moe_shared_expert_overlap = false;
  // Megatron-Core's MoE kernel switches (README "The MoE layer's op inventory"), each off by
  // default as in TransformerConfig: moe_router_fusion (TE's fused top-k, aux-loss scores and
  // aux loss instead of the PyTorch ops), moe_permute_fusion (TE's Triton permute, sort and
  // unpermute instead of masked_select / index_select / cat / scatter_add, which synchronize
  // the host), moe_router_force_load_balancing (random logits for benchmarks, RandomSTE).
  bool moe_router_fusion = false;
  bool moe_permute_fusion = false;
  bool moe_router_force_load_balancing = false;
  // Megatron-Core's moe_pad_expert_input_to_capacity (needs the model's capacity factor): every
  // expert takes exactly its capacity of rows, the dropped slots padded, so the dispatcher knows
  // every split in advance: no token counts copied to the host, no host wait, equal all-to-all
  // splits, the experts computing capacity rows whatever the routing (token_dispatcher.py
  // drop_and_pad; README "Token dropping").
  bool moe_pad_to_capacity = false;
  // Megatron-Core's moe_grouped_gemm: the local experts as Transformer Engine's grouped linear
  // layers (TEGroupedMLP, every published recipe perfsim has read) or, off (Megatron-LM's own
  // flag default), SequentialMLP: one MLP module per local expert, run one after another, each
  // linear its own Transformer Engine Linear (llm_moe_sequential.cpp).
  bool moe_grouped_gemm = true;
  // Megatron-Core's moe_router_dtype "fp32" (default None: the input's dtype): the router GEMM
  // writes fp32 logits (Transformer Engine's general_gemm, bf16 operands) and every routing op
  // after it runs on fp32; its backward casts the weight and the input to fp32 for two GEMMs
  // Transformer Engine runs as TF32, and casts both gradients back (moe_utils.py
  // RouterGatingLinearFunction).
  bool moe_router_fp32 = false;
  // Megatron-Core's --moe-token-dispatcher-type: alltoall (NCCL all-to-allv over EP, perfsim's
  // default) or flex with moe_flex_dispatcher_backend deepep or hybridep: fused dispatch and
  // combine kernels that send each token once per distinct destination node and GPU
  // (kHierarchicalAllToAll; README "Flex token dispatcher"), holding moe_deepep_num_sms /
  // moe_hybridep_num_sms SMs (Megatron's defaults 20 and 16). DeepEP's dispatch makes the host
  // wait for the received-token count; HybridEP's does not.
  MoeTokenDispatcher moe_token_dispatcher = MoeTokenDispatcher::kAllToAll;
  MoeFlexBackend moe_flex_backend = MoeFlexBackend::kDeepEp;
  int moe_deepep_num_sms = 20;
  int moe_hybridep_num_sms = 16;
  // EP ranks that share a node (the topology's, set by with_expert_node_layout): how many nodes
  // a flex dispatch spans. 0 (no topology: generate, memory): the EP group in one node.
  int ep_ranks_per_node = 0;
  bool moe_flex() const { return moe_token_dispatcher == MoeTokenDispatcher::kFlex; }
  // SMs the flex dispatcher's kernels hold while they run.
  int moe_flex_sms() const {
    return moe_flex_backend == MoeFlexBackend::kHybridEp ? moe_hybridep_num_sms
                                                         : moe_deepep_num_sms;
  }
  // The device's sustained GEMM rate in the activation dtype (TFLOP/s) and streaming HBM
  // bandwidth (GB/s), set from the device file by scenario::with_compute_rate: with
  // moe_a2a_overlap they estimate which compute ops an all-to-all is in flight beside
  // (llm_combined_step.hpp). 0: unknown, the whole piece is marked.
  double gemm_TFLOPs = 0;
  double hbm_GBps = 0;
  // Megatron-LM's scatter/gather optimization of the stage-boundary tensor (Narayanan et al.
  // 2021, Sec. 4.1; megatron/p2p_communication.py, on by default there,
  // --no-scatter-gather-tensors-in-pipeline turns it off): with TP > 1 and without sequence
  // parallelism every TP rank holds the whole [s, b, h] tensor, so each sends only its 1/TP
  // slice and the receiving stage all-gathers the slices over its TP group, forward and
  // backward. Megatron-LM skips it with sequence parallelism (the tensor is already split) and
  // when TP does not divide the tensor; Megatron-Core's p2p_communication (2023 on) dropped
  // it, hence off here (Megatron-Core's default).
  bool p2p_scatter_gather = false;
  // Transformer Engine's cuBLAS workspace per GEMM stream the generated trace declares
  // (llm_te_workspace.hpp: 32 MiB on Hopper, 4 MiB before; te_cublas_workspace_bytes of the
  // device; scenario::with_te_workspaces sets it wherever a scenario resolves its device);
  // 0: not declared. Memory only (declarations are not simulated).
  Bytes cublas_workspace_bytes = 0;
  // FP8 with SP: the inputs of the column-parallel linear layers are cast to FP8 before their
  // all-gather (half the bytes), forward and for the weight gradient. Transformer Engine does so
  // in every release (1.x: the FP8 norm output or cast input is what gather_along_first_dim
  // gets; 2.x: Linear / LayerNormLinear quantize the local rows, then _all_gather_fp8), so it is
  // the default. Off (a what-if): gathered in bf16 and cast after. Blockwise scaling gathers its
  // row- and column-wise FP8 data, as many bytes as bf16: priced as off (LocalShapes).
  bool fp8_all_gather = true;
  // FP8 primary weights (Megatron-LM --fp8-param-gather, NeMo fp8_params, Megatron-Bridge's
  // FP8-CS recipes): Transformer Engine's linear weights are created as FP8 tensors
  // (fp8_model_init), 1 byte each, in a parameter buffer of their own that the distributed
  // optimizer all-gathers in FP8; the fp32 main weights are quantized into it after each step
  // (cast_master_weights_to_fp8, its amaxes MAX-reduced over the optimizer's DP group), and
  // each weight's transpose is made after its gather. No bf16 weight and no per-iteration
  // cast. Needs the FP8 recipe (delayed or current scaling) and the distributed optimizer.
  bool fp8_param_gather = false;
  // The planner's layer probe (scenario/plan_simulation.cpp), not a setting of a run: one layer
  // per stage and one micro-batch stand for every layer of every micro-batch there, so the
  // generator leaves out the work a run does once per iteration or once per pipeline chunk
  // (FP8 weight casts or transposes at the first micro-batch, delayed scaling's amax
  // reductions per fp8_autocast region); any layer of any micro-batch costs at least that.
  bool layer_probe = false;
  // Megatron pads the vocabulary to a multiple of this times TP (--make-vocab-size-divisible-by,
  // default 128) so the embedding and LM head split evenly; the padded rows cost time and memory.
  int vocab_divisible_by = 128;
  // Layers of each pipeline stage when they do not divide evenly (--pp-layers 7,9,...,7; one
  // entry per stage, summing to the model's layers; with interleaving each entry divides evenly
  // over the stage's chunks, or one entry per virtual stage in the order chunk x PP + stage).
  // Empty: an equal share each.
  std::vector<int> pp_layers = {};
  // Megatron-Core's --pipeline-model-parallel-layout ("Et*4|(t*4|)*14tmL";
  // llm_pipeline_layout.hpp): each virtual stage's transformer layers, with the embedding on
  // the first virtual stage and the MTP layers and the loss on the last, where the generator and
  // the memory model hold them (other placements are refused). Empty: not set.
  std::string pp_layout = {};
  // Megatron-Core's uneven split (--decoder-first-pipeline-num-layers, --decoder-last-...):
  // the first / last stage's transformer layers (0: not set), the rest split evenly over the
  // other stages; with interleaving every stage's layers split evenly over its chunks.
  int first_stage_layers = 0;
  int last_stage_layers = 0;
  // Megatron-Core's --account-for-embedding-in-pipeline-split / --account-for-loss-in-...:
  // the embedding (the loss) counts as one layer of an even split over PP x virtual stages, so
  // the first (last) virtual stage builds one transformer layer fewer. Not with the two above.
  bool account_for_embedding = false;
  bool account_for_loss = false;
  // Megatron-LM's 1F1B schedule batches each stage-boundary exchange (batch_p2p_comm) and then
  // calls torch.cuda.synchronize() (batch_p2p_sync, on by default): the host cannot run ahead
  // of the GPU across a pipeline transfer. The interleaved schedule does the same without
  // overlap_p2p_comm (batched_interleaved_schedule); with it, it overlaps its transfers
  // instead and does not synchronize.
  bool pipeline_p2p_sync = true;
  // get_batch on the first and last stages. Megatron-LM before 2024 and Megatron-DeepSpeed
  // (tensor_parallel.broadcast_data) copy the batch's sizes to the host before broadcasting the
  // batch over TP: the host waits for the GPU once per micro-batch, so the data loader's CPU
  // time is exposed. Megatron-Core (get_batch_on_this_tp_rank: non-blocking copies and
  // fixed-shape broadcasts) and NeMo do not wait: the same CPU time runs while the GPU works
  // through the kernels queued before it (--get-batch-sync turns the wait on).
  bool batch_load_sync = false;
  // Megatron-LM 2020-2022 (and Megatron-DeepSpeed's Megatron path before its 2023 sync) wraps
  // each micro-batch's forward and backward step in timers('forward-compute') and
  // timers('backward-compute'), whose start() and stop() call torch.cuda.synchronize()
  // unconditionally: the host waits for the GPU at both ends of every step, so it cannot queue
  // the next step's kernels while the GPU works. Megatron-Core and Megatron-LM after its
  // --timing-log-level rework return dummy timers at the default level 0 (no syncs).
  bool timer_syncs = false;
  int micro_batch = 0;   // 0: the model file's
  int global_batch = 0;  // 0: the model file's
  // Which dimensions vary fastest over the ranks (Megatron-Core's `order`), and so which
  // groups share a node: with tp-cp-ep-pp-dp (--use-tp-pp-dp-mapping) a node holds pipeline
  // stages and the data-parallel groups cross nodes.
  RankOrder order = default_rank_order();

  int world_size() const { return tp * cp * pp * dp; }
  // Ranks that hold the same parameters and reduce their gradients: DP x CP.
  int gradient_group_size() const { return dp * cp; }
  int expert_tp() const { return etp > 0 ? etp : tp; }
  // Ranks that hold the same experts and reduce the expert gradients: TP x CP x DP / (ETP x EP),
  // DP x CP / EP with the default ETP = TP.
  int expert_gradient_group_size() const {
    return tp * dp * cp / (std::max(1, expert_tp()) * std::max(1, ep));
  }
  // bucket_bytes, or Megatron's default for `gradient_dtype` when it is 0.
  Bytes effective_bucket_bytes() const {
    if (bucket_bytes > 0)
      return bucket_bytes;
    const Bytes parameters = std::max<Bytes>(40'000'000, Bytes{1'000'000} * dp * cp);
    return parameters * element_bytes(gradient_dtype);
  }
};

struct RankCoordinates {
  int tp = 0;
  int dp = 0;
  int pp = 0;
  int cp = 0;
};

// The coordinates of `rank` in the expert mesh (d = cp + CP x dp = ep + EP x edp).
struct ExpertCoordinates {
  int ep = 0;
  int edp = 0;
};
ExpertCoordinates expert_coordinates_of(const ParallelConfig& parallel, int rank);

RankCoordinates coordinates_of(const ParallelConfig& parallel, int rank);
int rank_of(const ParallelConfig& parallel, RankCoordinates coordinates);

// The effective micro-batch and global batch (parallel overrides model), and the micro-batches
// each pipeline runs per iteration: global / (micro * DP).
int micro_batch_size(const TransformerConfig& model, const ParallelConfig& parallel);
int global_batch_size(const TransformerConfig& model, const ParallelConfig& parallel);
int micro_batches_per_iteration(const TransformerConfig& model, const ParallelConfig& parallel);

// Transformer layers of pipeline stage `stage`: the sum over its chunks of
// virtual_stage_layers (llm_pipeline_split.hpp).
int layers_of_stage(const TransformerConfig& model, const ParallelConfig& parallel, int stage);

// The vocabulary after Megatron's padding: the smallest multiple of vocab_divisible_by x TP that
// is at least model.vocab.
long padded_vocab(const TransformerConfig& model, const ParallelConfig& parallel);

// Why Megatron-Core would refuse `parallel.order` for this layout (a dimension of size > 1
// left out; an order not ending with pp whose expert layers' DP differs from DP; expert layers
// on other pipeline groups), or why perfsim cannot model it (with EP, expert layers on other
// TP groups); nothing when the order is fine.
std::optional<std::string> order_problem(const ParallelConfig& parallel);

// Throws InputError("<parallel>", field, problem) when the model cannot be split this way, and
// first InputError("<model NAME>", field, problem) when the model itself is invalid
// (validate(model, file): a size that is not positive, or too large).
void validate(const TransformerConfig& model, const ParallelConfig& parallel);

// Group names: "tp/<i>", "dp/<i>", "pp/<i>", "cp/<i>" with i the group's index among groups of
// its kind.
// Why `parallel` cannot run with moe_a2a_overlap (Megatron-Core's refusals, then what perfsim
// does not model with it), or nullopt.
std::optional<std::string> moe_a2a_overlap_problem(const TransformerConfig& model,
                                                   const ParallelConfig& parallel);

// Why `parallel` cannot run with delay_wgrad_compute (Megatron-Core's refusal), if it cannot.
std::optional<std::string> delay_wgrad_compute_problem(const ParallelConfig& parallel);
// Why `parallel` cannot run with moe_shared_expert_overlap, if it cannot.
std::optional<std::string> shared_expert_overlap_problem(const TransformerConfig& model,
                                                         const ParallelConfig& parallel);

std::string tp_group_name(const ParallelConfig& parallel, int rank);
std::string dp_group_name(const ParallelConfig& parallel, int rank);
std::string pp_group_name(const ParallelConfig& parallel, int rank);
std::string cp_group_name(const ParallelConfig& parallel, int rank);
// "ep/<i>" (expert parallel) and the expert gradients' group: "edp/<i>" with EP > 1 or
// ETP != TP, the "dp/<i>" group otherwise (then every DP x CP rank holds every expert).
std::string ep_group_name(const ParallelConfig& parallel, int rank);
std::string expert_gradient_group_name(const ParallelConfig& parallel, int rank);
// The expert layers' tensor-parallel group: the "tp/<i>" group when it holds the same ranks
// (ETP = TP), "etp/<i>" otherwise.
std::string expert_tp_group_name(const ParallelConfig& parallel, int rank);
// The router's sequence-partition group (Megatron-Core's tp_cp_group: the ranks that route
// the other parts of the same sequences): "tp/<i>" without CP, "cp/<i>" without TP,
// "tpcp/<i>" with both.
std::string tp_cp_group_name(const ParallelConfig& parallel, int rank);
// The stage's TP x DP x CP ranks (Megatron-Core's tp_dp_cp group): FP8 delayed scaling's amax
// reduction group, and the ranks that share one router's expert-bias update (finalize_model_grads
// all-reduces the token counts over it): the "dp/<i>" group (DP x CP) when TP is 1, the
// "tp/<i>" group when DP x CP is 1, "tpdp/<i>" otherwise.
std::string tp_dp_cp_group_name(const ParallelConfig& parallel, int rank);
// The embedding group of a pipeline (Megatron's embd_group): the first and the last stage's ranks
// of `rank`'s TP, CP and DP index, "emb/<i>". Where one parameter lives on both ends (a tied
// output layer, or multi-token prediction's copy of the embedding) finalize_model_grads
// all-reduces its gradient over it. Only ranks of the first or last stage belong to one.
std::string embedding_group_name(const ParallelConfig& parallel, int rank);

// The expert optimizer's gradient-norm group without the distributed optimizer (Megatron-Core's
// expt_tp_pp_group, its grad_stats_parallel_group: optimizer/__init__.py): ETP x EP x PP
// ("etpp/<i>", a communicator of its own in Megatron even where it holds the ranks of another
// group).
std::string expert_model_parallel_group_name(const ParallelConfig& parallel, int rank);
// Whether the experts' gradients have buffers, and an optimizer, of their own (Megatron-Core's
// is_expert_parallel parameters): EP > 1, or expert TP groups other than TP's. Otherwise every
// DP x CP rank holds every expert and they are dense parameters.
bool expert_parameters_apart(const ParallelConfig& parallel);

// The dense optimizer's gradient-norm group (its grad_stats_parallel_group, optimizer.py):
// without the distributed optimizer Megatron-Core's model-parallel group, TP x PP ("mp/<i>",
// parallel_state's get_ranks('tp-pp'); no CP: the DP x CP all-reduce left every CP rank the
// same gradients); with it the distributed-optimizer instance, the whole job with Megatron's
// default of one instance ("dopt/0", get_intra_distributed_optimizer_instance_group), also the
// expert optimizer's group then. Each a communicator of its own in Megatron.
std::string model_parallel_group_name(const ParallelConfig& parallel, int rank);
std::string distributed_optimizer_group_name(const ParallelConfig& parallel, int rank);
// The size of that group for this layout: TP x PP without ZeRO, the world with it.
int gradient_norm_group_size(const ParallelConfig& parallel);
// Its name for `rank`: model_parallel_group_name or distributed_optimizer_group_name.
std::string gradient_norm_group_name(const ParallelConfig& parallel, int rank);

// The TP, DP and PP groups `rank` belongs to (ranks ascending), its CP group when CP > 1 (and
// TP x CP when TP > 1 too), its EP and expert-DP groups when EP > 1 or ETP != TP, its expert
// TP group when ETP > 1 differs from TP, its ETP x EP x PP group when the experts are apart
// (expert_parameters_apart) and it holds more than one rank, and its gradient-norm group
// (gradient_norm_group_name) when that holds more than one rank.
std::vector<ProcessGroup> process_groups_of(const ParallelConfig& parallel, int rank);
// Every group of the job, each once.
std::vector<ProcessGroup> all_process_groups(const ParallelConfig& parallel);

}  // namespace perfsim::generators::llm

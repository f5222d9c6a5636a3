#include "mpi_sim/cli/workload_options.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "generators/llm/llm_model_config.hpp"
#include "mpi_sim/cli/pipeline_split_options.hpp"
#include "mpi_sim/cli/shipped_config_option.hpp"
#include "mpi_sim/cli/topology_size_options.hpp"
#include "perfsim/error.hpp"
#include "scenario/framework_switches.hpp"
#include "validation/framework_presets.hpp"

namespace perfsim::cli {

namespace {

// The model's shape field by field, as RUNS.csv's shape columns: over --model's values, or
// without --model the whole model (generators/llm/llm_model_overrides.hpp).
void add_model_shape_options(CLI::App& sub, generators::llm::ModelShapeOverrides& shape) {
  const std::pair<const char*, int*> sizes[] = {
      {"--layers", &shape.layers},     {"--hidden", &shape.hidden},
      {"--heads", &shape.heads},       {"--kv-heads", &shape.kv_heads},
      {"--head-dim", &shape.head_dim}, {"--ffn-hidden", &shape.ffn_hidden},
      {"--vocab", &shape.vocab},       {"--seq-len", &shape.seq_len}};
  for (const auto& [name, field] : sizes)
    sub.add_option(name, *field,
                   "LLM: model shape (default: --model's value; without --model, --layers, "
                   "--hidden, --heads, --vocab and --seq-len give the whole model, KV heads = "
                   "heads and FFN = 4 x hidden unless given)")
        ->check(CLI::PositiveNumber);
  sub.add_option("--attention", shape.attention,
                 "LLM: attention kernel flash or unfused (default: the model file's; without "
                 "--model flash)")
      ->check(CLI::IsMember({"flash", "unfused"}));
  sub.add_option("--position-embedding", shape.position_embedding,
                 "LLM: learned or rope (default: the model file's; without --model learned)")
      ->check(CLI::IsMember({"learned", "rope"}));
  sub.add_flag_function(
      "--dropout,!--no-dropout", [&shape](std::int64_t count) { shape.dropout = count > 0; },
      "LLM: attention and hidden dropout on / off (default: the model file's; without --model "
      "off)");
  sub.add_flag_function(
      "--gated-ffn,!--no-gated-ffn", [&shape](std::int64_t count) { shape.gated_ffn = count > 0; },
      "LLM: gated (SwiGLU) FFN on / off (default: the model file's; without --model off)");
  sub.add_flag_function(
      "--tied-embeddings,!--no-tied-embeddings",
      [&shape](std::int64_t count) { shape.tied_embeddings = count > 0; },
      "LLM: one matrix for the input embedding and the output layer (GPT-2/3, Megatron's GPT "
      "default) or an output layer of its own (Llama, Mistral, ...) (default: the model file's; "
      "without --model tied)");
}

// --framework: every switch of the framework's (validation/framework_presets.hpp) that the
// command line does not give, once the subcommand is parsed; the model file says whether the
// MoE and MLA conditions hold (one that does not load is reported later, by the scenario).
void add_framework_option(CLI::App& sub, scenario::LlmSimulateOptions& options) {
  std::vector<std::string> names;
  for (std::string_view name : validation::framework_names())
    names.emplace_back(name);
  sub.add_option("--framework", options.framework,
                 "LLM: the training framework whose defaults fill every switch this command line "
                 "does not give (`perfsim validate runs --framework`, README \"Frameworks\"): "
                 "megatron-core, megatron-lm-2021, megatron-deepspeed, nemo or megatron-bridge; "
                 "a --no-... form turns one of its switches off (default: none, simulate's own "
                 "defaults, which are Megatron-Core's)")
      ->check(CLI::IsMember(names));
  sub.parse_complete_callback([&sub, &options] {
    if (options.framework.empty())
      return;
    // Each switch by the option that states it (a --no-... form counts as the option).
    using Stated = scenario::StatedSwitches;
    static constexpr std::pair<const char*, bool Stated::*> kOptions[] = {
        {"--attention", &Stated::attention},
        {"--dropout", &Stated::dropout},
        {"--etp", &Stated::etp},
        {"--fp8-param-gather", &Stated::fp8_param_gather},
        {"--grad-reduce-dtype", &Stated::grad_reduce_dtype},
        {"--overlap-grad-reduce", &Stated::overlap_grad_reduce},
        {"--overlap-param-gather", &Stated::overlap_param_gather},
        {"--tp-comm-overlap", &Stated::tp_comm_overlap},
        {"--overlap-p2p-comm", &Stated::overlap_p2p_comm},
        {"--p2p-scatter-gather", &Stated::p2p_scatter_gather},
        {"--moe-router-fusion", &Stated::moe_router_fusion},
        {"--moe-permute-fusion", &Stated::moe_permute_fusion},
        {"--cross-entropy-loss-fusion", &Stated::cross_entropy_fusion},
        {"--cross-entropy-fusion-impl", &Stated::cross_entropy_fusion},
        {"--get-batch-sync", &Stated::get_batch_sync},
        {"--timer-syncs", &Stated::timer_syncs}};
    Stated stated;
    for (const auto& [name, member] : kOptions)
      stated.*member = stated.*member || sub.get_option(name)->count() > 0;
    scenario::FrameworkModelTraits traits;
    if (!options.model_path.empty()) {
      try {
        const generators::llm::TransformerConfig model =
            generators::llm::load_transformer_config(options.model_path);
        traits = {.moe = model.is_moe(), .mla = model.is_mla()};
      } catch (const InputError&) {
        // the scenario names the file and the problem when it loads it
      }
    }
    options.framework_switches = scenario::apply_framework_switches(
        validation::framework_preset(options.framework), traits, stated, options);
  });
}

}  // namespace

void add_llm_simulate_options(CLI::App& sub, scenario::LlmSimulateOptions& options) {
  sub.add_option("--model", options.model_path,
                 "LLM workload: model file or name in configs/models (llama3-70b); generates one "
                 "trace per rank (TP x PP x DP ranks); default: none (the synthetic workload)")
      ->transform(shipped_config("models"));
  add_model_shape_options(sub, options.shape);
  sub.add_option("--tp", options.tp, "LLM: tensor-parallel degree")->check(CLI::PositiveNumber);
  sub.add_option("--pp", options.pp, "LLM: pipeline stages (1F1B)")->check(CLI::PositiveNumber);
  sub.add_option("--virtual-stages", options.virtual_stages,
                 "LLM: model chunks per pipeline rank (interleaved 1F1B when > 1)")
      ->check(CLI::PositiveNumber);
  sub.add_option("--dp", options.dp, "LLM: data-parallel degree")->check(CLI::PositiveNumber);
  sub.add_option("--cp", options.cp,
                 "LLM: context-parallel degree (Megatron CP: ring attention over CP ranks, "
                 "placed between TP and DP)")
      ->check(CLI::PositiveNumber);
  sub.add_option("--ep", options.ep,
                 "LLM (MoE models): expert-parallel degree; the routed experts split over EP "
                 "ranks of the DP x CP group (Megatron's expert mesh), tokens exchanged by "
                 "all-to-all")
      ->check(CLI::PositiveNumber);
  sub.add_option("--etp", options.etp,
                 "LLM (MoE models): expert tensor-parallel degree (Megatron-Core "
                 "--expert-tensor-parallel-size; default: TP); the expert layers' grid is "
                 "ETP x EP x expert-DP")
      ->check(CLI::PositiveNumber);
  sub.add_option("--order", options.order,
                 "LLM: rank order of the parallel dimensions, fastest-varying first, as "
                 "Megatron-Core's `order` (default tp-cp-ep-dp-pp; tp-cp-ep-pp-dp is Megatron's "
                 "--use-tp-pp-dp-mapping: pipeline stages inside a node, DP across nodes)")
      ->capture_default_str();
  sub.add_option("--moe-imbalance", options.moe_imbalance,
                 "LLM (MoE models): routing imbalance, tokens of the busiest expert over the mean "
                 "(default 1.0: balanced); scales the busiest rank's expert GEMMs and all-to-all")
      ->check(CLI::Range(1.0, 1e6));
  sub.add_option("--pp-layers", options.pp_layers,
                 "LLM: transformer layers of each pipeline stage when uneven, e.g. 7,9,9,7 "
                 "(one per stage, summing to the model's layers; interleaved: one per stage "
                 "divided evenly over its chunks, or one per virtual stage, chunk-major)")
      ->delimiter(',')
      ->check(CLI::NonNegativeNumber);
  add_pipeline_layout_option(sub, options.pp_layout, "LLM: ");
  add_pipeline_split_options(sub,
                             {options.first_stage_layers, options.last_stage_layers,
                              options.account_for_embedding, options.account_for_loss},
                             "LLM: ");
  sub.add_option("--micro-batch", options.micro_batch, "LLM: micro-batch (default: model file)")
      ->check(CLI::PositiveNumber);
  sub.add_option("--global-batch", options.global_batch,
                 "LLM: global batch in sequences (default: model file)")
      ->check(CLI::PositiveNumber);
  sub.add_flag("--sequence-parallel", options.sequence_parallel,
               "LLM: sequence parallelism (TP all-reduces become reduce-scatter + all-gather)");
  sub.add_option("--recompute", options.recompute, "LLM: activation recomputation")
      ->check(CLI::IsMember({"none", "selective", "full"}));
  sub.add_option("--recompute-modules", options.recompute_modules,
                 "LLM: with --recompute selective, Megatron-Core's recompute modules, comma-"
                 "separated: core_attn (default), layernorm, moe_act, mla_up_proj, mlp, "
                 "shared_experts, moe");
  sub.add_option("--zero", options.zero_stage, "LLM: ZeRO stage 0..3")->check(CLI::Range(0, 3));
  sub.add_option("--bucket-mb", options.bucket_mb,
                 "LLM: gradient bucket size with --overlap-grad-reduce, MB (1e6 bytes); default "
                 "Megatron's max(40e6, 1e6 x DP) parameters")
      ->check(CLI::NonNegativeNumber);
  sub.add_option_function<std::string>(
         "--link-sharing",
         [&options](const std::string& value) { options.link_sharing = value == "on"; },
         "LLM, DLRM, and traces with --comm model: on (default): collectives in flight "
         "together on a rank's NIC or NVLink, or on a NIC its GPU shares with others, share "
         "its bandwidth (processor sharing, mpi_sim/engine/link_occupancy.hpp); off: each "
         "takes its time alone")
      ->check(CLI::IsMember({"on", "off"}))
      ->default_str("on");
  sub.add_flag("--overlap-grad-reduce,!--no-overlap-grad-reduce", options.overlap_grad_reduce,
               "LLM: reduce gradients in buckets under the last micro-batch's backward "
               "(Megatron --overlap-grad-reduce; default: after the backward)");
  sub.add_option(
         "--grad-reduce-dtype", options.grad_reduce_dtype,
         "LLM: dtype of the main gradients (accumulated, reduced over DP, counted "
         "by the memory closed form): fp32 (Megatron --accumulate-allreduce-grads-in-"
         "fp32), bf16, fp16 or auto (default; Megatron's: fp16 for fp16 training, else fp32)")
      ->check(CLI::IsMember({"auto", "fp32", "bf16", "fp16"}));
  sub.add_flag("--distributed-optimizer", options.distributed_optimizer,
               "LLM: Megatron's distributed optimizer: gradients reduce-scattered, optimizer "
               "state sharded over DP, parameters all-gathered (ZeRO 1)");
  sub.add_flag("--overlap-param-gather,!--no-overlap-param-gather", options.overlap_param_gather,
               "LLM: with the distributed optimizer (ZeRO 1/2) and --overlap-grad-reduce, as "
               "Megatron requires, all-gather the parameters under the next forward (Megatron "
               "--overlap-param-gather)");
  sub.add_option("--make-vocab-size-divisible-by", options.vocab_divisible_by,
                 "LLM: pad the vocabulary to a multiple of this x TP, as Megatron does (default "
                 "128)")
      ->check(CLI::PositiveNumber);
  sub.add_flag("--tp-overlap", options.tp_overlap,
               "LLM: overlap backward TP collectives with the GEMMs beside them, as Megatron "
               "issues them; each overlapped GEMM runs on the SMs the NCCL kernel leaves "
               "(--comm-sms). Default: each is waited for, which matches Korthikanti et al. "
               "2022 on A100");
  sub.add_flag("--tp-comm-overlap,!--no-tp-comm-overlap", options.tp_comm_overlap,
               "LLM: Transformer Engine userbuffer TP overlap (Megatron --tp-comm-overlap; needs "
               "--sequence-parallel): all-gathers ring-exchanged under the GEMM chunks, "
               "reduce-scatters pipelined with them, backward bulk-overlapped, TE's default ub "
               "config");
  sub.add_flag("--moe-a2a-overlap", options.moe_a2a_overlap,
               "LLM, MoE: Megatron-Core --overlap-moe-expert-parallel-comm (Megatron-Bridge "
               "moe_a2a_overlap): the 1F1B steady state runs one micro-batch's forward and "
               "another's backward as one combined step, each EP all-to-all beside the other's "
               "compute (needs EP > 1 and, with PP > 1, --virtual-stages > 1; not with full "
               "recomputation)");
  sub.add_flag("--delay-wgrad-compute", options.delay_wgrad_compute,
               "LLM, MoE: Megatron-Core --delay-wgrad-compute (needs --moe-a2a-overlap): the "
               "weight-gradient GEMMs of the experts, shared experts and attention run after "
               "the layer's next all-to-all is posted, beside it");
  sub.add_flag("--moe-shared-expert-overlap", options.moe_shared_expert_overlap,
               "LLM, MoE: Megatron-Core --moe-shared-expert-overlap: the shared experts run on "
               "their own stream, fc1 beside the dispatch all-to-all, fc2 beside the combine's "
               "(and the mirror in the backward); needs shared experts and EP > 1, not with "
               "--moe-a2a-overlap");
  sub.add_flag("--moe-router-fusion,!--no-moe-router-fusion", options.moe_router_fusion,
               "LLM, MoE: Megatron-Core --moe-router-fusion: Transformer Engine's fused top-k, "
               "aux-loss scores and aux loss (one kernel each way) instead of PyTorch ops");
  sub.add_flag("--moe-permute-fusion,!--no-moe-permute-fusion", options.moe_permute_fusion,
               "LLM, MoE: Megatron-Core --moe-permute-fusion: Transformer Engine's Triton "
               "permute, sort and unpermute; without it masked_select / index_select / cat / "
               "scatter_add_, and two host synchronizations per MoE forward");
  sub.add_option("--moe-expert-capacity-factor", options.moe_expert_capacity_factor,
                 "LLM, MoE: Megatron-Core --moe-expert-capacity-factor: each expert takes at most "
                 "this many times its mean load of tokens, the router drops the rest (top-k over "
                 "the tokens per expert); replaces the model file's capacity_factor; a negative "
                 "value (Megatron-Bridge's -1.0) runs dropless (default: the model file's)");
  sub.add_flag("--moe-pad-expert-input-to-capacity", options.moe_pad_expert_input_to_capacity,
               "LLM, MoE: Megatron-Core --moe-pad-expert-input-to-capacity (needs a capacity "
               "factor): every expert computes exactly its capacity of rows, so the alltoall "
               "dispatcher copies no token counts to the host and never waits for them");
  sub.add_flag("--moe-grouped-gemm,!--no-moe-grouped-gemm", options.moe_grouped_gemm,
               "LLM, MoE: Megatron-Core --moe-grouped-gemm: the local experts as Transformer "
               "Engine's grouped linear layers (TEGroupedMLP; default on, as every NeMo and "
               "Megatron-Bridge MoE recipe sets it); off (Megatron-LM's own default): "
               "SequentialMLP, one Linear per expert and projection, run one expert after "
               "another, outputs concatenated, FP8 rows padded to multiples of 16");
  sub.add_flag("--moe-router-force-load-balancing", options.moe_router_force_load_balancing,
               "LLM, MoE: Megatron-Core --moe-router-force-load-balancing (benchmarks): random "
               "router logits (a clone and a normal_ per MoE forward)");
  sub.add_option("--moe-router-dtype", options.moe_router_dtype,
                 "LLM, MoE: Megatron-Core --moe-router-dtype fp32: fp32 router logits and routing "
                 "ops, the router GEMM's backward in TF32 with its operands cast to fp32 "
                 "(default: the activation dtype, Megatron-Core's None)")
      ->check(CLI::IsMember({"fp32"}));
  sub.add_option("--moe-token-dispatcher", options.moe_token_dispatcher,
                 "LLM, MoE: Megatron-Core --moe-token-dispatcher-type: alltoall (default: NCCL "
                 "all-to-allv over EP) or flex (DeepEP / HybridEP fused dispatch and combine: "
                 "each token sent once per distinct destination node and GPU; needs EP > 1 and "
                 "expert TP 1)")
      ->check(CLI::IsMember({"alltoall", "flex"}));
  sub.add_option("--moe-flex-backend", options.moe_flex_backend,
                 "LLM, MoE, flex: Megatron-Core moe_flex_dispatcher_backend deepep (default; the "
                 "host waits for the received-token count each MoE forward) or hybridep (no "
                 "host synchronization)")
      ->check(CLI::IsMember({"deepep", "hybridep"}));
  sub.add_option("--moe-deepep-num-sms", options.moe_deepep_num_sms,
                 "LLM, MoE, flex deepep: SMs DeepEP's kernels hold beside overlapped compute "
                 "(Megatron-Core moe_deepep_num_sms, default 20)")
      ->check(CLI::PositiveNumber);
  sub.add_option("--moe-hybridep-num-sms", options.moe_hybridep_num_sms,
                 "LLM, MoE, flex hybridep: SMs HybridEP's kernels hold beside overlapped compute "
                 "(Megatron-Core moe_hybridep_num_sms, default 16)")
      ->check(CLI::PositiveNumber);
  sub.add_flag("--overlap-p2p-comm,!--no-overlap-p2p-comm", options.overlap_p2p_comm,
               "LLM: interleaved schedule: post each pipeline receive one compute step ahead "
               "(Megatron overlap_p2p_comm, its default with --virtual-stages > 1; off: each "
               "receive just before its step; no effect without interleaving)");
  sub.add_flag("--p2p-scatter-gather,!--no-p2p-scatter-gather", options.p2p_scatter_gather,
               "LLM: with TP > 1 and no sequence parallelism each TP rank sends 1/TP of the "
               "stage-boundary tensor and the receiving stage all-gathers it over TP "
               "(Megatron-LM 2021-2022's scatter/gather, its default there; Megatron-Core "
               "dropped it: default off)");
  sub.add_option("--comm-sms", options.comm_sms,
                 "LLM: SMs a NCCL collective holds beside an overlapped GEMM (NCCL channels; "
                 "24 on 8-GPU NVSwitch nodes; 0 = overlap free of contention)")
      ->check(CLI::NonNegativeNumber);
  sub.add_flag("--comm-hbm-sharing,!--no-comm-hbm-sharing", options.comm_hbm_sharing,
               "LLM: a collective overlapped with compute also takes the HBM bandwidth it moves "
               "(about 3 bytes per bus byte; default on; off: SM contention only)");
  sub.add_option("--dtype", options.dtype,
                 "LLM: training precision bf16, fp16 or fp8 (Transformer Engine recipe: "
                 "linear-layer GEMMs in FP8, the rest bf16); default: the model file's")
      ->check(CLI::IsMember({"bf16", "fp16", "fp8"}));
  sub.add_option("--fp8-recipe", options.fp8_recipe,
                 "LLM, with fp8: Transformer Engine's scaling recipe, delayed (DelayedScaling: "
                 "scales from an amax history, one fused cast per tensor) or current "
                 "(Float8CurrentScaling, Megatron's tensorwise, Megatron-Bridge's FP8-CS: each "
                 "cast first finds the tensor's amax, an amax and a scale kernel, the amax "
                 "all-reduced over TP with sequence parallelism, per expert in MoE layers) or "
                 "blockwise (Float8BlockScaling, Megatron-Bridge's FP8-SC: a scale per 1x128 "
                 "block of activations and gradients and 128x128 block of weights, found in "
                 "the cast; every FP8 GEMM, forward too, pays the block-scaled main loop)")
      ->check(CLI::IsMember({"delayed", "current", "tensorwise", "blockwise"}))
      ->capture_default_str();
  sub.add_flag("--fp8-all-gather,!--no-fp8-all-gather", options.fp8_all_gather,
               "LLM: with fp8 and sequence parallelism, the linear layers' inputs are cast to "
               "FP8 before their TP all-gather, as Transformer Engine does (default on; "
               "--no-fp8-all-gather: gathered in bf16 and cast after, a what-if; blockwise "
               "scaling gathers row- and column-wise FP8 data, as many bytes as bf16)");
  sub.add_flag("--fp8-param-gather,!--no-fp8-param-gather", options.fp8_param_gather,
               "LLM, fp8 with the distributed optimizer: FP8 primary weights (Megatron-LM "
               "--fp8-param-gather, NeMo fp8_params): the linear weights are kept in FP8 (1 "
               "byte each, no bf16 copy), all-gathered in FP8 after the step, which quantizes "
               "the fp32 main weights into them (amaxes MAX-reduced over DP); only their "
               "transposes are made per iteration (default off)");
  sub.add_flag("--bias-swiglu-fusion,!--no-bias-swiglu-fusion", options.bias_swiglu_fusion,
               "LLM, gated FFNs: Megatron-Core's fused SwiGLU, one kernel forward and one "
               "backward (bias_activation_fusion, Megatron-LM's default; off: PyTorch's "
               "sigmoid and two multiplies each way)");
  sub.add_flag("--rope-fusion,!--no-rope-fusion", options.rope_fusion,
               "LLM, rotary models: Transformer Engine's fused rotary-embedding kernel over q "
               "and k (apply_rope_fusion, Megatron-LM's default; off: PyTorch's rotate_half, "
               "multiplies and add)");
  sub.add_flag("--cross-entropy-loss-fusion,!--no-cross-entropy-loss-fusion",
               options.cross_entropy_fusion,
               "LLM: Megatron-Core's fused vocabulary-parallel cross entropy (NeMo 2.0 and "
               "Megatron-Bridge turn it on); default off, as Megatron-LM's "
               "--cross-entropy-loss-fusion");
  sub.add_option("--cross-entropy-fusion-impl", options.cross_entropy_fusion_impl,
                 "LLM, with --cross-entropy-loss-fusion: native (Megatron-Core's jit fusion: three "
                 "passes over the fp32 logits, two TP all-reduces) or te (Transformer Engine's "
                 "Triton kernels: two passes over the bf16 logits, the gradient kept in their "
                 "place; one TP all-gather); default native, as Megatron-LM")
      ->check(CLI::IsMember({"native", "te"}))
      ->capture_default_str();
  sub.add_flag("--get-batch-sync,!--no-get-batch-sync", options.get_batch_sync,
               "LLM: get_batch copies the batch sizes to the host each micro-batch, so the host "
               "waits for the GPU before loading (Megatron-DeepSpeed, Megatron-LM before 2024: "
               "broadcast_data); default: no wait (Megatron-Core's get_batch_on_this_tp_rank, "
               "NeMo), the batch's CPU time runs beside the GPU");
  sub.add_flag("--timer-syncs,!--no-timer-syncs", options.timer_syncs,
               "LLM: torch.cuda.synchronize() at the start and stop of every micro-batch's "
               "forward and backward step (Megatron-LM 2020-2022's forward-compute and "
               "backward-compute timers); default: none (Megatron-Core's timers at the default "
               "--timing-log-level 0)");
  add_framework_option(sub, options);
  sub.add_option("--topology", options.topology_path,
                 "topology file or name in configs/topologies (hgx-h100-8node) for the collective "
                 "model; required by --model, --dlrm and --comm model (no default)")
      ->transform(shipped_config("topologies"));
  add_topology_size_options(sub, options.topology_size);
  sub.add_option("--device", options.device_path,
                 "GPU for the kernel models: a device file or name in configs/devices "
                 "(H100-SXM); for trace inputs default: the GPU the Kineto trace recorded");
  sub.add_option("--assets", options.assets_path,
                 "model assets with fitted collective curves (`perfsim fit`); default: "
                 "configs/assets/collective_curves.h5, for --model only where it holds every "
                 "curve the topology names (else nominal curves from link bandwidths)");
  sub.add_option("--calibration", options.calibration,
                 "LLM: end-to-end calibration (host us per op, per collective, per micro-batch; "
                 "GEMM time scale) as `perfsim validate runs --fit-calibration` writes it, or "
                 "none; default: the shipped one of the device's platform (compiled in): "
                 "configs/assets/llm_calibration-h100.json for H100-SXM and H200, "
                 "configs/assets/llm_calibration.json for every other device");
}

void add_dlrm_simulate_options(CLI::App& sub, scenario::DlrmSimulateOptions& options) {
  sub.add_option("--dlrm", options.config_path,
                 "DLRM workload: config file or name in configs/dlrm; generates one trace per "
                 "rank, tables sharded by --sharder; needs --topology and --device; default: "
                 "none")
      ->transform(shipped_config("dlrm"));
  sub.add_option("--sharder", options.sharder, "DLRM: embedding-table sharder (seed 001 Table III)")
      ->check(CLI::IsMember({"naive", "random", "size_greedy", "lookup_greedy",
                             "norm_lookup_greedy", "size_lookup_greedy"}));
  sub.add_option("--dlrm-batch", options.batch_per_gpu, "DLRM: batch per GPU (default: config)")
      ->check(CLI::PositiveNumber);
  sub.add_option("--dlrm-tables", options.tables,
                 "DLRM: number of tables (sampled configs resample, listed ones cut or repeat)")
      ->check(CLI::PositiveNumber);
  sub.add_option("--dlrm-ranks", options.ranks, "DLRM: GPUs (default: config)")
      ->check(CLI::PositiveNumber);
  sub.add_option("--dlrm-seed", options.seed,
                 "DLRM: seed of the table sampler and the random sharder (default: config)");
  sub.add_option("--dlrm-pooling", options.pooling,
                 "DLRM, sampled tables: pooling factors like seed 001 Fig. 3's 2021 or 2022 data "
                 "(default: the config file's)")
      ->check(CLI::IsMember({"dlrm-2021", "dlrm-2022"}));
  sub.add_flag("--dlrm-heavy", options.heavy_only,
               "DLRM, sampled tables: every table heavy (L >= 20), seed 001 Sec. V-B1");
  sub.add_option("--memory-cap-GB", options.memory_cap_GB,
                 "DLRM: embedding weights allowed per GPU, GB (default: config, else 80% of the "
                 "device's memory; 0 = no cap)")
      ->check(CLI::NonNegativeNumber);
}

}  // namespace perfsim::cli

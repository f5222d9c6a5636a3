#pragma once
// Every way of splitting an LLM training job over a given number of GPUs that the generator
// accepts: tensor parallel (divides heads, FFN, vocabulary and the GPUs of a node, so a TP
// group never crosses a node), context parallel (up to max_context_parallel, flash attention,
// s divisible by 2 CP), pipeline
// stages (divide the layers) with interleaving (virtual stages), data parallel (the rest),
// micro-batch (divides the global batch per data-parallel rank), ZeRO stage (only with DP > 1:
// without it every stage is the same layout), sequence parallelism (only with TP > 1) and
// recomputation, and for MoE models expert parallelism (divisors of DP x CP that divide the
// experts; SP with TP), and the rank orders asked for. Every layout returned passes
// generators::llm::validate.
#include <vector>

#include "generators/llm/llm_model_config.hpp"
#include "generators/llm/llm_parallel_config.hpp"
#include "memory/llm_memory.hpp"

namespace perfsim::planner {

struct EnumerationLimits {
  int gpus = 0;
  int gpus_per_node = 8;    // TP divides it: a TP group never crosses a node
  int global_batch = 0;     // 0: the model file's
  int max_micro_batch = 8;  // larger micro-batches rarely fit and lengthen the bubble
  int max_virtual_stages = 4;
  int max_context_parallel = 1;  // CP degrees tried: divisors up to this (1: no CP)
  // Rank orders tried for each layout (Megatron-Core's `order`): those Megatron refuses for a
  // layout are skipped, and so are those placing every group as an earlier one does.
  std::vector<generators::llm::RankOrder> orders = {generators::llm::default_rank_order()};
  // Copied into every layout.
  bool overlap_tp_backward = false;
  // Transformer Engine userbuffer TP overlap on every layout that can use it (SP, TP > 1).
  bool tp_comm_overlap = false;
  // Megatron-Core's EP all-to-all overlap on every layout Megatron allows it on (EP > 1, PP 1
  // or interleaved, no full recomputation); the others run without it.
  bool moe_a2a_overlap = false;
  // Megatron-Core's --delay-wgrad-compute on every layout that runs moe_a2a_overlap (Megatron's
  // precondition); the others run without it.
  bool delay_wgrad_compute = false;
  // Megatron-Core's --moe-shared-expert-overlap on every layout Megatron allows it on (shared
  // experts, EP > 1, the alltoall dispatcher, no moe_a2a_overlap on that layout); the others run
  // without it.
  bool moe_shared_expert_overlap = false;
  // Megatron-Core's token dispatcher: flex (with this backend and SM counts) on every layout the
  // generator models it on (EP > 1, expert TP 1, the same number of EP ranks on every node the
  // EP group spans, with gpus_per_node consecutive ranks per node); the others run alltoall.
  generators::llm::MoeTokenDispatcher moe_token_dispatcher =
      generators::llm::MoeTokenDispatcher::kAllToAll;
  generators::llm::MoeFlexBackend moe_flex_backend = generators::llm::MoeFlexBackend::kDeepEp;
  int moe_deepep_num_sms = 20;    // Megatron-Core's default
  int moe_hybridep_num_sms = 16;  // Megatron-Core's default
  bool overlap_grad_reduce = false;
  bool overlap_param_gather = false;
  // FP8 primary weights (--fp8-param-gather) on every layout that can hold them: an FP8 model
  // with delayed or current scaling and the distributed optimizer (ZeRO 1/2).
  bool fp8_param_gather = false;
  // Megatron-Core's embedding / loss counted as a layer of the pipeline split
  // (llm_pipeline_split.hpp): layouts whose PP x virtual stages do not divide L + 2 are skipped.
  bool account_for_embedding = false;
  bool account_for_loss = false;
  // Megatron-Core's pipeline layout string (llm_pipeline_layout.hpp) on every layout: only
  // PP x virtual stages equal to its virtual stages are tried. Empty: not set.
  std::string pp_layout = {};
  // Megatron-Core's --recompute-modules of every layout with selective recomputation (the
  // default: core_attn; llm_recompute_modules.hpp).
  generators::llm::RecomputeModules recompute_modules = {};
};

std::vector<generators::llm::ParallelConfig> enumerate_layouts(
    const generators::llm::TransformerConfig& model, const EnumerationLimits& limits);

struct FittingLayout {
  generators::llm::ParallelConfig parallel;
  memory::LlmMemoryEstimate memory;
};

struct MemoryFilter {
  std::vector<FittingLayout> fitting;
  std::size_t out_of_memory = 0;
  std::vector<FittingLayout> not_fitting;  // the out-of-memory layouts, with their estimates
};

// Keeps the layouts whose worst pipeline stage fits on `device` (memory::estimate_llm_memory).
MemoryFilter keep_fitting(const generators::llm::TransformerConfig& model,
                          const std::vector<generators::llm::ParallelConfig>& layouts,
                          const memory::DeviceMemory& device);

}  // namespace perfsim::planner

#pragma once
// One rank's trace of one training iteration of a decoder-only transformer under TP, PP, DP,
// ZeRO, sequence parallelism and activation recomputation. Ops carry shapes and dtypes (no
// measured durations): a KernelDurationSource prices the compute ops, a CommDurationSource the
// communication ops.
//
// Data parallelism (ZeRO 0-2): gradients are reduced in buckets of ParallelConfig::bucket_bytes
// during the backward pass of the last micro-batch (gradients of earlier micro-batches are
// accumulated locally), each bucket posted as soon as its layers' gradients exist, so it
// overlaps the rest of the backward pass (PyTorch DDP / Megatron). ZeRO 0 all-reduces;
// ZeRO 1 and 2 reduce-scatter and all-gather the updated bf16 parameters after the optimizer
// step on the 1/DP shard. ZeRO 3 also all-gathers each layer's parameters before its forward and
// backward (one layer prefetched ahead) and reduce-scatters each layer's gradients in every
// micro-batch. Embedding and LM-head parameters are not sharded by ZeRO 3 (their gradients are
// reduced like a bucket).
#include <span>
#include <string>
#include <vector>

#include "generators/llm/llm_model_config.hpp"
#include "generators/llm/llm_parallel_config.hpp"
#include "generators/llm/llm_rank_roles.hpp"
#include "generators/llm/trace_sink.hpp"
#include "perfsim/trace.hpp"

namespace perfsim::generators::llm {

// Throws InputError when the model cannot be split as asked or `rank` is outside the world.
// The stage template of `rank`'s stage, instantiated for it.
Trace generate_llm_rank(const TransformerConfig& model, const ParallelConfig& parallel, int rank);

// One pipeline stage's trace with placeholder roles (llm_rank_roles.hpp) in place of group
// names and neighbours: the generator sees the stage and nothing else of a rank, so this is
// every rank of the stage's trace up to those roles.
struct StageTemplate {
  int stage = 0;
  Trace trace;
};
StageTemplate generate_llm_stage_template(const TransformerConfig& model,
                                          const ParallelConfig& parallel, int stage);
// The same template's ops handed to `sink` as they are made (one step of the pipeline schedule
// at a time, trace_sink.hpp) instead of collected: the ops and header the Trace above holds.
void generate_llm_stage_template(const TransformerConfig& model, const ParallelConfig& parallel,
                                 int stage, TraceSink& sink);
// `rank`'s trace: the template (of rank's stage) with its roles, process groups and rank
// (pass the template by std::move when it is not needed again: it is the trace).
Trace instantiate_llm_rank(StageTemplate stage_template, const ParallelConfig& parallel, int rank);

// instantiate_llm_rank in parts, for a template streamed a step at a time: the rank's header
// (the trace without ops) from the template's, and its roles substituted into each step's ops.
// The header and the ops so substituted are instantiate_llm_rank's trace.
class StreamedRankInstance {
 public:
  StreamedRankInstance(const Trace& template_header, int stage, const ParallelConfig& parallel,
                       int rank);
  const Trace& header() const { return header_; }
  void substitute(std::span<Op> ops) const;

 private:
  RankRoles roles_;
  std::string template_source_;
  Trace header_;
};

// The point-to-point pairs of the pipeline as the engine names them ("p2p:a->b", both
// directions), for a collective model that must know every group's ranks.
std::vector<ProcessGroup> pipeline_peer_groups(const ParallelConfig& parallel);

// Layers [first, last) of model chunk `chunk` of pipeline stage `stage`: virtual stage
// chunk x PP + stage of the split llm_pipeline_split.hpp describes (empty for a chunk that
// holds only the embedding or the loss).
struct LayerRange {
  int first = 0;
  int last = 0;
};
LayerRange stage_layers(const TransformerConfig& model, const ParallelConfig& parallel, int stage,
                        int chunk = 0);

}  // namespace perfsim::generators::llm

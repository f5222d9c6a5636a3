#pragma once
// Closed-form memory per GPU of a GPT-style transformer trained with Megatron-style tensor,
// pipeline and data parallelism (no trace needed).
//
// Model states (Rajbhandari et al. 2020, ZeRO, Sec. 3.1): with 16-bit weights, per parameter
// 2 bytes of weights, 2 of gradients and 12 of Adam state (fp32 master copy, momentum,
// variance); with 32-bit weights, 4 + 4 + 8 (no master copy). ZeRO stage 1 divides the
// optimizer state by DP, stage 2 also the gradients, stage 3 also the weights.
//
// Activations per transformer layer: Korthikanti et al. 2022 ("Reducing Activation
// Recomputation in Large Transformer Models"), Table 2, in bytes with 16-bit activations and
// 1-byte dropout masks (s sequence, b micro-batch, h hidden, a heads, t tensor parallel):
//   no parallelism              sbh(34 + 5as/h)
//   tensor parallel             sbh(10 + 24/t + 5as/(ht))
//   tensor + sequence parallel  sbh(34/t + 5as/(ht))
//   selective recompute (TP)    sbh(10 + 24/t)
//   selective recompute + SP    34sbh/t
//   full recompute              2sbh
// (t = 1 turns the tensor-parallel rows into the first.) Other activation dtypes scale the
// whole term by dtype_bytes / 2, masks included: an approximation.
// Pipeline (Sec. 4.2.3): under 1F1B stage i holds the activations of min(p - i, micro-batches)
// micro-batches, so the first stage holds p; the interleaved schedule with m virtual stages
// multiplies that by (1 + (p - 1)/(p m)) (the paper derives it for the first stage; it is
// applied to every stage here, which overestimates the later ones slightly).
// Embeddings and output layer (Sec. 4.3): the first stage keeps the input-embedding dropout
// mask, sbh/t per micro-batch in flight (sbh without SP); the last stage keeps
// 4sbh/t (1 + v/h) for the final layer norm, the output projection and the fp32 softmax.
// Parameters: per layer (4h^2 + 2h f + 3h + f)/t split by tensor parallelism plus 6h replicated
// (output and MLP biases, two layer norms): 12h^2 + 13h for f = 4h, t = 1. The first stage holds
// the word embedding vh/t and the position embedding sh; the last stage holds the final layer
// norm (2h) and, when it is not the first stage, its copy of the tied word embedding vh/t.
// Not modelled: temporary buffers (communication buckets, workspace), fragmentation; the
// context constant is added (device_memory.hpp).
#include <cstdint>
#include <string>
#include <vector>

#include "memory/device_memory.hpp"
#include "perfsim/units.hpp"

namespace perfsim::memory {

enum class Recompute : std::uint8_t { kNone, kSelective, kFull };
std::string_view recompute_name(Recompute recompute);

struct LlmMemoryConfig {
  std::int64_t layers = 0;
  std::int64_t hidden = 0;
  std::int64_t heads = 0;
  std::int64_t seq_len = 0;
  std::int64_t micro_batch = 1;
  std::int64_t vocab = 0;
  std::int64_t ffn_hidden = 0;  // 0 means 4 x hidden
  int dtype_bytes = 2;          // weights and activations
  int tensor_parallel = 1;
  int pipeline_parallel = 1;
  int data_parallel = 1;
  int virtual_stages = 1;  // > 1: interleaved 1F1B
  int zero_stage = 0;      // 0..3
  bool sequence_parallel = false;
  Recompute recompute = Recompute::kNone;
  // Micro-batches per iteration per pipeline; 0 means as many as pipeline stages.
  std::int64_t micro_batches = 0;
};

// Throws InputError("<llm config>", field, problem) for non-positive sizes, layers not divisible
// by PP x virtual stages, heads or ffn not divisible by TP, SP without TP > 1, ZeRO outside 0..3.
void validate_llm_config(const LlmMemoryConfig& config);

// Korthikanti et al. 2022 Table 2 for one layer and one micro-batch, in bytes.
double activation_bytes_per_layer(const LlmMemoryConfig& config);
// Parameters of one transformer layer on one tensor-parallel rank.
double parameters_per_layer(const LlmMemoryConfig& config);

struct StageMemory {
  int stage = 0;
  std::int64_t layers = 0;
  double parameter_count = 0;
  double microbatches_in_flight = 0;  // interleaving factor included
  Bytes parameter_bytes = 0;
  Bytes gradient_bytes = 0;
  Bytes optimizer_bytes = 0;
  Bytes activation_bytes = 0;  // transformer layers + embeddings/output layer
  Bytes context_bytes = 0;
  Bytes total_bytes = 0;
};

struct LlmMemoryEstimate {
  std::vector<StageMemory> stages;
  std::size_t worst_stage = 0;  // the stage with the largest total
  double activation_bytes_per_layer = 0;
  MemoryVerdict verdict;  // for the worst stage
};

LlmMemoryEstimate estimate_llm_memory(const LlmMemoryConfig& config, const DeviceMemory& device);

std::string format_llm_memory(const LlmMemoryConfig& config, const LlmMemoryEstimate& estimate,
                              const DeviceMemory& device);

}  // namespace perfsim::memory

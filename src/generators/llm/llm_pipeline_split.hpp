#pragma once
// How the transformer layers split over pipeline stages and their model chunks, with
// Megatron-Core's semantics (get_num_layers_to_build, get_transformer_layer_offset and the
// checks of TransformerConfig.__post_init__):
//   - pp_layout: Megatron-Core's --pipeline-model-parallel-layout (llm_pipeline_layout.hpp),
//     each virtual stage's t count, with E on the first virtual stage and m and L on the last
//     (where the generator and the memory closed form hold them; other placements throw);
//   - pp_layers: the layers of each stage as given (each divided evenly over its chunks), or of
//     each virtual stage (PP x V entries in the order chunk x PP + stage);
//   - first_stage_layers / last_stage_layers (--decoder-first/last-pipeline-num-layers): those
//     stages hold what is given, the other stages an equal share of the rest; every stage's
//     layers divide evenly over its V chunks;
//   - otherwise an equal share of L over PP x V virtual stages, where account_for_embedding
//     (account_for_loss) adds one to L and removes one layer from the first (last) virtual
//     stage: Llama 3.1 405B's 126 layers + 2 = 128 on PP 8 x V 8 give two layers to every
//     virtual stage but the first and the last, which hold the embedding (the LM head and loss)
//     and one layer.
// Layers are numbered in virtual-stage order, so virtual stage chunk x PP + stage holds the
// layers after those of every virtual stage before it.
#include <string>
#include <vector>

#include "generators/llm/llm_model_config.hpp"
#include "generators/llm/llm_parallel_config.hpp"

namespace perfsim::generators::llm {

// Transformer layers of every virtual stage, indexed chunk x PP + stage. Throws
// InputError("<parallel>", field, problem) when the layers cannot be split that way.
std::vector<int> virtual_stage_layers(const TransformerConfig& model,
                                      const ParallelConfig& parallel);

// The problem virtual_stage_layers would throw, or "" (for a caller that skips such layouts).
std::string pipeline_split_problem(const TransformerConfig& model, const ParallelConfig& parallel);

}  // namespace perfsim::generators::llm

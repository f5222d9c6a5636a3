#pragma once
// A model's shape given field by field (RUNS.csv's shape columns, `simulate --layers ...`):
// either over a model file's values or, without a file, the whole model. One reader for both,
// so that a run table row and the simulate command it explains build the same model.
#include <optional>
#include <string>

#include "generators/llm/llm_model_config.hpp"

namespace perfsim::generators::llm {

struct ModelShapeOverrides {
  // 0 / empty / nullopt: not given (the model file's value, or the inline default).
  int layers = 0, hidden = 0, heads = 0, kv_heads = 0, ffn_hidden = 0, vocab = 0, seq_len = 0;
  int head_dim = 0;                     // Megatron's kv_channels
  std::string attention;                // flash | unfused
  std::optional<bool> dropout;          // attention and hidden dropout
  std::optional<bool> gated_ffn;        // SwiGLU
  std::string position_embedding;       // learned | rope
  std::optional<bool> tied_embeddings;  // one matrix for the input embedding and output layer

  bool operator==(const ModelShapeOverrides&) const = default;
  bool empty() const { return *this == ModelShapeOverrides{}; }
};

// `model` with the given fields replaced; validated (InputError naming `where`).
TransformerConfig with_shape_overrides(TransformerConfig model, const ModelShapeOverrides& shape,
                                       const std::string& where);

// A model from the shape alone (no model file): layers, hidden, heads, vocab and seq_len are
// needed; KV heads default to the heads (multi-head attention), the FFN to 4 x hidden, the rest
// to TransformerConfig's defaults (flash attention, learned positions, no dropout, bf16).
TransformerConfig inline_transformer_config(const ModelShapeOverrides& shape,
                                            const std::string& name, const std::string& where);

}  // namespace perfsim::generators::llm

#include "generators/llm/llm_model_overrides.hpp"

#include "perfsim/error.hpp"

namespace perfsim::generators::llm {

TransformerConfig with_shape_overrides(TransformerConfig model, const ModelShapeOverrides& shape,
                                       const std::string& where) {
  auto override_with = [](int& field, int value) {
    if (value > 0)
      field = value;
  };
  override_with(model.layers, shape.layers);
  override_with(model.hidden, shape.hidden);
  override_with(model.heads, shape.heads);
  override_with(model.kv_heads, shape.kv_heads);
  override_with(model.kv_channels, shape.head_dim);
  override_with(model.ffn_hidden, shape.ffn_hidden);
  override_with(model.vocab, shape.vocab);
  override_with(model.seq_len, shape.seq_len);
  if (shape.attention == "flash")
    model.attention = AttentionKernel::kFlash;
  else if (shape.attention == "unfused")
    model.attention = AttentionKernel::kUnfused;
  else if (!shape.attention.empty())
    throw InputError(where, "attention",
                     "must be \"flash\" or \"unfused\", got \"" + shape.attention + "\"");
  if (shape.dropout)
    model.dropout = *shape.dropout;
  if (shape.gated_ffn)
    model.gated_ffn = *shape.gated_ffn;
  if (!shape.position_embedding.empty())
    model.position_embedding =
        parse_position_embedding(shape.position_embedding, where, "position_embedding");
  if (shape.tied_embeddings)
    model.tied_embeddings = *shape.tied_embeddings;
  validate(model, where);
  return model;
}

TransformerConfig inline_transformer_config(const ModelShapeOverrides& shape,
                                            const std::string& name, const std::string& where) {
  const std::pair<const char*, int> needed[] = {{"layers", shape.layers},
                                                {"hidden", shape.hidden},
                                                {"heads", shape.heads},
                                                {"vocab", shape.vocab},
                                                {"seq_len", shape.seq_len}};
  for (const auto& [field, value] : needed)
    if (value <= 0)
      throw InputError(where, field, "needed without a model file");
  TransformerConfig model;
  model.name = name;
  model.source = where;
  model.kv_heads = shape.heads;
  model.ffn_hidden = 4 * shape.hidden;
  return with_shape_overrides(std::move(model), shape, where);
}

}  // namespace perfsim::generators::llm

#include "generators/llm/llm_model_config.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "io/input_file.hpp"
#include "io/json_document.hpp"
#include "io/json_number.hpp"
#include "perfsim/error.hpp"

namespace perfsim::generators::llm {
namespace {

using nlohmann::json;

int positive_int(const json& doc, const char* field, const std::string& file) {
  if (!doc.contains(field))
    throw InputError(file, field, "missing required field");
  const json& value = doc.at(field);
  if (!value.is_number_integer() || value.get<std::int64_t>() <= 0)
    throw InputError(file, field, "must be a positive integer, got " + value.dump());
  // get<int> would truncate 4294967297 layers to 1 before validate() sees the size.
  return io::json_int(value, 1, std::numeric_limits<int>::max(), file, field);
}

int optional_positive_int(const json& doc, const char* field, int fallback,
                          const std::string& file) {
  return doc.contains(field) ? positive_int(doc, field, file) : fallback;
}

bool optional_bool(const json& doc, const char* field, bool fallback, const std::string& file) {
  if (!doc.contains(field))
    return fallback;
  if (!doc.at(field).is_boolean())
    throw InputError(file, field, "must be true or false, got " + doc.at(field).dump());
  return doc.at(field).get<bool>();
}

std::string optional_string(const json& doc, const char* field, const std::string& fallback,
                            const std::string& file) {
  if (!doc.contains(field))
    return fallback;
  if (!doc.at(field).is_string())
    throw InputError(file, field, "must be a string, got " + doc.at(field).dump());
  return doc.at(field).get<std::string>();
}

double optional_non_negative_number(const json& doc, const char* field, const std::string& file) {
  if (!doc.contains(field))
    return 0;
  const json& value = doc.at(field);
  if (!value.is_number() || value.get<double>() < 0 || !std::isfinite(value.get<double>()))
    throw InputError(file, field, "must be a non-negative number, got " + value.dump());
  return value.get<double>();
}

int optional_non_negative_int(const json& doc, const char* field, const std::string& file) {
  if (!doc.contains(field))
    return 0;
  const json& value = doc.at(field);
  if (!value.is_number_integer() || value.get<std::int64_t>() < 0)
    throw InputError(file, field, "must be a non-negative integer, got " + value.dump());
  return io::json_int(value, 0, std::numeric_limits<int>::max(), file, field);
}

// The MoE fields; all absent for a dense model.
MixtureOfExperts parse_mixture_of_experts(const json& doc, const std::string& file) {
  MixtureOfExperts moe;
  constexpr const char* kMoeOnly[] = {"top_k",
                                      "moe_ffn_hidden",
                                      "shared_expert_ffn_hidden",
                                      "num_shared_experts",
                                      "capacity_factor",
                                      "moe_layer_freq",
                                      "first_k_dense",
                                      "router_load_balancing",
                                      "router_score_function",
                                      "router_expert_bias",
                                      "router_num_groups",
                                      "router_group_topk",
                                      "router_topk_scaling_factor"};
  if (!doc.contains("num_experts")) {
    for (const char* field : kMoeOnly)
      if (doc.contains(field))
        throw InputError(file, field, "is a mixture-of-experts field: num_experts is missing");
    return moe;
  }
  moe.num_experts = positive_int(doc, "num_experts", file);
  moe.top_k = positive_int(doc, "top_k", file);
  moe.expert_ffn_hidden = positive_int(doc, "moe_ffn_hidden", file);
  if (doc.contains("shared_expert_ffn_hidden") && doc.contains("num_shared_experts"))
    throw InputError(file, "num_shared_experts",
                     "give num_shared_experts or shared_expert_ffn_hidden, not both");
  if (doc.contains("shared_expert_ffn_hidden"))
    moe.shared_expert_ffn_hidden = positive_int(doc, "shared_expert_ffn_hidden", file);
  if (doc.contains("num_shared_experts"))
    moe.shared_expert_ffn_hidden =
        positive_int(doc, "num_shared_experts", file) * moe.expert_ffn_hidden;
  moe.capacity_factor = optional_non_negative_number(doc, "capacity_factor", file);
  moe.layer_freq = optional_positive_int(doc, "moe_layer_freq", 1, file);
  moe.first_dense_layers = optional_non_negative_int(doc, "first_k_dense", file);
  const std::string balancing = optional_string(doc, "router_load_balancing", "aux_loss", file);
  if (balancing != "aux_loss" && balancing != "seq_aux_loss" && balancing != "none")
    throw InputError(file, "router_load_balancing",
                     "must be \"aux_loss\", \"seq_aux_loss\" or \"none\" (Megatron-Core's "
                     "moe_router_load_balancing_type; others are not modelled), got \"" +
                         balancing + "\"");
  moe.aux_loss = balancing != "none";
  moe.sequence_aux_loss = balancing == "seq_aux_loss";
  const std::string scores = optional_string(doc, "router_score_function", "softmax", file);
  if (scores != "softmax" && scores != "sigmoid")
    throw InputError(file, "router_score_function",
                     "must be \"softmax\" or \"sigmoid\" (Megatron-Core's "
                     "moe_router_score_function), got \"" +
                         scores + "\"");
  moe.sigmoid_scores = scores == "sigmoid";
  moe.expert_bias = optional_bool(doc, "router_expert_bias", false, file);
  moe.router_num_groups = optional_non_negative_int(doc, "router_num_groups", file);
  moe.router_group_topk = optional_non_negative_int(doc, "router_group_topk", file);
  if ((moe.router_num_groups > 0) != (moe.router_group_topk > 0))
    throw InputError(file, "router_group_topk",
                     "router_num_groups and router_group_topk go together (Megatron-Core's "
                     "group-limited routing needs both)");
  if (moe.router_group_topk > 0 &&
      (moe.num_experts % moe.router_num_groups != 0 ||
       moe.router_group_topk > moe.router_num_groups || moe.top_k % moe.router_group_topk != 0 ||
       moe.top_k > moe.router_group_topk * (moe.num_experts / moe.router_num_groups)))
    throw InputError(file, "router_group_topk",
                     "group-limited routing needs num_experts divisible by router_num_groups, "
                     "router_group_topk <= router_num_groups, top_k divisible by "
                     "router_group_topk and top_k within the chosen groups' experts");
  moe.topk_scaling_factor = optional_non_negative_number(doc, "router_topk_scaling_factor", file);
  return moe;
}

// The attention-shape fields of issue 15 (llm_model_config.hpp); all absent for the models
// whose heads x head_dim is hidden, without QK norm or sliding windows.
void parse_attention_shape(const json& doc, TransformerConfig& model, const std::string& file) {
  model.kv_channels = optional_positive_int(doc, "head_dim", 0, file);
  model.qk_layernorm = optional_bool(doc, "qk_layernorm", false, file);
  model.window_size = optional_non_negative_int(doc, "window_size", file);
  model.full_attention_every = optional_non_negative_int(doc, "full_attention_every", file);
}

// The multi-latent attention fields; all absent for multi-head or grouped-query attention.
MultiLatentAttention parse_multi_latent_attention(const json& doc, const std::string& file) {
  MultiLatentAttention mla;
  constexpr const char* kMlaOnly[] = {"q_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
                                      "v_head_dim"};
  if (!doc.contains("kv_lora_rank")) {
    for (const char* field : kMlaOnly)
      if (doc.contains(field))
        throw InputError(file, field, "is a multi-latent attention field: kv_lora_rank is missing");
    return mla;
  }
  mla.kv_lora_rank = positive_int(doc, "kv_lora_rank", file);
  mla.qk_nope_head_dim = positive_int(doc, "qk_nope_head_dim", file);
  mla.qk_rope_head_dim = positive_int(doc, "qk_rope_head_dim", file);
  mla.v_head_dim = positive_int(doc, "v_head_dim", file);
  mla.q_lora_rank = optional_non_negative_int(doc, "q_lora_rank", file);
  return mla;
}

}  // namespace

DType parse_training_dtype(std::string_view text, const std::string& where,
                           const std::string& field) {
  const std::optional<DType> parsed = parse_dtype(std::string(text));
  if (!parsed ||
      (*parsed != DType::kBFloat16 && *parsed != DType::kFloat16 && *parsed != DType::kFloat8))
    throw InputError(where, field, "must be bf16, fp16 or fp8, got \"" + std::string(text) + "\"");
  return *parsed;
}

PositionEmbedding parse_position_embedding(std::string_view text, const std::string& where,
                                           const std::string& field) {
  if (text == "learned")
    return PositionEmbedding::kLearned;
  if (text == "rope")
    return PositionEmbedding::kRope;
  throw InputError(where, field,
                   "must be \"learned\" or \"rope\", got \"" + std::string(text) + "\"");
}

std::string_view position_embedding_name(PositionEmbedding embedding) {
  return embedding == PositionEmbedding::kRope ? "rope" : "learned";
}

CrossEntropyFusion parse_cross_entropy_fusion(std::string_view text, const std::string& where,
                                              const std::string& field) {
  if (text == "none")
    return CrossEntropyFusion::kNone;
  if (text == "native")
    return CrossEntropyFusion::kNative;
  if (text == "te")
    return CrossEntropyFusion::kTe;
  throw InputError(where, field,
                   "must be \"none\", \"native\" or \"te\", got \"" + std::string(text) + "\"");
}

std::string_view cross_entropy_fusion_name(CrossEntropyFusion fusion) {
  switch (fusion) {
    case CrossEntropyFusion::kNative:
      return "native";
    case CrossEntropyFusion::kTe:
      return "te";
    case CrossEntropyFusion::kNone:
      break;
  }
  return "none";
}

Fp8Recipe parse_fp8_recipe(std::string_view text, const std::string& where,
                           const std::string& field) {
  if (text == "delayed")
    return Fp8Recipe::kDelayed;
  if (text == "current" || text == "tensorwise")
    return Fp8Recipe::kCurrent;
  if (text == "blockwise")
    return Fp8Recipe::kBlockwise;
  throw InputError(where, field,
                   "must be \"delayed\", \"current\" or \"tensorwise\" (current), or "
                   "\"blockwise\", got \"" +
                       std::string(text) + "\"");
}

std::string_view fp8_recipe_name(Fp8Recipe recipe) {
  switch (recipe) {
    case Fp8Recipe::kCurrent:
      return "current";
    case Fp8Recipe::kBlockwise:
      return "blockwise";
    case Fp8Recipe::kDelayed:
      break;
  }
  return "delayed";
}

TransformerConfig with_run_capacity_factor(TransformerConfig model, double run_factor) {
  if (run_factor != 0 && model.is_moe())
    model.moe.capacity_factor = std::max(0.0, run_factor);
  return model;
}

TransformerConfig parse_transformer_config(std::string_view json_text, const std::string& file) {
  const json doc = io::parse_json_document(json_text, file);
  if (!doc.is_object())
    throw InputError(file, "/", "a model file is a JSON object");
  const std::string schema = optional_string(doc, "schema", "", file);
  if (schema != "perfsim-llm-model/1")
    throw InputError(file, "schema", "expected \"perfsim-llm-model/1\", got \"" + schema + "\"");
  TransformerConfig model;
  model.name = optional_string(doc, "name", "", file);
  if (model.name.empty())
    throw InputError(file, "name", "missing or empty");
  model.source = optional_string(doc, "source", "", file);
  model.layers = positive_int(doc, "layers", file);
  model.hidden = positive_int(doc, "hidden", file);
  model.heads = positive_int(doc, "heads", file);
  model.kv_heads = optional_positive_int(doc, "kv_heads", model.heads, file);
  model.ffn_hidden = positive_int(doc, "ffn_hidden", file);
  model.gated_ffn = optional_bool(doc, "gated_ffn", false, file);
  model.vocab = positive_int(doc, "vocab", file);
  model.seq_len = positive_int(doc, "seq_len", file);
  model.micro_batch = optional_positive_int(doc, "micro_batch", 1, file);
  model.global_batch = optional_positive_int(doc, "global_batch", model.micro_batch, file);
  model.dtype = parse_training_dtype(optional_string(doc, "dtype", "bf16", file), file, "dtype");
  const std::string attention = optional_string(doc, "attention", "flash", file);
  if (attention == "flash")
    model.attention = AttentionKernel::kFlash;
  else if (attention == "unfused")
    model.attention = AttentionKernel::kUnfused;
  else
    throw InputError(file, "attention",
                     "must be \"flash\" or \"unfused\", got \"" + attention + "\"");
  model.dropout = optional_bool(doc, "dropout", false, file);
  model.tied_embeddings = optional_bool(doc, "tied_embeddings", true, file);
  model.position_embedding = parse_position_embedding(
      optional_string(doc, "position_embedding", "learned", file), file, "position_embedding");
  model.moe = parse_mixture_of_experts(doc, file);
  parse_attention_shape(doc, model, file);
  model.mla = parse_multi_latent_attention(doc, file);
  model.mtp_num_layers = optional_non_negative_int(doc, "mtp_num_layers", file);
  validate(model, file);
  return model;
}

TransformerConfig load_transformer_config(const std::string& path) {
  return parse_transformer_config(io::read_file_decompressed(path), path);
}

void validate_multi_latent_attention(const TransformerConfig& model, const std::string& file) {
  const MultiLatentAttention& mla = model.mla;
  if (mla.kv_lora_rank < 0)
    throw InputError(file, "kv_lora_rank",
                     "must not be negative (0: no multi-latent attention), got " +
                         std::to_string(mla.kv_lora_rank));
  if (!mla.enabled())
    return;
  const std::pair<const char*, int> sizes[] = {{"qk_nope_head_dim", mla.qk_nope_head_dim},
                                               {"qk_rope_head_dim", mla.qk_rope_head_dim},
                                               {"v_head_dim", mla.v_head_dim}};
  for (const auto& [field, value] : sizes) {
    if (value <= 0)
      throw InputError(file, field, "must be positive, got " + std::to_string(value));
    if (value > 4096)
      throw InputError(file, field, std::to_string(value) + " is above the supported 4096");
  }
  if (mla.q_lora_rank < 0)
    throw InputError(
        file, "q_lora_rank",
        "must not be negative (0: queries not compressed), got " + std::to_string(mla.q_lora_rank));
  for (const auto& [field, value] : {std::pair<const char*, int>{"q_lora_rank", mla.q_lora_rank},
                                     std::pair<const char*, int>{"kv_lora_rank", mla.kv_lora_rank}})
    if (value > (1 << 20))
      throw InputError(file, field, std::to_string(value) + " is above the supported 1048576");
  // Rotary embedding rotates pairs of the rope part.
  if (mla.qk_rope_head_dim % 2 != 0)
    throw InputError(file, "qk_rope_head_dim",
                     "must be even (rotary embedding rotates pairs), got " +
                         std::to_string(mla.qk_rope_head_dim));
  if (!model.rope())
    throw InputError(file, "position_embedding",
                     "multi-latent attention rotates its rope part: needs \"rope\"");
  if (model.attention != AttentionKernel::kFlash)
    throw InputError(file, "attention",
                     "multi-latent attention is modelled with fused (flash) attention only");
  if (model.kv_heads != model.heads)
    throw InputError(file, "kv_heads",
                     "multi-latent attention has one key and value per head: kv_heads must "
                     "equal heads");
}

void validate(const TransformerConfig& model, const std::string& file) {
  // Every size must be positive before anything divides by one: a model built in code or from a
  // table row (not parsed from a file) can carry a zero.
  auto positive = [&](const char* field, int value) {
    if (value <= 0)
      throw InputError(file, field, "must be positive, got " + std::to_string(value));
  };
  positive("layers", model.layers);
  positive("hidden", model.hidden);
  positive("heads", model.heads);
  positive("kv_heads", model.kv_heads);
  positive("ffn_hidden", model.ffn_hidden);
  positive("vocab", model.vocab);
  positive("seq_len", model.seq_len);
  positive("micro_batch", model.micro_batch);
  positive("global_batch", model.global_batch);
  if (model.moe.num_experts < 0)
    throw InputError(
        file, "num_experts",
        "must not be negative (0: a dense model), got " + std::to_string(model.moe.num_experts));
  // Far beyond any trained model, and small enough that sizes multiply without overflow: a
  // typo such as 2147483647 layers is an error, not hours of generation.
  auto at_most = [&](const char* field, long value, long limit) {
    if (value > limit)
      throw InputError(file, field,
                       std::to_string(value) + " is above the supported " + std::to_string(limit));
  };
  at_most("layers", model.layers, 100'000);
  at_most("hidden", model.hidden, 1L << 20);
  at_most("heads", model.heads, 1L << 16);
  at_most("ffn_hidden", model.ffn_hidden, 1L << 24);
  at_most("vocab", model.vocab, 100'000'000);
  at_most("seq_len", model.seq_len, 100'000'000);
  at_most("micro_batch", model.micro_batch, 100'000'000);
  at_most("global_batch", model.global_batch, 1'000'000'000);
  if (model.kv_channels < 0)
    throw InputError(
        file, "head_dim",
        "must be positive (absent: hidden / heads), got " + std::to_string(model.kv_channels));
  at_most("head_dim", model.kv_channels, 1L << 16);
  // Without head_dim the head width is hidden / heads, which must be whole.
  if (model.kv_channels == 0 && model.hidden % model.heads != 0)
    throw InputError(file, "hidden",
                     "hidden " + std::to_string(model.hidden) + " is not divisible by heads " +
                         std::to_string(model.heads) +
                         " (give head_dim when it is not hidden / heads)");
  if (model.window_size < 0)
    throw InputError(
        file, "window_size",
        "must not be negative (0: full attention), got " + std::to_string(model.window_size));
  if (model.full_attention_every < 0)
    throw InputError(file, "full_attention_every",
                     "must not be negative (0: every layer windowed), got " +
                         std::to_string(model.full_attention_every));
  if (model.full_attention_every > 0 && model.window_size == 0)
    throw InputError(file, "full_attention_every",
                     "names the full-attention layers among windowed ones: window_size is missing");
  // Multi-latent attention sets its own head dimensions and norms; windows are not modelled
  // with it.
  if (model.is_mla()) {
    for (const auto& [field, set] :
         {std::pair<const char*, bool>{"head_dim", model.kv_channels > 0},
          std::pair<const char*, bool>{"qk_layernorm", model.qk_layernorm},
          std::pair<const char*, bool>{"window_size", model.window_size > 0}})
      if (set)
        throw InputError(file, field,
                         "is not modelled with multi-latent attention (kv_lora_rank): MLA states "
                         "its own head dimensions and latent norms");
  }
  if (model.kv_heads > model.heads || model.heads % model.kv_heads != 0)
    throw InputError(file, "kv_heads",
                     "kv_heads " + std::to_string(model.kv_heads) + " must divide heads " +
                         std::to_string(model.heads));
  if (model.global_batch % model.micro_batch != 0)
    throw InputError(file, "global_batch",
                     "global batch " + std::to_string(model.global_batch) +
                         " is not a multiple of the micro-batch " +
                         std::to_string(model.micro_batch));
  if (model.mtp_num_layers < 0)
    throw InputError(file, "mtp_num_layers",
                     "must not be negative (0: no multi-token prediction), got " +
                         std::to_string(model.mtp_num_layers));
  at_most("mtp_num_layers", model.mtp_num_layers, 64);
  if (model.fp8_recipe != Fp8Recipe::kDelayed && !model.fp8())
    throw InputError(file, "fp8_recipe",
                     "\"" + std::string(fp8_recipe_name(model.fp8_recipe)) +
                         "\" scaling needs dtype fp8, got " + std::string(dtype_name(model.dtype)));
  validate_multi_latent_attention(model, file);
  if (!model.is_moe())
    return;
  const MixtureOfExperts& moe = model.moe;
  positive("moe_ffn_hidden", moe.expert_ffn_hidden);
  positive("moe_layer_freq", moe.layer_freq);
  if (moe.shared_expert_ffn_hidden < 0)
    throw InputError(file, "shared_expert_ffn_hidden",
                     "must not be negative (0: no shared experts), got " +
                         std::to_string(moe.shared_expert_ffn_hidden));
  if (moe.first_dense_layers < 0)
    throw InputError(file, "first_k_dense",
                     "must not be negative, got " + std::to_string(moe.first_dense_layers));
  at_most("num_experts", moe.num_experts, 1L << 16);
  at_most("moe_ffn_hidden", moe.expert_ffn_hidden, 1L << 24);
  at_most("shared_expert_ffn_hidden", moe.shared_expert_ffn_hidden, 1L << 24);
  if (moe.top_k <= 0 || moe.top_k > moe.num_experts)
    throw InputError(file, "top_k",
                     "top_k " + std::to_string(moe.top_k) + " must be between 1 and num_experts " +
                         std::to_string(moe.num_experts));
  if (moe.capacity_factor != 0 && moe.capacity_factor < 1.0 / moe.num_experts)
    throw InputError(file, "capacity_factor",
                     "must be 0 (dropless) or at least 1 / num_experts, got " +
                         std::to_string(moe.capacity_factor));
  if (moe.first_dense_layers >= model.layers)
    throw InputError(file, "first_k_dense",
                     std::to_string(moe.first_dense_layers) +
                         " dense layers leave no MoE layer of " + std::to_string(model.layers));
}

}  // namespace perfsim::generators::llm

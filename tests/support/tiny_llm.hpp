#pragma once
// Tiny LLM shapes the generator and trace-format tests share: a few layers of h 256 whose
// traces are small enough to compare op by op.
#include "generators/llm/llm_model_config.hpp"
#include "generators/llm/llm_parallel_config.hpp"

namespace perfsim::test_support {

// 8 layers, h 256, FFN 4h, sequence 128, micro-batch 2, 16 micro-batches at DP 1.
inline generators::llm::TransformerConfig tiny_gpt() {
  generators::llm::TransformerConfig model;
  model.name = "tiny-gpt";
  model.layers = 8;
  model.hidden = 256;
  model.heads = 8;
  model.kv_heads = 8;
  model.ffn_hidden = 1024;
  model.vocab = 2048;
  model.seq_len = 128;
  model.micro_batch = 2;
  model.global_batch = 32;
  return model;
}

// 4 layers, h 256, grouped-query attention (8 heads, 4 KV heads), gated FFN: a Llama shape.
inline generators::llm::TransformerConfig tiny_llama() {
  generators::llm::TransformerConfig model;
  model.name = "tiny";
  model.layers = 4;
  model.hidden = 256;
  model.heads = 8;
  model.kv_heads = 4;
  model.ffn_hidden = 704;
  model.gated_ffn = true;
  model.vocab = 2048;
  model.seq_len = 128;
  model.micro_batch = 1;
  model.global_batch = 8;
  return model;
}

// 2 layers, h 64, 4 experts of 128 (plain MLP), top-2, sequence 32, one micro-batch per DP rank.
inline generators::llm::TransformerConfig tiny_moe() {
  generators::llm::TransformerConfig model;
  model.name = "tiny-moe";
  model.layers = 2;
  model.hidden = 64;
  model.heads = 4;
  model.kv_heads = 4;
  model.ffn_hidden = 256;
  model.vocab = 128;
  model.seq_len = 32;
  model.micro_batch = 1;
  model.global_batch = 4;
  model.moe.num_experts = 4;
  model.moe.top_k = 2;
  model.moe.expert_ffn_hidden = 128;
  return model;
}

// 2 layers, h 256, 4 heads of multi-latent attention (q_lora_rank 96, kv_lora_rank 64, nope 32
// + rope 16, v 24), SwiGLU of 512, sequence 128, two micro-batches: a DeepSeek shape.
inline generators::llm::TransformerConfig tiny_mla() {
  generators::llm::TransformerConfig model;
  model.name = "tiny-mla";
  model.layers = 2;
  model.hidden = 256;
  model.heads = 4;
  model.kv_heads = 4;
  model.ffn_hidden = 512;
  model.gated_ffn = true;
  model.vocab = 1024;
  model.seq_len = 128;
  model.micro_batch = 1;
  model.global_batch = 2;
  model.position_embedding = generators::llm::PositionEmbedding::kRope;
  model.mla = {.q_lora_rank = 96,
               .kv_lora_rank = 64,
               .qk_nope_head_dim = 32,
               .qk_rope_head_dim = 16,
               .v_head_dim = 24};
  return model;
}

// TP 2 x PP 2 x DP 2 with sequence parallelism and ZeRO 1: every group kind on 8 ranks.
inline generators::llm::ParallelConfig tiny_tp2_pp2_dp2() {
  generators::llm::ParallelConfig parallel;
  parallel.tp = 2;
  parallel.pp = 2;
  parallel.dp = 2;
  parallel.sequence_parallel = true;
  parallel.zero_stage = 1;
  return parallel;
}

}  // namespace perfsim::test_support

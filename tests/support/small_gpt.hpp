#pragma once
// The small GPT shape the simulation tests generate (heads of 64, FFN 4h, vocabulary 32768,
// sequence 1024, micro-batch 1): big enough for every parallelism kind, fast to simulate.
#include "generators/llm/llm_model_config.hpp"

namespace perfsim::test_support {

inline generators::llm::TransformerConfig small_gpt(int layers, int hidden, int global_batch) {
  generators::llm::TransformerConfig model;
  model.name = "small-gpt";
  model.layers = layers;
  model.hidden = hidden;
  model.heads = hidden / 64;
  model.kv_heads = model.heads;
  model.ffn_hidden = 4 * hidden;
  model.vocab = 32768;
  model.seq_len = 1024;
  model.micro_batch = 1;
  model.global_batch = global_batch;
  return model;
}

}  // namespace perfsim::test_support

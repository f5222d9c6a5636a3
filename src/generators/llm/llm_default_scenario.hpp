#pragma once
// The embedded default scenario of `perfsim` run with no arguments: one training iteration of
// Llama 3 70B on 8 nodes x 8 H100 (NVSwitch inside a node, 8 x 400G InfiniBand NDR per node),
// TP 8 inside each node, PP 4 across nodes (20 layers per stage, 1F1B), DP 2 with ZeRO-1,
// sequence parallelism, micro-batch 1, global batch 128 sequences of 8192 tokens (1M tokens,
// 64 micro-batches per pipeline, so the ideal 1F1B bubble is 3/67 = 4.5 %).
#include <string>
#include <vector>

#include "generators/llm/llm_parallel_config.hpp"

namespace perfsim::generators::llm {

struct EmbeddedFile {
  std::string path;  // the repository file it was copied from
  std::string text;
};

struct DefaultScenarioFiles {
  EmbeddedFile model;
  EmbeddedFile topology;
  EmbeddedFile device;
};

DefaultScenarioFiles default_scenario_files();

// TP 8, PP 4, DP 2, sequence parallel, ZeRO-1, micro-batch 1, global batch 128.
inline ParallelConfig default_scenario_parallel() {
  ParallelConfig parallel;
  parallel.tp = 8;
  parallel.pp = 4;
  parallel.dp = 2;
  parallel.sequence_parallel = true;
  parallel.zero_stage = 1;
  parallel.micro_batch = 1;
  parallel.global_batch = 128;
  return parallel;
}

}  // namespace perfsim::generators::llm

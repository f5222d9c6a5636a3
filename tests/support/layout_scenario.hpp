#pragma once
// The scenario the tests that sweep every parallelism layout simulate (parallelism_layouts.hpp):
// the small GPT, or the small MoE where the layout has expert parallelism, on 2 DGX-A100 nodes.
#include "generators/llm/llm_parallel_config.hpp"
#include "scenario/llm_simulation.hpp"
#include "support/dgx_a100_scenario.hpp"
#include "support/parallelism_layouts.hpp"
#include "support/small_gpt.hpp"

namespace perfsim::test_support {

inline scenario::LlmScenario layout_scenario(const generators::llm::ParallelConfig& parallel) {
  return dgx_a100_scenario(parallel.ep > 1 ? small_moe() : small_gpt(6, 768, 24), parallel, 2);
}

}  // namespace perfsim::test_support

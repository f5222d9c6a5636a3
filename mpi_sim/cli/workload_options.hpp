#pragma once
// The workload options `perfsim simulate` and `perfsim generate` share: --model and the LLM
// layout (scenario/llm_simulate_options.hpp), --dlrm and its sharding
// (scenario/dlrm_simulate_options.hpp).
#include <CLI/CLI.hpp>

#include "scenario/dlrm_simulate_options.hpp"
#include "scenario/llm_simulate_options.hpp"

namespace perfsim::cli {

void add_llm_simulate_options(CLI::App& sub, scenario::LlmSimulateOptions& options);
void add_dlrm_simulate_options(CLI::App& sub, scenario::DlrmSimulateOptions& options);

}  // namespace perfsim::cli

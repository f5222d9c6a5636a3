#pragma once
// Megatron-Core's pipeline split (generators/llm/llm_pipeline_split.hpp) on the command line:
// one spelling and one help text for `simulate`, `generate`, `memory` and `plan`.
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace perfsim::cli {

// Where the four switches land (LlmSimulateOptions, llm::ParallelConfig: same field names).
struct PipelineSplitFields {
  int& first_stage_layers;  // 0: not set
  int& last_stage_layers;   // 0: not set
  bool& account_for_embedding;
  bool& account_for_loss;
};

// --first-stage-layers, --last-stage-layers and the two accounting flags; `help_prefix` leads
// each help text ("LLM: "). Returns the options added, for a caller that groups them.
std::vector<CLI::Option*> add_pipeline_split_options(CLI::App& sub,
                                                     const PipelineSplitFields& split,
                                                     const std::string& help_prefix);

// --pp-layout: Megatron-Core's --pipeline-model-parallel-layout string.
CLI::Option* add_pipeline_layout_option(CLI::App& sub, std::string& pp_layout,
                                        const std::string& help_prefix);

// The two accounting flags alone (`plan` enumerates the stage layers itself).
std::vector<CLI::Option*> add_pipeline_split_accounting_flags(CLI::App& sub,
                                                              bool& account_for_embedding,
                                                              bool& account_for_loss,
                                                              const std::string& help_prefix);

}  // namespace perfsim::cli

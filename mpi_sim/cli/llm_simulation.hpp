#pragma once
// The LLM branch of `perfsim simulate`: options, inputs (generated traces priced by the kernel
// models and the collective model) and the LLM report (MFU, streams, exposed communication per
// group, pipeline bubble).
#include <vector>

#include <CLI/CLI.hpp>

#include "generators/llm/llm_model_config.hpp"
#include "generators/llm/llm_parallel_config.hpp"
#include "mpi_sim/cli/llm_simulate_options.hpp"
#include "mpi_sim/cli/simulation_inputs.hpp"
#include "topology/topology.hpp"

namespace perfsim::cli {

void add_llm_simulate_options(CLI::App& sub, LlmSimulateOptions& options);

// The options of the embedded default scenario (`perfsim` with no arguments): Llama 3 70B on
// 8 x 8 H100, TP 8, PP 4, DP 2, SP, ZeRO-1; everything read from text in the binary.
LlmSimulateOptions embedded_default_llm_options();

// The parallel layout the LLM options describe (not yet validated against a model).
generators::llm::ParallelConfig parallel_config_from(const LlmSimulateOptions& options);

// Everything the LLM branch needs, already read: the default scenario builds one from embedded
// text, the command line from files.
struct LlmScenario {
  generators::llm::TransformerConfig model;
  generators::llm::ParallelConfig parallel;
  topology::Topology topology;
  std::string device_json;
  std::string device_source;
  std::string assets_path;  // "" = nominal curves
};

LlmScenario read_llm_scenario(const LlmSimulateOptions& options);

SimulationInputs load_llm_inputs(const LlmScenario& scenario, const std::vector<int>& local_ranks);

}  // namespace perfsim::cli

#pragma once
// The inverse of add_llm_simulate_options (workload_options.hpp): LLM options as the
// `perfsim simulate` arguments that parse back to them, so that a run computed from options
// (a RUNS.csv row in `validate runs --explain`) can be repeated by hand.
#include <string>
#include <vector>

#include "scenario/llm_simulate_options.hpp"

namespace perfsim::cli {

// Every option that differs from LlmSimulateOptions{} (the simulate defaults), plus --tp, --pp
// and --dp always; a file under the shipped configs/ folder by its name, as simulate takes it.
// Throws InputError for the embedded default scenario, which has no flags.
std::vector<std::string> llm_simulate_arguments(const scenario::LlmSimulateOptions& options);

// "perfsim simulate ARGS...", each argument quoted for a POSIX shell where it needs it.
std::string simulate_command_line(const std::vector<std::string>& arguments);

}  // namespace perfsim::cli

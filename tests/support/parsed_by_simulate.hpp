#pragma once
// `perfsim simulate`'s own parser (add_llm_simulate_options) on a rendered argument list, for
// the round-trip tests of the commands validate runs and plan print.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "mpi_sim/cli/workload_options.hpp"
#include "scenario/llm_simulate_options.hpp"

namespace perfsim::test_support {

inline scenario::LlmSimulateOptions parsed_by_simulate(const std::vector<std::string>& arguments) {
  CLI::App app;
  scenario::LlmSimulateOptions options;
  cli::add_llm_simulate_options(app, options);
  std::vector<std::string> reversed(arguments.rbegin(), arguments.rend());  // CLI11's order
  app.parse(reversed);
  return options;
}

}  // namespace perfsim::test_support

#include "mpi_sim/cli/command_line.hpp"
#include "perfsim/error.hpp"

namespace perfsim::cli {
void add_simulate_command(CLI::App& app, CommandRegistry& registry) {
  CLI::App* sub = app.add_subcommand("simulate", "Simulate one iteration");
  registry.add(sub, RankScope::kAllRanks, [](const CommandContext&) -> int {
    throw RuntimeFailure("simulate: under construction");
  });
}
}  // namespace perfsim::cli

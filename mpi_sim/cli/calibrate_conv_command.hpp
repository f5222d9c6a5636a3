#pragma once
// `perfsim calibrate conv`: a subcommand of `perfsim calibrate` (calibrate_command.cpp).
#include "mpi_sim/cli/command_line.hpp"

namespace perfsim::cli {

void add_calibrate_conv_subcommand(CLI::App& calibrate, CommandRegistry& registry);

}  // namespace perfsim::cli

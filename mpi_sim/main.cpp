// The composition root: MPI is initialised here and nowhere else; every subcommand is wired
// in mpi_sim/cli/.
#include "mpi_sim/cli/command_line.hpp"

int main(int argc, char** argv) {
  return perfsim::cli::run_perfsim(argc, argv);
}

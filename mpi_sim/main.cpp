// The composition root: run_perfsim opens the MPI session (mpi_sim/mpi/mpi_session.hpp) and
// wires every subcommand (mpi_sim/cli/).
#include "mpi_sim/cli/command_line.hpp"

int main(int argc, char** argv) {
  return perfsim::cli::run_perfsim(argc, argv);
}

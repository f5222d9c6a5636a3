#include "mpi_sim/mpi/mpi_session.hpp"

#include <cstdio>
#include <cstdlib>

#include "mpi_sim/mpi/mpi_errors.hpp"

namespace perfsim::mpi {
namespace {

MPI_Comm initialised_world(int& argc, char**& argv) {
  MPI_Init(&argc, &argv);
  exit_on_mpi_errors(MPI_COMM_WORLD);
  return MPI_COMM_WORLD;
}

}  // namespace

MpiSession::MpiSession(int& argc, char**& argv) : world_(initialised_world(argc, argv)) {}

MpiSession::~MpiSession() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized)
    MPI_Finalize();
}

void end_run_after_error(const ProcessGroup& world, int exit_code) {
  std::fflush(stdout);
  std::fflush(stderr);
  if (world.communicator() != MPI_COMM_NULL) {
    if (world.size() > 1)
      MPI_Abort(world.communicator(), exit_code);
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized)
      MPI_Finalize();
  }
  std::exit(exit_code);
}

}  // namespace perfsim::mpi

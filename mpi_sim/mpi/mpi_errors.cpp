#include "mpi_sim/mpi/mpi_errors.hpp"

#include <cstdio>
#include <string>

namespace perfsim::mpi {
namespace {

constexpr int kExitEnvironment = 3;  // README "Exit codes": I/O or environment

void report_and_abort(MPI_Comm* communicator, int* error_code, ...) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(*error_code, text, &length);
  const std::string line = "perfsim: error: MPI: " + std::string(text, length) + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
  MPI_Abort(*communicator, kExitEnvironment);
}

}  // namespace

void exit_on_mpi_errors(MPI_Comm world) {
  MPI_Errhandler handler;
  MPI_Comm_create_errhandler(report_and_abort, &handler);
  MPI_Comm_set_errhandler(world, handler);
  MPI_Errhandler_free(&handler);
}

}  // namespace perfsim::mpi

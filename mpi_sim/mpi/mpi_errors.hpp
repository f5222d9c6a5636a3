#pragma once
// MPI errors end the run with perfsim's environment exit code (3, README "Exit codes") and one
// line naming the MPI error, instead of Open MPI's own abort code and banner.
#include <mpi.h>

namespace perfsim::mpi {

// Installs the handler on `world`; communicators duplicated or created from it inherit it.
void exit_on_mpi_errors(MPI_Comm world);

}  // namespace perfsim::mpi

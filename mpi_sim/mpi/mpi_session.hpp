#pragma once
// MPI for the lifetime of one perfsim run (the composition root holds one): initialised on
// construction with MPI errors ending the run with exit code 3 (mpi_errors.hpp), finalised on
// destruction, and the two ways a run ends early.
#include "mpi_sim/mpi/process_group.hpp"

namespace perfsim::mpi {

class MpiSession {
 public:
  MpiSession(int& argc, char**& argv);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  // Every process of the run (MPI_COMM_WORLD).
  const ProcessGroup& world() const { return world_; }

 private:
  ProcessGroup world_;
};

// Ends the run after an error seen on one process: with several processes the others may be
// blocked in a collective, so only MPI_Abort is safe; alone, a normal finalize keeps the exit
// code clean. Flushes standard output and error first.
[[noreturn]] void end_run_after_error(const ProcessGroup& world, int exit_code);

}  // namespace perfsim::mpi

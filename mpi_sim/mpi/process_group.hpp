#pragma once
// The MPI processes of a run as the command line sees them: which one this is, how many there
// are, and the few collective steps a command takes between its own work. The commands call
// these instead of MPI, so every MPI call stays in mpi_sim/mpi. A default ProcessGroup is a
// process alone (rank 0 of 1): its collectives are no-ops and it needs no MPI (unit tests).
#include <mpi.h>

#include <string>

namespace perfsim::mpi {

class ProcessGroup {
 public:
  ProcessGroup() = default;
  // Every process of `communicator`; MPI must be initialised.
  explicit ProcessGroup(MPI_Comm communicator);

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool is_root() const { return rank_ == 0; }
  // For the mpi_sim/mpi functions that run the simulation (distributed_run.hpp,
  // process_packing.hpp); MPI_COMM_NULL for a process alone.
  MPI_Comm communicator() const { return communicator_; }

  void barrier() const;
  // A barrier that sleeps between polls (process_packing.hpp): for processes that wait while
  // another works, so they leave it the cores.
  void quiet_barrier() const;
  // Process 0's text on every process.
  std::string broadcast_text_from_root(std::string text) const;
  // The sum of every process's value on process 0 (unspecified elsewhere).
  long long sum_on_root(long long value) const;

 private:
  bool alone() const { return communicator_ == MPI_COMM_NULL; }

  MPI_Comm communicator_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace perfsim::mpi

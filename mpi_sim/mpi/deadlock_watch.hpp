#pragma once
// Detects, within seconds, that the simulated ranks of all processes wait on each other in a
// cycle (traces whose collectives deadlock across processes), instead of waiting for the stall
// timeout. A process joins a round (one MPI_Iallreduce on its own communicator) only while it
// waits: blocked on a collective, or done and waiting for the others. A round therefore
// completes only when every process waits, and carries the sum of reductions each process has
// completed and the number of processes not done. Two rounds in a row that see no completed
// reduction anywhere, with someone not done, mean nobody can ever proceed: in such a round
// every process was blocked at its turn and had completed nothing since its previous turn, so
// nothing was posted that could still complete. Every process sees the same round results, so
// all reach the same verdict at the same round.
#include <mpi.h>

namespace perfsim::mpi {

class DeadlockWatch {
 public:
  enum class Verdict { kWaiting, kProgress, kAllDone, kDeadlock };

  explicit DeadlockWatch(MPI_Comm world);  // collective over `world`
  ~DeadlockWatch();
  DeadlockWatch(const DeadlockWatch&) = delete;
  DeadlockWatch& operator=(const DeadlockWatch&) = delete;

  // Called while this process waits. Joins a round when none is in flight and tests the one
  // in flight: kWaiting until it completes, then that round's verdict.
  Verdict poll(bool done, long long completed_reductions);

  bool in_round() const { return request_ != MPI_REQUEST_NULL; }
  int not_done_processes() const { return static_cast<int>(last_round_[1]); }

 private:
  MPI_Comm communicator_ = MPI_COMM_NULL;
  MPI_Request request_ = MPI_REQUEST_NULL;
  long long send_[2] = {0, 0};
  long long receive_[2] = {0, 0};
  long long last_round_[2] = {-1, -1};
  int rounds_without_progress_ = 0;
};

}  // namespace perfsim::mpi

#pragma once
// Detects, within about a second, that the simulated ranks of all processes wait on each other
// in a cycle (traces whose collectives deadlock across processes), instead of hanging. A
// process joins a round (one MPI_Iallreduce on its own communicator) only while it waits:
// blocked on a collective, or done and waiting for the others; the round's request is completed
// together with the process's own reductions (MPI_Waitsome), so waiting never polls. A round
// therefore completes only when every process waits, and carries the sum of reductions each
// process has completed, the number of processes not done, and the number that have not yet
// seen `min_stall` pass since the rounds stopped changing. Rounds in a row that see no completed
// reduction anywhere, with someone not done, for at least `min_stall` on every process, mean
// nobody can proceed: in each such round every process was blocked at its turn and had
// completed nothing since its previous turn, so nothing was posted that could still complete;
// the minimum stall leaves time to a reduction that every member had started when the rounds
// began (its completion would change the sums). Every process sees the same round results, so
// all reach the same verdict at the same round.
#include <mpi.h>

#include <chrono>

namespace perfsim::mpi {

class DeadlockWatch {
 public:
  enum class Verdict { kProgress, kAllDone, kDeadlock };

  // Collective over `world`.
  DeadlockWatch(MPI_Comm world, std::chrono::milliseconds min_stall);
  ~DeadlockWatch();
  DeadlockWatch(const DeadlockWatch&) = delete;
  DeadlockWatch& operator=(const DeadlockWatch&) = delete;

  // Called while this process waits: starts a round with its figures unless one is in flight.
  void join(bool done, long long completed_reductions);
  // The round in flight (MPI_REQUEST_NULL when none), for the caller to complete along with its
  // own requests; once the caller has completed it, finish_round() gives the verdict.
  MPI_Request request() const { return request_; }
  Verdict finish_round();

  int not_done_processes() const { return static_cast<int>(last_round_[1]); }

 private:
  MPI_Comm communicator_ = MPI_COMM_NULL;
  MPI_Request request_ = MPI_REQUEST_NULL;
  std::chrono::milliseconds min_stall_;
  std::chrono::steady_clock::time_point stalled_since_;
  long long send_[3] = {0, 0, 0};
  long long receive_[3] = {0, 0, 0};
  long long last_round_[2] = {-1, -1};
  int rounds_without_progress_ = 0;
};

}  // namespace perfsim::mpi

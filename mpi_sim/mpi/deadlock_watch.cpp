#include "mpi_sim/mpi/deadlock_watch.hpp"

namespace perfsim::mpi {
namespace {

// One baseline round and this many unchanged rounds after it make a deadlock.
constexpr int kRoundsWithoutProgress = 2;

}  // namespace

DeadlockWatch::DeadlockWatch(MPI_Comm world) {
  MPI_Comm_dup(world, &communicator_);
}

DeadlockWatch::~DeadlockWatch() {
  if (communicator_ != MPI_COMM_NULL)
    MPI_Comm_free(&communicator_);
}

DeadlockWatch::Verdict DeadlockWatch::poll(bool done, long long completed_reductions) {
  if (request_ == MPI_REQUEST_NULL) {
    send_[0] = completed_reductions;
    send_[1] = done ? 0 : 1;
    MPI_Iallreduce(send_, receive_, 2, MPI_LONG_LONG, MPI_SUM, communicator_, &request_);
  }
  int finished = 0;
  MPI_Test(&request_, &finished, MPI_STATUS_IGNORE);
  if (!finished)
    return Verdict::kWaiting;
  const bool progressed = receive_[0] != last_round_[0];
  last_round_[0] = receive_[0];
  last_round_[1] = receive_[1];
  if (receive_[1] == 0)
    return Verdict::kAllDone;
  rounds_without_progress_ = progressed ? 0 : rounds_without_progress_ + 1;
  return rounds_without_progress_ >= kRoundsWithoutProgress ? Verdict::kDeadlock
                                                            : Verdict::kProgress;
}

}  // namespace perfsim::mpi
